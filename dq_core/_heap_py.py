"""Keyed binary min-heap: the pure-Python twin of the compiled ``dq_core._heap``.

Both implementations issue the same handles, give the same results and raise
the same errors; only speed differs.  This one keeps ``(key, seq, slot)``
tuples in a :mod:`heapq` list and deletes lazily: an entry is live while it
is the very tuple recorded for its slot.  Dead entries are dropped when they
reach the top and purged wholesale once they outnumber the live ones.
"""

from __future__ import annotations

import types
from heapq import heapify, heappop, heappush
from typing import Any, Generic, Iterable, TypeVar

from ._convert import MAX_EXACT_INT, keys_of, to_count, to_real

__all__ = ["Heap"]

T = TypeVar("T")

#: A slot whose generation reaches this is retired, so handles never repeat.
GEN_LIMIT = 0xFFFFFFFF
#: Below this many slots an emptied heap keeps its slot table.
RESET_MIN_SLOTS = 64
#: Version tag of the state shared by both implementations' pickles.
STATE_VERSION = 1

_NEG_LIM = -MAX_EXACT_INT


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
        "_heap", "_entries", "_items", "_gens", "_free", "_seq", "_len",
        "_epoch", "__weakref__",
    )
    __class_getitem__ = classmethod(types.GenericAlias)

    _heap: list[tuple[float, int, int]]
    _entries: list[tuple[float, int, int] | None]
    _items: list[Any]
    _gens: list[int]
    _free: list[int]
    _seq: int
    _len: int
    _epoch: int

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
        self._len = 0
        self._epoch = epoch

    def _take_slot(self) -> int:
        free = self._free
        if free:
            return free.pop()
        slot = len(self._items)
        self._items.append(None)
        self._entries.append(None)
        self._gens.append(self._epoch)
        return slot

    def _release(self, slot: int) -> None:
        # The caller holds its own reference to the item, so no __del__
        # runs while the tables are half-updated.
        self._items[slot] = None
        self._entries[slot] = None
        gen = self._gens[slot] + 1
        self._gens[slot] = gen
        if gen < GEN_LIMIT:
            self._free.append(slot)
        self._len -= 1
        if not self._len:
            self._on_empty()

    def _on_empty(self) -> None:
        gens = self._gens
        if len(gens) > RESET_MIN_SLOTS:
            epoch = max(gens) + 1
            # Every handle ever issued has a generation below the new epoch,
            # so slots made afresh cannot repeat one.
            if epoch < GEN_LIMIT // 2:
                self._reset_slots(epoch)
                return
        if self._heap:
            self._heap = []

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

    def _top(self) -> tuple[float, int, int]:
        heap = self._heap
        entries = self._entries
        top = heap[0]
        while entries[top[2]] is not top:
            heappop(heap)
            top = heap[0]
        return top

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
        free = self._free
        slot = free.pop() if free else self._take_slot()
        seq = self._seq
        self._seq = seq + 1
        self._items[slot] = item
        self._entries[slot] = entry = (key, seq, slot)
        heappush(self._heap, entry)
        self._len += 1
        return (self._gens[slot] << 32) | slot

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
        slots_items = self._items
        entries = self._entries
        seq = self._seq
        bulk = len(keys) >= self._len
        add = heap.append if bulk else lambda e: heappush(heap, e)
        for key, item in zip(keys, items):
            slot = take()
            slots_items[slot] = item
            entry = (key, seq, slot)
            entries[slot] = entry
            add(entry)
            seq += 1
        self._seq = seq
        self._len += len(keys)
        if bulk:
            heapify(heap)

    def pop(self) -> T:
        """Remove and return the item with the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._len:
            raise IndexError("pop from an empty heap")
        heap = self._heap
        entries = self._entries
        entry = heappop(heap)
        while entries[entry[2]] is not entry:
            entry = heappop(heap)
        slot = entry[2]
        items = self._items
        item = items[slot]
        # _release(slot), inlined: this is the hot path
        items[slot] = None
        entries[slot] = None
        gens = self._gens
        gen = gens[slot] = gens[slot] + 1
        if gen < GEN_LIMIT:
            self._free.append(slot)
        self._len -= 1
        if not self._len:
            self._on_empty()
        return item  # type: ignore[no-any-return]

    def popitem(self) -> tuple[float, T]:
        """Remove and return ``(priority, item)`` for the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._len:
            raise IndexError("pop from an empty heap")
        heap = self._heap
        entries = self._entries
        entry = heappop(heap)
        while entries[entry[2]] is not entry:
            entry = heappop(heap)
        key, _, slot = entry
        item = self._items[slot]
        self._release(slot)
        return key, item

    def pop_many(self, n: int) -> list[T]:
        """Remove and return up to ``n`` items, lowest priority first.  O(k log n).

        >>> h = Heap()
        >>> h.push_many([2, 1], ["b", "a"])
        >>> h.pop_many(5)
        ['a', 'b']
        """
        k = min(to_count(n, "n"), self._len)
        pop = self.pop
        return [pop() for _ in range(k)]

    def peek(self) -> T:
        """Return the item with the lowest priority without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._len:
            raise IndexError("peek at an empty heap")
        return self._items[self._top()[2]]  # type: ignore[no-any-return]

    def peekitem(self) -> tuple[float, T]:
        """Return ``(priority, item)`` for the lowest priority.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._len:
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
        entry = (key, seq, slot)
        self._entries[slot] = entry
        heap = self._heap
        heappush(heap, entry)
        if len(heap) > 2 * self._len + RESET_MIN_SLOTS:
            self._purge()

    def remove(self, handle: int) -> T:
        """Remove the item behind ``handle`` and return it.  O(log n).

        Raises ``KeyError`` if the handle is stale.
        """
        slot = self._slot_of(handle)
        item = self._items[slot]
        self._release(slot)
        if len(self._heap) > 2 * self._len + RESET_MIN_SLOTS:
            self._purge()
        return item  # type: ignore[no-any-return]

    def _purge(self) -> None:
        entries = self._entries
        heap = [e for e in self._heap if entries[e[2]] is e]
        heapify(heap)
        self._heap = heap

    def priority(self, handle: int) -> float:
        """Return the priority of the item behind ``handle``.  O(1).

        Raises ``KeyError`` if the handle is stale.
        """
        entry = self._entries[self._slot_of(handle)]
        assert entry is not None
        return entry[0]

    def clear(self) -> None:
        """Remove every item; handles issued so far become stale.  O(n)."""
        old = self._items
        gens = self._gens
        entries = self._entries
        for slot, entry in enumerate(entries):
            if entry is not None:
                entries[slot] = None
                gen = gens[slot] + 1
                gens[slot] = gen
                if gen < GEN_LIMIT:
                    self._free.append(slot)
        self._items = [None] * len(old)
        self._len = 0
        self._on_empty()
        del old  # payload finalisers run only now, with the heap consistent

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __contains__(self, handle: object) -> bool:
        try:
            self._slot_of(handle)
        except (KeyError, TypeError):
            return False
        return True

    def __repr__(self) -> str:
        if not self._len:
            return f"<{type(self).__name__} len=0>"
        return f"<{type(self).__name__} len={self._len} next_priority={self._top()[0]!r}>"

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        live = sorted(e for e in self._entries if e is not None)
        items = self._items
        return (
            STATE_VERSION,
            self._seq,
            self._epoch,
            list(self._gens),
            list(self._free),
            [(slot, key, seq, items[slot]) for key, seq, slot in live],
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        version, seq, epoch, gens, free, live = state
        if version != STATE_VERSION:
            raise ValueError(f"unsupported Heap state version {version!r}")
        n = len(gens)
        self._reset_slots(epoch)
        self._gens = list(gens)
        self._free = list(free)
        self._items = [None] * n
        self._entries = entries = [None] * n
        heap = []
        for slot, key, s, item in live:
            entry = (float(key), s, slot)
            entries[slot] = entry
            self._items[slot] = item
            heap.append(entry)
        heapify(heap)
        self._heap = heap
        self._len = len(heap)
        self._seq = seq

    def __reduce__(self) -> tuple[Any, ...]:
        from ._compat import restore

        return restore, ("Heap", self.__getstate__())

    def _check(self) -> None:
        """Assert every invariant of the heap and its slot table."""
        entries, items, gens, free = self._entries, self._items, self._gens, self._free
        n = len(entries)
        assert len(items) == n == len(gens)
        heap = self._heap
        for i in range(1, len(heap)):
            assert not heap[i] < heap[(i - 1) >> 1], f"heap order broken at {i}"
        in_heap = {id(e) for e in heap}
        live = [s for s in range(n) if entries[s] is not None]
        assert len(live) == self._len
        for s in live:
            e = entries[s]
            assert e is not None and e[2] == s and id(e) in in_heap
            assert e[1] < self._seq and self._epoch <= gens[s] < GEN_LIMIT
        free_set = set(free)
        assert len(free_set) == len(free)
        for s in range(n):
            if entries[s] is None:
                assert items[s] is None
                assert (s in free_set) == (gens[s] < GEN_LIMIT)
            else:
                assert s not in free_set
