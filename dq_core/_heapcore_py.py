"""Keyed binary min-heap: the pure-Python twin of the compiled ``dq_core._heapcore``.

Both implementations issue handles alike (container id, generation and
slot: ``cid << 44 | gen << 24 | slot`` while they fit, ``dq_core._handles``), give the same results and raise the same errors; only
speed differs.  This one keeps ``(key, seq, slot)``
tuples in a :mod:`heapq` list, payloads in a list by slot, and deletes
lazily: an entry is live while it is the very tuple recorded for its slot.
Dead entries are dropped when they reach the top and purged wholesale once
they outnumber the live ones.
"""

from __future__ import annotations

import types
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any, Generic, Iterable, Mapping, TypeVar

from ._convert import MAX_EXACT_INT, keys_of, to_count, to_real
from ._final import refuse_subclassing
from ._handles import (
    NIL,
    RESET_MIN_SLOTS,
    Handles,
    check_table,
    new_cid,
    stale_message,
    top_cid,
)
from ._heapstate import SEQ_SPAN, STATE_VERSION, check_state
from ._pickling import copied_by_state
from ._signature import InitSignature

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = types.MappingProxyType({})


__all__ = ["Heap", "adopt_methods"]

C = TypeVar("C", bound=type)


def adopt_methods(cls: C) -> C:
    """Give ``cls`` a method of its own for each one it inherits from a compiled core; return it.

    CPython's specialised call of a C method (``q.put_nowait(x)``) wants the
    instance's type to be exactly the method's class, so a public class that
    extends a compiled core would take the generic, slower call for every
    inherited method.  Its own copy (the same C function, now of ``cls``)
    takes the specialised one.  Methods ``cls`` defines itself, dunders and
    what is not a core's are left alone; the pure twins' methods are Python
    functions, which need nothing.
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, not {type(cls).__name__!r}")
    return cls


T = TypeVar("T")
Entry = tuple[float, int, int]  # (key, seq, slot)

_NEG_LIM = -MAX_EXACT_INT
_REENTERED = "the heap was re-entered (from a finaliser) while it was being changed"
_FULL = "a Heap holds at most 2**31 - 1 items"


@copied_by_state(
    copy_doc="A new heap with the same items (not copied) and handles.  O(n).",
    deepcopy_doc="A new heap with copies of the items, and the same handles.  O(n).",
)
class Heap(Generic[T]):
    """Min-heap of items keyed by real-number priorities.

    Lowest priority first, first-in first-out among equal priorities; items
    are never compared.  ``push`` returns a handle (an int) that ``update``,
    ``remove`` and ``priority`` accept until the item leaves the heap.

    Not thread-safe.  Priorities' ``__float__``/``__index__`` and payloads'
    ``__del__`` may use the heap; code that re-enters it while it is being
    changed (a garbage-collector finaliser) gets ``RuntimeError``.  Heap
    cannot be subclassed.

    >>> h = Heap()
    >>> job = h.push(2, "write")
    >>> _ = h.push(1, "read")
    >>> h.update(job, 0)
    >>> h.pop(), h.pop()
    ('write', 'read')
    """

    __slots__ = ("_heap", "_entries", "_items", "_t", "_seq", "_dead", "_busy", "__weakref__")
    if not TYPE_CHECKING:  # same alias type as the compiled class's
        __class_getitem__ = classmethod(types.GenericAlias)
        # __new__ takes any arguments, for __init__ to refuse them
        __signature__ = InitSignature()

    _heap: list[Entry]  # live and dead entries
    _entries: list[Entry | None]  # live entry by slot
    _items: list[Any]  # payload by slot
    _t: Handles  # the handle table
    _seq: int  # next insertion sequence number
    _dead: int  # dead entries still in _heap
    _busy: bool  # an operation is changing the heap: refuse re-entry

    def __new__(cls, /, *args: object, **kwargs: object) -> Heap[T]:
        # An empty heap, as the compiled twin's: usable even if __init__
        # never runs (copy, pickle).
        self = super().__new__(cls)
        self._busy = False
        self._seq = 0
        self._t = Handles(new_cid())
        self._reset_slots(0)
        return self

    def __init__(self, /) -> None:
        """Initialize self.  See help(type(self)) for accurate signature."""
        # __new__ did it all; a second call changes nothing.

    __init_subclass__ = refuse_subclassing("Heap")

    # -- re-entry guard -----------------------------------------------------

    def _enter(self) -> None:
        # Any allocation can run a finaliser (and so any code) in the middle
        # of an operation; it must not see or change a half-updated heap.
        if self._busy:
            raise RuntimeError(_REENTERED)
        self._busy = True

    def _idle(self) -> None:
        if self._busy:
            raise RuntimeError(_REENTERED)

    # -- slot table ---------------------------------------------------------

    def _reset_slots(self, epoch: int) -> None:
        self._heap = []
        self._entries = []
        self._items = []
        self._t = Handles(self._t.cid, epoch)
        self._dead = 0

    def _take_slot(self, key: float, seq: int, item: Any) -> Entry:
        """Hold a slot for ``item`` keyed ``(key, seq)``; return its entry."""
        slot = self._t.take(_FULL)
        entry = (key, seq, slot)
        if slot == len(self._entries):  # made afresh
            self._entries.append(entry)
            self._items.append(item)
        else:
            self._entries[slot] = entry
            self._items[slot] = item
        return entry

    def _on_empty(self) -> None:
        epoch = self._t.spent()
        if epoch != NIL:
            self._reset_slots(epoch)
            return
        self._heap = []
        self._dead = 0

    def _slot_of(self, handle: object) -> int:
        slot = self._t.find(handle)
        if slot == NIL:
            raise KeyError(stale_message(handle, "heap"))
        return slot

    def _kill(self, slot: int) -> Any:
        """Unlink the live entry in ``slot``; return its item to the caller."""
        # The caller holds the last reference to the item: no __del__ runs
        # while the tables are in flux.
        items = self._items
        item = items[slot]
        items[slot] = None
        self._entries[slot] = None
        self._t.release(slot)
        self._dead += 1
        return item

    def _top(self) -> Entry:
        heap = self._heap
        entries = self._entries
        top = heap[0]
        while entries[top[2]] is not top:
            heappop(heap)
            self._dead -= 1
            top = heap[0]
        return top

    def _pop_entry(self) -> tuple[float, Any]:
        heap = self._heap
        entries = self._entries
        try:
            entry = heappop(heap)
            while entries[entry[2]] is not entry:
                self._dead -= 1
                entry = heappop(heap)
        except IndexError:
            raise IndexError("pop from an empty heap") from None
        slot = entry[2]
        items = self._items
        item = items[slot]
        items[slot] = None
        entries[slot] = None
        self._t.release(slot)
        if len(heap) == self._dead:
            self._on_empty()
        return entry[0], item

    # -- public API ---------------------------------------------------------

    def push(self, /, priority: float, item: T) -> int:
        """Add ``item`` with ``priority`` and return its handle.  O(log n).

        >>> h = Heap()
        >>> job = h.push(1.5, "a")
        >>> h.priority(job)
        1.5
        """
        tp = type(priority)
        if tp is float and priority == priority:
            key = priority
        elif tp is int and _NEG_LIM <= priority <= MAX_EXACT_INT:
            key = float(priority)
        else:
            key = to_real(priority, "priority")
        if self._busy:
            raise RuntimeError(_REENTERED)
        self._busy = True
        try:
            seq = self._seq
            if seq == SEQ_SPAN:
                seq = self._renumber()
            self._seq = seq + 1
            t = self._t
            slot = t.take(_FULL)
            entries = self._entries
            entry = (key, seq, slot)
            if slot == len(entries):  # _take_slot inlined: the common case
                entries.append(entry)
                self._items.append(item)
            else:
                entries[slot] = entry
                self._items[slot] = item
            heappush(self._heap, entry)
        finally:
            self._busy = False
        return t.handles[slot]

    def push_many(self, /, priorities: Iterable[float], items: Iterable[T]) -> None:
        """Add every item with its priority, in order.  O(n + k) when empty.

        ``priorities`` is a sequence, iterable or 1-D buffer of numbers
        (``array('d')``, a numpy array).  A bad priority or a length mismatch
        raises ``ValueError``/``TypeError`` and pushes nothing.

        >>> h = Heap()
        >>> h.push_many([3, 1, 2], "cab")
        >>> h.pop_many(3)
        ['a', 'b', 'c']
        """
        # snapshots: nothing the caller holds is read once the heap changes
        values = list(items)
        keys = keys_of(priorities, "priorities")
        if len(keys) != len(values):
            raise ValueError(f"priorities and items differ in length ({len(keys)} != {len(values)})")
        self._enter()
        try:
            heap = self._heap
            take = self._take_slot
            seq = self._seq
            bulk = len(keys) >= len(heap) - self._dead
            if len(keys) <= SEQ_SPAN - seq:
                add = heap.append if bulk else lambda e: heappush(heap, e)
                for key, item in zip(keys, values):
                    add(take(key, seq, item))
                    seq += 1
                self._seq = seq
            else:  # the counter runs out on the way: numbered afresh there
                for key, item in zip(keys, values):
                    if seq == SEQ_SPAN:
                        self._seq = seq
                        seq = self._renumber()
                        heap = self._heap
                    entry = take(key, seq, item)
                    if bulk:
                        heap.append(entry)
                    else:
                        heappush(heap, entry)
                    seq += 1
                    self._seq = seq
            if bulk:
                heapify(heap)
        finally:
            self._busy = False

    def pop(self, /) -> T:
        """Remove and return the item with the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        if self._busy:
            raise RuntimeError(_REENTERED)
        self._busy = True
        try:
            return self._pop_entry()[1]  # type: ignore[no-any-return]
        finally:
            self._busy = False

    def popitem(self, /) -> tuple[float, T]:
        """Remove and return ``(priority, item)`` for the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        self._enter()
        try:
            return self._pop_entry()
        finally:
            self._busy = False

    def pop_many(self, /, n: int) -> list[T]:
        """Remove and return up to ``n`` items, lowest priority first.  O(k log n).

        >>> h = Heap()
        >>> h.push_many([2, 1], ["b", "a"])
        >>> h.pop_many(5)
        ['a', 'b']
        """
        count = to_count(n, "n")
        self._enter()
        try:
            pop = self._pop_entry
            return [pop()[1] for _ in range(min(count, len(self._heap) - self._dead))]
        finally:
            self._busy = False

    def peek(self, /) -> T:
        """Return the item with the lowest priority without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        return self.peekitem()[1]

    def peekitem(self, /) -> tuple[float, T]:
        """Return ``(priority, item)`` for the lowest priority.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if self._busy:  # _enter, inlined: the delay queues peek on every call
            raise RuntimeError(_REENTERED)
        self._busy = True
        try:
            heap = self._heap
            if len(heap) == self._dead:
                raise IndexError("peek at an empty heap")
            top = heap[0]
            if self._entries[top[2]] is not top:
                top = self._top()  # drops dead entries above the top
            return top[0], self._items[top[2]]
        finally:
            self._busy = False

    def update(self, /, handle: int, priority: float) -> None:
        """Give the item behind ``handle`` a new priority.  O(log n).

        Acts as remove + push: the item goes behind equal priorities.
        Raises ``KeyError`` if the handle is stale or another container's.
        """
        key = to_real(priority, "priority")
        if self._busy:  # _enter, inlined: update is hot
            raise RuntimeError(_REENTERED)
        self._busy = True
        try:
            slot = self._t.find(handle)
            if slot == NIL:
                raise KeyError(stale_message(handle, "heap"))
            seq = self._seq
            if seq == SEQ_SPAN:
                seq = self._renumber()
            self._seq = seq + 1
            self._entries[slot] = entry = (key, seq, slot)
            heap = self._heap
            heappush(heap, entry)
            self._dead += 1
            if self._dead > len(heap) // 2 + RESET_MIN_SLOTS:
                self._purge()
        finally:
            self._busy = False

    def remove(self, /, handle: int) -> T:
        """Remove the item behind ``handle`` and return it.  O(log n).

        Raises ``KeyError`` if the handle is stale or another container's.
        """
        if self._busy:  # _enter, inlined: remove is hot
            raise RuntimeError(_REENTERED)
        self._busy = True
        try:
            t = self._t
            slot = t.find(handle)
            if slot == NIL:
                raise KeyError(stale_message(handle, "heap"))
            # _kill and Handles.release, inlined
            items = self._items
            item = items[slot]
            items[slot] = None
            self._entries[slot] = None
            t.links[slot] = t.free
            t.free = slot
            dead = self._dead = self._dead + 1
            n = len(self._heap)
            if n == dead:
                self._on_empty()
            elif dead > n // 2 + RESET_MIN_SLOTS:
                self._purge()
        finally:
            self._busy = False
        return item  # type: ignore[no-any-return]

    def _renumber(self) -> int:
        """Number the live items afresh, 0, 1, ... in pop order; return the next number.

        The compiled twin keeps a sequence number in 33 bits: both do this
        when the counter reaches SEQ_SPAN, so that their states stay equal.
        """
        entries = self._entries
        live = sorted(e for e in entries if e is not None)
        heap = []
        for i, (key, _, slot) in enumerate(live):
            entries[slot] = entry = (key, i, slot)
            heap.append(entry)  # in order: a heap already
        self._heap = heap
        self._dead = 0
        self._seq = len(live)
        return self._seq

    def _purge(self) -> None:
        entries = self._entries
        heap = [e for e in self._heap if entries[e[2]] is e]
        heapify(heap)
        self._heap = heap
        self._dead = 0

    def priority(self, /, handle: int) -> float:
        """Return the priority of the item behind ``handle``.  O(1).

        Raises ``KeyError`` if the handle is stale or another container's.
        """
        self._idle()
        entry = self._entries[self._slot_of(handle)]
        assert entry is not None
        return entry[0]

    def clear(self, /) -> None:
        """Remove every item; handles issued so far become stale.  O(n)."""
        self._enter()
        try:
            kill = self._kill
            old = [kill(slot) for slot, e in enumerate(self._entries) if e is not None]
            self._on_empty()
        finally:
            self._busy = False
        del old  # payload finalisers run only now, with the heap consistent

    def __len__(self, /) -> int:
        """Return len(self)."""
        return len(self._heap) - self._dead

    def __bool__(self, /) -> bool:
        """True if self else False"""
        return len(self._heap) > self._dead

    def __contains__(self, key: object, /) -> bool:
        self._idle()
        try:
            self._slot_of(key)
        except (KeyError, TypeError):
            return False
        return True

    # CPython's words for this slot (they vary by version), as the compiled
    # twin's slot wrapper shows them
    __contains__.__doc__ = list.__contains__.__doc__

    def __repr__(self, /) -> str:
        """Return repr(self)."""
        if not self:
            return f"<{type(self).__name__} len=0>"
        key = self.peekitem()[0]
        return f"<{type(self).__name__} len={len(self)} next_priority={key!r}>"

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self, /) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        self._enter()
        try:
            items = self._items
            live = sorted(e for e in self._entries if e is not None)
            return (
                STATE_VERSION,
                self._seq,
                self._t.epoch,
                list(self._t.tags),
                self._t.free_slots()[::-1],  # the next one to reuse last
                [(slot, key, seq, items[slot]) for key, seq, slot in live],
            )
        finally:
            self._busy = False

    def __setstate__(self, /, state: tuple[Any, ...]) -> None:
        """Load a state of ``__getstate__``; a bad one changes nothing."""
        seq, epoch, tags, free, live = check_state(state)
        if seq > SEQ_SPAN:  # numbered afresh, as the compiled twin does
            seq = len(live)
            live = [(slot, key, i, item) for i, (slot, key, _, item) in enumerate(live)]
        # Built aside: until the swap, a finaliser may still use this heap.
        n = len(tags)
        entries: list[Entry | None] = [None] * n
        items: list[Any] = [None] * n
        heap = []
        for slot, key, s, item in live:
            entries[slot] = entry = (key, s, slot)
            items[slot] = item
            heap.append(entry)
        # sorted by check_state: a valid heap as it stands
        # a new container: issues its own handles, above every id it copied
        table = Handles.load(tags, free[::-1], epoch, new_cid(top_cid(tags)))
        self._enter()
        try:
            old = self._items
            self._heap = heap
            self._entries = entries
            self._items = items
            self._t = table
            self._dead = 0
            self._seq = seq
        finally:
            self._busy = False
        del old  # the replaced payloads' finalisers run only now

    def _check(self, /) -> int:
        """Assert every invariant of the heap and its slot table; return its entries (live and dead)."""
        self._enter()
        try:
            self._check_tables()
            return len(self._heap)
        finally:
            self._busy = False

    def _check_tables(self) -> None:
        entries, items, t = self._entries, self._items, self._t
        n = len(entries)
        assert len(t.tags) == n == len(items)
        heap = self._heap
        for i in range(1, len(heap)):
            assert not heap[i] < heap[(i - 1) >> 1], f"heap order broken at {i}"
        in_heap = {id(e) for e in heap}
        live = {s for s in range(n) if entries[s] is not None}
        assert len(live) == len(heap) - self._dead
        for s in live:
            e = entries[s]
            assert e is not None and e[2] == s and id(e) in in_heap
            assert e[1] < self._seq
        check_table(t.tags, t.links, t.free, t.epoch, live, t.cid)
        for s in range(n):
            assert entries[s] is not None or items[s] is None
