"""ItemHeap: the pure-Python twin of the compiled ``dq_core._itemheapcore``.

``ItemHeap`` runs heapq's algorithm over the items themselves (ordered by
their own ``<``): the heap under ``dq_core.PriorityQueue`` (``_queuecore_py``)
and ``dq_core.aio.PriorityQueue`` (``_aioqueuecore_py``).

>>> h = ItemHeap()
>>> for item in [(2, "b"), (1, "z"), (2, "a")]:
...     h.push(item)
>>> [h.pop() for _ in range(len(h))]
[(1, 'z'), (2, 'a'), (2, 'b')]
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Generic, Mapping, NoReturn, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = types.MappingProxyType({})


__all__ = ["ItemHeap"]

# Items order by their own ``<``, as queue.PriorityQueue's items must.
T = TypeVar("T", bound="SupportsRichComparison")


class ItemHeap(Generic[T]):
    """Min-heap of items ordered by their own ``<``, exactly as heapq orders them.

    It runs heapq's algorithm step for step, so even items that tie, or
    that compare inconsistently, come out in the order ``heapq`` gives.  For
    tuples that start with an int or float that number is cached as a
    double and decides the comparison of two such tuples whenever it
    differs, skipping the rich comparison; when it ties, so is the second
    element when it is an exact int, float or str (its first 7 characters),
    and decides where it differs; past that, the elements are compared in
    C as long as both are exact ints, floats or strs, where the result is
    the tuples' own.  A comparison that raises
    leaves the heap exactly as it was; a comparison that re-enters the heap
    gets ``RuntimeError``.  Not thread-safe: ``QueueCore`` locks around it.
    Misused from several threads at once it still never corrupts memory:
    on a free-threaded build each method runs in a critical section on the
    heap, and a thread that enters while a comparison runs gets
    ``RuntimeError``, as re-entry does.
    """

    # This twin has no key cache and no C comparisons: a differing leading
    # number decides a tuple comparison without touching the rest, and the
    # compiled twin compares later elements in C only where that gives
    # ``<``'s own answer and runs no Python code, so results are the same.

    __slots__ = ("_items", "_busy", "__weakref__")

    def __init__(self) -> None:
        self._items: list[T] = []
        self._busy = False

    def _enter(self) -> None:
        if self._busy:
            raise RuntimeError("the heap was re-entered from a comparison of its items")
        self._busy = True

    def _lt(self, i: int, j: int, n: int) -> bool:
        items = self._items
        r = items[i] < items[j]  # type: ignore[operator]
        if len(items) != n:  # as heapq checks
            raise RuntimeError("the heap changed size during a comparison of its items")
        return bool(r)

    def _sift_up(self, pos: int, start: int, moves: list[int]) -> None:
        # Bubble the item at pos up towards the root, no higher than start
        # (heapq's _siftdown).
        items = self._items
        n = len(items)
        while pos > start:
            parent = (pos - 1) >> 1
            if not self._lt(pos, parent, n):
                break
            items[pos], items[parent] = items[parent], items[pos]
            moves += (pos, parent)
            pos = parent

    def _sift_down(self, pos: int, moves: list[int]) -> None:
        # Move the smaller child up until pos is a leaf, then sift the
        # displaced item back up (heapq's _siftup).
        items = self._items
        end = len(items)
        start = pos
        limit = end >> 1
        while pos < limit:
            child = 2 * pos + 1
            if child + 1 < end and not self._lt(child, child + 1, end):
                child += 1
            items[pos], items[child] = items[child], items[pos]
            moves += (pos, child)
            pos = child
        self._sift_up(pos, start, moves)

    def _undo(self, moves: list[int]) -> None:
        items = self._items
        for m in range(len(moves) - 2, -1, -2):
            i, j = moves[m], moves[m + 1]
            items[i], items[j] = items[j], items[i]

    def push(self, item: T) -> None:
        """Add ``item``.  O(log n) comparisons."""
        self._enter()
        try:
            items = self._items
            n = len(items)
            items.append(item)
            moves: list[int] = []
            try:
                self._sift_up(n, 0, moves)
            except BaseException:
                if len(items) == n + 1:
                    self._undo(moves)
                    del items[n]
                raise  # else changed under a comparison: keep what is there
        finally:
            self._busy = False

    def pop(self) -> T:
        """Remove and return the smallest item.  O(log n) comparisons.

        Raises ``IndexError`` when the heap is empty.
        """
        items = self._items
        if not items:
            raise IndexError("pop from an empty heap")
        self._enter()
        try:
            last = items.pop()
            if not items:
                return last
            top = items[0]
            items[0] = last
            n = len(items)
            moves: list[int] = []
            try:
                self._sift_down(0, moves)
            except BaseException:
                if len(items) == n:
                    self._undo(moves)
                    items[0] = top
                    items.append(last)
                raise  # else changed under a comparison: keep what is there
            return top
        finally:
            self._busy = False

    def peek(self) -> T:
        """Return the smallest item without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._items:
            raise IndexError("peek at an empty heap")
        return self._items[0]

    def clear(self) -> list[T]:
        """Remove every item and return them, in heap order.  O(n)."""
        self._enter()
        try:
            items = self._items[:]
            del self._items[:]  # the one list for the heap's lifetime, as in C
            return items
        finally:
            self._busy = False

    def snapshot(self) -> list[T]:
        """A list of the items, in heap order.  O(n)."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} len={len(self._items)}>"

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    def _check(self) -> None:
        """Assert heap order (by ``<``) and the key cache."""
        assert not self._busy
        # Work on a copy: the comparisons below run the items' own code.
        items = list(self._items)
        for i in range(1, len(items)):
            assert not items[i] < items[(i - 1) >> 1], f"heap order broken at {i}"  # type: ignore[operator]
