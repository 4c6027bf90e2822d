"""Keyed binary min-heap: the pure-Python twin of the compiled ``dq_core._heap``.

Both implementations issue the same handles, give the same results and raise
the same errors; only speed differs.  This one keeps ``(key, seq, slot)``
tuples in a :mod:`heapq` list, payloads in a list by slot, and deletes
lazily: an entry is live while it is the very tuple recorded for its slot.
Dead entries are dropped when they reach the top and purged wholesale once
they outnumber the live ones.
"""

from __future__ import annotations

import types
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any, Generic, Iterable, TypeVar

from ._convert import MAX_EXACT_INT, keys_of, to_count, to_real

__all__ = ["Heap"]

T = TypeVar("T")
Entry = tuple[float, int, int]  # (key, seq, slot)

#: A slot whose generation reaches this is retired, so handles never repeat.
GEN_LIMIT = 0xFFFFFFFF
#: Below this many slots an emptied heap keeps its slot table.
RESET_MIN_SLOTS = 64
#: Version tag of the state shared by both implementations' pickles.
STATE_VERSION = 1

_NEG_LIM = -MAX_EXACT_INT


def check_state(state: Any) -> tuple[Any, ...]:
    """Validate a pickled Heap state (both implementations load through this)."""
    try:
        version, seq, epoch, gens, free, live = state
    except (TypeError, ValueError):
        raise ValueError("invalid Heap state") from None
    if version != STATE_VERSION:
        raise ValueError(f"unsupported Heap state version {version!r}")
    n = len(gens)
    slots = list(free) + [entry[0] for entry in live]
    if (
        not all(type(g) is int and 0 <= g <= GEN_LIMIT for g in gens)
        or not all(type(s) is int and 0 <= s < n for s in slots)
        or len(set(slots)) != len(slots)
        or not all(type(e[2]) is int and 0 <= e[2] < seq for e in live)
        or not (type(seq) is int and 0 <= seq < 2**64)
        or not (type(epoch) is int and 0 <= epoch < GEN_LIMIT)
        or n >= 2**32
    ):
        raise ValueError("invalid Heap state")
    return version, seq, epoch, gens, free, live


class Heap(Generic[T]):
    """Binary min-heap of items keyed by real-number priorities.

    Lowest priority first, first-in first-out among equal priorities; items
    are never compared.  ``push`` returns a handle (an int) that ``update``,
    ``remove`` and ``priority`` accept until the item leaves the heap.

    >>> h = Heap()
    >>> job = h.push(2, "write")
    >>> _ = h.push(1, "read")
    >>> h.update(job, 0)
    >>> h.pop(), h.pop()
    ('write', 'read')
    """

    __slots__ = (
        "_heap", "_entries", "_items", "_gens", "_free", "_seq", "_dead",
        "_epoch", "__weakref__",
    )
    if not TYPE_CHECKING:  # same alias type as the compiled class's
        __class_getitem__ = classmethod(types.GenericAlias)

    _heap: list[Entry]  # live and dead entries
    _entries: list[Entry | None]  # live entry by slot
    _items: list[Any]  # payload by slot
    _gens: list[int]  # generation of the slot's latest occupant
    _free: list[int]  # stack of free slots
    _seq: int  # next insertion sequence number
    _dead: int  # dead entries still in _heap
    _epoch: int  # generation of slots made afresh

    def __init__(self) -> None:
        self._reset_slots(0)
        self._seq = 0

    # -- slot table ---------------------------------------------------------

    def _reset_slots(self, epoch: int) -> None:
        self._heap = []
        self._entries = []
        self._items = []
        self._gens = []
        self._free = []
        self._dead = 0
        self._epoch = epoch

    def _take_slot(self) -> tuple[int, int]:
        """Return a slot and its new generation."""
        # A reused slot moves to the next generation, so handles of its
        # earlier occupants go stale; at GEN_LIMIT it is retired for good.
        free = self._free
        gens = self._gens
        while free:
            slot = free.pop()
            gen = gens[slot] + 1
            gens[slot] = gen
            if gen < GEN_LIMIT:
                return slot, gen
        slot = len(gens)
        self._entries.append(None)
        self._items.append(None)
        gens.append(self._epoch)
        return slot, self._epoch

    def _on_empty(self) -> None:
        gens = self._gens
        if len(gens) > RESET_MIN_SLOTS:
            epoch = max(gens) + 1
            # Every handle ever issued has a generation below the new epoch,
            # so slots made afresh cannot repeat one.
            if epoch < GEN_LIMIT // 2:
                self._reset_slots(epoch)
                return
        self._heap = []
        self._dead = 0

    def _slot_of(self, handle: object) -> int:
        if not isinstance(handle, int):
            raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
        slot = handle & 0xFFFFFFFF
        if (
            handle < 0
            or slot >= len(self._entries)
            or self._entries[slot] is None
            or self._gens[slot] != handle >> 32
        ):
            raise KeyError(handle)
        return slot

    def _kill(self, slot: int) -> Any:
        """Unlink the live entry in ``slot``; return its item to the caller."""
        # The caller holds the last reference to the item: no __del__ runs
        # while the tables are in flux.
        items = self._items
        item = items[slot]
        items[slot] = None
        self._entries[slot] = None
        self._free.append(slot)
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
        self._free.append(slot)
        if len(heap) == self._dead:
            self._on_empty()
        return entry[0], item

    # -- public API ---------------------------------------------------------

    def push(self, priority: float, item: T) -> int:
        """Add ``item`` with ``priority`` and return its handle.  O(log n).

        >>> h = Heap()
        >>> h.push(1.5, "a")
        0
        """
        tp = type(priority)
        if tp is float and priority == priority:
            key = priority
        elif tp is int and _NEG_LIM <= priority <= MAX_EXACT_INT:
            key = float(priority)
        else:
            key = to_real(priority, "priority")
        seq = self._seq
        self._seq = seq + 1
        entries = self._entries
        if self._free:
            slot, gen = self._take_slot()
            self._items[slot] = item
            entries[slot] = entry = (key, seq, slot)
        else:  # _take_slot() for a fresh slot, inlined: the common case
            slot = len(entries)
            entries.append(entry := (key, seq, slot))
            self._items.append(item)
            gen = self._epoch
            self._gens.append(gen)
        heappush(self._heap, entry)
        return (gen << 32) | slot

    def push_many(self, priorities: Iterable[float], items: Iterable[T]) -> None:
        """Add every item with its priority, in order.  O(n + k) when empty.

        ``priorities`` is a sequence, iterable or 1-D buffer of numbers
        (``array('d')``, a numpy array).  A bad priority or a length mismatch
        raises ``ValueError``/``TypeError`` and pushes nothing.

        >>> h = Heap()
        >>> h.push_many([3, 1, 2], "cab")
        >>> h.pop_many(3)
        ['a', 'b', 'c']
        """
        if not isinstance(items, (list, tuple)):
            items = list(items)
        keys = keys_of(priorities, "priorities")
        if len(keys) != len(items):
            raise ValueError(
                f"priorities and items differ in length ({len(keys)} != {len(items)})"
            )
        heap = self._heap
        take = self._take_slot
        entries = self._entries
        slot_items = self._items
        seq = self._seq
        bulk = len(keys) >= len(heap) - self._dead
        add = heap.append if bulk else lambda e: heappush(heap, e)
        for key, item in zip(keys, items):
            slot = take()[0]
            slot_items[slot] = item
            entries[slot] = entry = (key, seq, slot)
            add(entry)
            seq += 1
        self._seq = seq
        if bulk:
            heapify(heap)

    def pop(self) -> T:
        """Remove and return the item with the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        heap = self._heap
        entries = self._entries
        try:
            entry = heappop(heap)
            while entries[entry[2]] is not entry:
                self._dead -= 1
                entry = heappop(heap)
        except IndexError:
            raise IndexError("pop from an empty heap") from None
        # the rest of _pop_entry(), inlined: this is the hot path
        slot = entry[2]
        items = self._items
        item = items[slot]
        items[slot] = None
        entries[slot] = None
        self._free.append(slot)
        if len(heap) == self._dead:
            self._on_empty()
        return item  # type: ignore[no-any-return]

    def popitem(self) -> tuple[float, T]:
        """Remove and return ``(priority, item)`` for the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        return self._pop_entry()

    def pop_many(self, n: int) -> list[T]:
        """Remove and return up to ``n`` items, lowest priority first.  O(k log n).

        >>> h = Heap()
        >>> h.push_many([2, 1], ["b", "a"])
        >>> h.pop_many(5)
        ['a', 'b']
        """
        k = min(to_count(n, "n"), len(self._heap) - self._dead)
        pop = self.pop
        return [pop() for _ in range(k)]

    def peek(self) -> T:
        """Return the item with the lowest priority without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if len(self._heap) == self._dead:
            raise IndexError("peek at an empty heap")
        return self._items[self._top()[2]]  # type: ignore[no-any-return]

    def peekitem(self) -> tuple[float, T]:
        """Return ``(priority, item)`` for the lowest priority.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if len(self._heap) == self._dead:
            raise IndexError("peek at an empty heap")
        key, _, slot = self._top()
        return key, self._items[slot]

    def update(self, handle: int, priority: float) -> None:
        """Give the item behind ``handle`` a new priority.  O(log n).

        Acts as remove + push: the item goes behind equal priorities.
        Raises ``KeyError`` if the handle is stale.
        """
        key = to_real(priority, "priority")
        slot = self._slot_of(handle)
        seq = self._seq
        self._seq = seq + 1
        self._entries[slot] = entry = (key, seq, slot)
        heap = self._heap
        heappush(heap, entry)
        self._dead += 1
        if self._dead > len(heap) // 2 + RESET_MIN_SLOTS:
            self._purge()

    def remove(self, handle: int) -> T:
        """Remove the item behind ``handle`` and return it.  O(log n).

        Raises ``KeyError`` if the handle is stale.
        """
        item = self._kill(self._slot_of(handle))
        heap = self._heap
        if len(heap) == self._dead:
            self._on_empty()
        elif self._dead > len(heap) // 2 + RESET_MIN_SLOTS:
            self._purge()
        return item  # type: ignore[no-any-return]

    def _purge(self) -> None:
        entries = self._entries
        heap = [e for e in self._heap if entries[e[2]] is e]
        heapify(heap)
        self._heap = heap
        self._dead = 0

    def priority(self, handle: int) -> float:
        """Return the priority of the item behind ``handle``.  O(1).

        Raises ``KeyError`` if the handle is stale.
        """
        entry = self._entries[self._slot_of(handle)]
        assert entry is not None
        return entry[0]

    def clear(self) -> None:
        """Remove every item; handles issued so far become stale.  O(n)."""
        old = [self._kill(slot) for slot, e in enumerate(self._entries) if e is not None]
        self._on_empty()
        del old  # payload finalisers run only now, with the heap consistent

    def __len__(self) -> int:
        return len(self._heap) - self._dead

    def __bool__(self) -> bool:
        return len(self._heap) > self._dead

    def __contains__(self, handle: object) -> bool:
        try:
            self._slot_of(handle)
        except (KeyError, TypeError):
            return False
        return True

    def __repr__(self) -> str:
        n = len(self)
        if not n:
            return f"<{type(self).__name__} len=0>"
        return f"<{type(self).__name__} len={n} next_priority={self._top()[0]!r}>"

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        live = sorted(e for e in self._entries if e is not None)
        return (
            STATE_VERSION,
            self._seq,
            self._epoch,
            list(self._gens),
            list(self._free),
            [(slot, key, seq, self._items[slot]) for key, seq, slot in live],
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        version, seq, epoch, gens, free, live = check_state(state)
        self._reset_slots(epoch)
        self._gens = list(gens)
        self._free = list(free)
        entries: list[Entry | None] = [None] * len(gens)
        items: list[Any] = [None] * len(gens)
        heap = []
        for slot, key, s, item in live:
            entries[slot] = entry = (float(key), s, slot)
            items[slot] = item
            heap.append(entry)
        heapify(heap)  # already sorted: a valid heap as it stands
        self._entries = entries
        self._items = items
        self._heap = heap
        self._seq = seq

    def __reduce__(self) -> tuple[Any, ...]:
        from ._compat import restore

        return restore, ("Heap", self.__getstate__())

    def _check(self) -> None:
        """Assert every invariant of the heap and its slot table."""
        entries, items, gens, free = self._entries, self._items, self._gens, self._free
        n = len(entries)
        assert len(gens) == n == len(items)
        heap = self._heap
        for i in range(1, len(heap)):
            assert not heap[i] < heap[(i - 1) >> 1], f"heap order broken at {i}"
        in_heap = {id(e) for e in heap}
        live = [s for s in range(n) if entries[s] is not None]
        assert len(live) == len(heap) - self._dead
        for s in live:
            e = entries[s]
            assert e is not None and e[2] == s and id(e) in in_heap
            assert e[1] < self._seq and self._epoch <= gens[s] < GEN_LIMIT
        free_set = set(free)
        assert len(free_set) == len(free)
        for s in range(n):
            assert (entries[s] is None) == (s in free_set or gens[s] == GEN_LIMIT)
            assert entries[s] is not None or items[s] is None
            assert (s in free_set) <= (gens[s] < GEN_LIMIT)
