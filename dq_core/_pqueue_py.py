"""PriorityQueue's core: the pure-Python twin of the compiled ``dq_core._pqueue``.

``ItemHeap`` runs heapq's algorithm over the items themselves (ordered by
their own ``<``); ``QueueCore`` holds the lock and the uncontended put/get
paths of ``dq_core.PriorityQueue``.

>>> h = ItemHeap()
>>> for item in [(2, "b"), (1, "z"), (2, "a")]:
...     h.push(item)
>>> [h.pop() for _ in range(len(h))]
[(1, 'z'), (2, 'a'), (2, 'b')]
"""

from __future__ import annotations

import threading
import types
from collections import deque
from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar

from ._exceptions import Empty, Full, ShutDown
from ._waiting import OwnedLock

__all__ = ["ItemHeap", "QueueCore"]

T = TypeVar("T")


class ItemHeap(Generic[T]):
    """Min-heap of items ordered by their own ``<``, exactly as heapq orders them.

    It runs heapq's algorithm step for step, so even items that tie, or
    that compare inconsistently, come out in the order ``heapq`` gives.  For
    tuples that start with an int or float that number is cached as a
    double and decides the comparison of two such tuples whenever it
    differs, skipping the rich comparison.  A comparison that raises leaves
    the heap exactly as it was; a comparison that re-enters the heap gets
    ``RuntimeError``.
    """

    # This twin has no key cache: a differing leading number decides a
    # tuple comparison without touching the rest, so results are the same.

    __slots__ = ("_items", "_busy", "__weakref__")

    def __init__(self) -> None:
        self._items: list[T] = []
        self._busy = False

    def _enter(self) -> None:
        if self._busy:
            raise RuntimeError("the heap was re-entered from a comparison of its items")
        self._busy = True

    def _siftdown(self, start: int, pos: int, moves: list[int]) -> None:
        # heapq._siftdown: bubble the item at pos up towards start.
        items = self._items
        while pos > start:
            parent = (pos - 1) >> 1
            if not items[pos] < items[parent]:  # type: ignore[operator]
                break
            items[pos], items[parent] = items[parent], items[pos]
            moves += (pos, parent)
            pos = parent

    def _siftup(self, pos: int, moves: list[int]) -> None:
        # heapq._siftup: move the smaller child up until a leaf, then sift
        # the displaced item back up.
        items = self._items
        end = len(items)
        start = pos
        limit = end >> 1
        while pos < limit:
            child = 2 * pos + 1
            if child + 1 < end and not items[child] < items[child + 1]:  # type: ignore[operator]
                child += 1
            items[pos], items[child] = items[child], items[pos]
            moves += (pos, child)
            pos = child
        self._siftdown(start, pos, moves)

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
                self._siftdown(0, n, moves)
            except BaseException:
                self._undo(moves)
                del items[n]
                raise
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
            moves: list[int] = []
            try:
                self._siftup(0, moves)
            except BaseException:
                self._undo(moves)
                items[0] = top
                items.append(last)
                raise
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
            items = self._items
            self._items = []
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

    def _check(self) -> None:
        """Assert heap order (by ``<``) and the key cache."""
        items = self._items
        assert not self._busy
        for i in range(1, len(items)):
            assert not items[i] < items[(i - 1) >> 1], f"heap order broken at {i}"  # type: ignore[operator]


class QueueCore(OwnedLock, Generic[T]):
    """The lock, the heap and the uncontended put/get of PriorityQueue.

    Blocking waits, ``task_done``/``join`` and ``shutdown`` live in
    ``dq_core._queues``, shared by both implementations; they call back
    into ``_lock()``/``_unlock()`` and park on the waiter deques.
    """

    __slots__ = (
        "_heap", "_mutex", "_owner", "maxsize", "unfinished_tasks", "is_shutdown",
        "_getters", "_putters", "_joiners",
    )
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    maxsize: int
    unfinished_tasks: int
    is_shutdown: bool

    def __init__(self, maxsize: int = 0) -> None:
        self._heap: ItemHeap[T] = ItemHeap()
        self._mutex = threading.Lock()
        self._owner = 0
        # threads parked in get, put and join (see dq_core._waiting)
        self._getters: deque[Any] = deque()
        self._putters: deque[Any] = deque()
        self._joiners: deque[Any] = deque()
        self.maxsize = maxsize
        self.unfinished_tasks = 0
        self.is_shutdown = False

    # Hooks the shared layer (dq_core._queues) provides.
    def _wait_for_room(self, block: bool, timeout: Optional[float]) -> None:
        raise NotImplementedError

    def _wait_for_item(self, block: bool, timeout: Optional[float]) -> None:
        raise NotImplementedError

    def _add(self, item: T) -> None:
        # With the lock held: queue it, count it, wake one getter.
        self._heap.push(item)
        self.unfinished_tasks += 1
        if self._getters:
            self._getters.popleft().release()

    def _take(self) -> T:
        # With the lock held: unqueue the lowest item, wake one putter.
        item = self._heap.pop()
        if self._putters:
            self._putters.popleft().release()
        return item

    def qsize(self) -> int:
        """Return the approximate size of the queue (not reliable!).  O(1)."""
        return len(self._heap)

    def empty(self) -> bool:
        """Return True if the queue is empty (not reliable!).  O(1)."""
        return not self._heap

    def full(self) -> bool:
        """Return True if the queue is full (not reliable!).  O(1)."""
        return 0 < self.maxsize <= len(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def put(self, item: T, block: bool = True, timeout: Optional[float] = None) -> None:
        """Put ``item`` into the queue.  O(log n).

        With ``block`` true and ``timeout`` None, wait for a free slot; with a
        non-negative ``timeout``, wait at most that long and raise ``Full``;
        with ``block`` false, raise ``Full`` at once if there is no room.
        Raises ``ShutDown`` once the queue is shut down.
        """
        self._lock()
        try:
            if self.is_shutdown:
                raise ShutDown
            if self.maxsize > 0:
                self._wait_for_room(block, timeout)
            self._add(item)
        finally:
            self._unlock()

    def put_nowait(self, item: T) -> None:
        """Put ``item`` without blocking; ``Full`` if there is no room.  O(log n)."""
        self._lock()
        try:
            if self.is_shutdown:
                raise ShutDown
            if 0 < self.maxsize <= len(self._heap):
                raise Full
            self._add(item)
        finally:
            self._unlock()

    def get(self, block: bool = True, timeout: Optional[float] = None) -> T:
        """Remove and return the lowest item.  O(log n).

        With ``block`` true and ``timeout`` None, wait for an item; with a
        non-negative ``timeout``, wait at most that long and raise ``Empty``;
        with ``block`` false, raise ``Empty`` at once if there is none.
        Once shut down, raises ``ShutDown`` when the queue is empty.
        """
        self._lock()
        try:
            if not self._heap or (block and timeout is not None):
                self._wait_for_item(block, timeout)
            return self._take()
        finally:
            self._unlock()

    def get_nowait(self) -> T:
        """Remove and return the lowest item without blocking; ``Empty`` if none.  O(log n)."""
        self._lock()
        try:
            if not self._heap:
                if self.is_shutdown:
                    raise ShutDown
                raise Empty
            return self._take()
        finally:
            self._unlock()
