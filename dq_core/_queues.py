"""PriorityQueue: a thread-safe drop-in for ``queue.PriorityQueue``, much faster.

Same constructor, methods, attributes, blocking and exception semantics as
the standard library's of Python 3.13, on every supported Python.  The
uncontended paths (``put``, ``get`` and their ``_nowait`` forms) run in
``QueueCore``, compiled or pure, which holds the lock: taking a Python lock
with ``with`` costs more than the whole compiled put.  The ordering is
heapq's own algorithm (``ItemHeap``), so items come out in exactly the
stdlib's order.  This module adds what is shared by both implementations:
waiting, ``task_done``/``join``, ``shutdown`` and the batch methods.
"""

from __future__ import annotations

import reprlib
from time import monotonic
from typing import TYPE_CHECKING, Any, Iterable, Optional, TypeVar

from ._compat import core
from ._convert import to_count
from ._exceptions import Empty, Full, ShutDown
from ._waiting import Bounded, check_timeout, notify_all, wait

if TYPE_CHECKING:
    from ._pqueue_py import QueueCore

    _Base = QueueCore[Any]
else:
    QueueCore = core("_pqueue").QueueCore
    _Base = object

__all__ = ["PriorityQueue", "PriorityQueueMethods"]

T = TypeVar("T")


class PriorityQueueMethods(Bounded, _Base):
    """What PriorityQueue adds to either implementation's QueueCore."""

    __slots__ = ()

    @property
    def queue(self) -> list[Any]:
        """A read-only snapshot of the items, in heap order.  O(n)."""
        self._lock()
        try:
            return self._heap.snapshot()
        finally:
            self._unlock()

    # Called by QueueCore with the lock held, when get cannot finish at once;
    # Bounded._wait_for_room is its counterpart for put.

    def _wait_for_item(self, block: bool, timeout: Optional[float]) -> None:
        heap = self._heap
        if self.is_shutdown and not heap:
            raise ShutDown
        if not block:
            if not heap:
                raise Empty
        elif timeout is None:
            while not heap:
                wait(self, self._getters, None)
                if self.is_shutdown and not heap:
                    raise ShutDown
        else:
            check_timeout(timeout)
            end = monotonic() + timeout
            while not heap:
                remaining = end - monotonic()
                if remaining <= 0.0:
                    raise Empty
                wait(self, self._getters, remaining)
                if self.is_shutdown and not heap:
                    raise ShutDown

    # -- batches ---------------------------------------------------------------

    def put_many(self, items: Iterable[Any]) -> None:
        """Put every item, in order, under one lock acquisition.  O(k log n).

        Never blocks: with ``maxsize`` set and not room for all of them,
        raises ``Full`` and puts none.  If a comparison raises, the items
        before the one that failed stay queued.
        """
        batch = list(items)
        self._lock()
        try:
            if self.is_shutdown:
                raise ShutDown
            heap = self._heap
            if 0 < self.maxsize < len(heap) + len(batch):
                raise Full
            getters = self._getters
            for item in batch:
                heap.push(item)
                self.unfinished_tasks += 1
                if getters:
                    getters.popleft().release()
        finally:
            self._unlock()

    def get_many(self, max_items: Optional[int] = None) -> list[Any]:
        """Remove and return up to ``max_items`` items (all if None), lowest first.  O(k log n).

        Never blocks: returns what is there, possibly nothing.  Once shut down
        and empty, raises ``ShutDown``.
        """
        limit = None if max_items is None else to_count(max_items, "max_items")
        self._lock()
        try:
            heap = self._heap
            if self.is_shutdown and not heap:
                raise ShutDown
            k = len(heap) if limit is None else min(limit, len(heap))
            out = []
            for _ in range(k):  # one by one: a raising comparison loses nothing
                out.append(heap.pop())
            putters = self._putters
            for _ in range(min(k, len(putters))):
                putters.popleft().release()
            return out
        finally:
            self._unlock()

    # -- tasks and shutdown ------------------------------------------------------

    def task_done(self) -> None:
        """Mark one item taken by ``get`` as processed.  O(1).

        Raises ``ValueError`` if called more times than items were put.
        """
        self._lock()
        try:
            unfinished = self.unfinished_tasks - 1
            if unfinished <= 0:
                if unfinished < 0:
                    raise ValueError("task_done() called too many times")
                notify_all(self._joiners)
            self.unfinished_tasks = unfinished
        finally:
            self._unlock()

    def join(self) -> None:
        """Block until every item put has been marked done by ``task_done``."""
        self._lock()
        try:
            while self.unfinished_tasks:
                wait(self, self._joiners, None)
        finally:
            self._unlock()

    def shutdown(self, immediate: bool = False) -> None:
        """Shut the queue down: ``put`` raises ``ShutDown`` from now on.

        Blocked getters wake and raise ``ShutDown`` once the queue is empty.
        With ``immediate``, the items are dropped (each counted as done) and
        every getter raises ``ShutDown`` at once.
        """
        dropped: list[Any] = []
        self._lock()
        try:
            self.is_shutdown = True
            if immediate:
                dropped = self._heap.clear()
                self.unfinished_tasks = max(0, self.unfinished_tasks - len(dropped))
                notify_all(self._joiners)
            notify_all(self._getters)
            notify_all(self._putters)
        finally:
            self._unlock()
        del dropped  # item finalisers run outside the lock

    def clear(self) -> None:
        """Remove every item, counting each as done (``task_done``).  O(n)."""
        self._lock()
        try:
            dropped = self._heap.clear()
            self.unfinished_tasks = max(0, self.unfinished_tasks - len(dropped))
            if not self.unfinished_tasks:
                notify_all(self._joiners)
            notify_all(self._putters)
        finally:
            self._unlock()
        del dropped

    def __repr__(self) -> str:
        heap = self._heap
        if not heap:
            return f"<{type(self).__name__} len=0 maxsize={self.maxsize}>"
        return (f"<{type(self).__name__} len={len(heap)} maxsize={self.maxsize} "
                f"next={reprlib.repr(heap.peek())}>")


class PriorityQueue(PriorityQueueMethods, QueueCore[T]):
    """Thread-safe priority queue: lowest item first, by the items' own ``<``.

    A drop-in for :class:`queue.PriorityQueue` (typically of
    ``(priority, data)`` tuples) with the same blocking, ``task_done``/``join``
    and ``shutdown`` semantics and exceptions.  A comparison that raises
    propagates to the caller and leaves the queue as it was; calling into
    the queue from a comparison raises ``RuntimeError`` instead of
    deadlocking.

    >>> q = PriorityQueue()
    >>> q.put((2, "b")); q.put((1, "a"))
    >>> q.get()
    (1, 'a')
    """
