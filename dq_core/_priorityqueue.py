"""PriorityQueue: a thread-safe drop-in for ``queue.PriorityQueue``, much faster.

Same constructor, methods, attributes, blocking and exception semantics as
the standard library's of Python 3.13, on every supported Python; it is a
``queue.PriorityQueue`` (``isinstance`` and type checkers agree), but none
of the standard library's code runs on it.  The uncontended paths
(``put``, ``get`` and their ``_nowait`` forms) run in ``QueueCore``,
compiled or pure, which holds the lock: taking a Python lock with ``with``
costs more than the whole compiled put.  The ordering is heapq's own
algorithm (``ItemHeap``), so items come out in exactly the stdlib's order.
This module adds what is shared by both implementations: waiting,
``task_done``/``join``, ``shutdown`` and the extras (``peek``, batches,
``clear``).
"""

from __future__ import annotations

import reprlib
import types
from time import monotonic
from typing import TYPE_CHECKING, Any, Generic, Iterable, NoReturn, Optional

from ._convert import to_count
from ._exceptions import SHUTDOWN_PUT, Empty, Full, ShutDown
from ._final import refuse_storage_hooks
from ._queueprotocol import QueueProtocol
from ._queuerepr import head_snapshot
from ._validate import check_timeout
from ._waiting import notify_all, wait

if TYPE_CHECKING:
    from ._itemheapcore_py import T
    from ._queuecore_py import QueueCore

    _Core = QueueCore
else:
    from typing import TypeVar

    T = TypeVar("T")
    _Core = Generic  # dq_core._assemble adds an implementation's QueueCore

__all__ = ["PriorityQueue"]


# queue.Queue's storage hooks: PriorityQueue never calls them.
@refuse_storage_hooks(
    "dq_core.PriorityQueue", "queue.Queue", ("_init", "_qsize", "_put", "_get"), "put() and get()"
)
class PriorityQueue(QueueProtocol, _Core[T]):
    """Thread-safe priority queue: lowest item first, by the items' own ``<``.

    A drop-in for :class:`queue.PriorityQueue` (typically of
    ``(priority, data)`` tuples) with the same blocking, ``task_done``/``join``
    and ``shutdown`` semantics and exceptions; ``isinstance(q,
    queue.PriorityQueue)`` holds.  As the standard library's, it has no
    ``len()`` and is always true.  ``q.queue`` is a live read-only view of
    the heap list (``q.queue[0]`` peeks in O(1)); ``peek()``, ``put_many()``,
    ``get_many()`` and ``clear()`` are extras.  A comparison that raises
    propagates to the caller and leaves the queue as it was; calling into
    the queue from a comparison raises ``RuntimeError`` instead of
    deadlocking.  Copying and pickling raise ``TypeError`` (it owns a lock
    and waiting threads).

    >>> q = PriorityQueue()
    >>> q.put((2, "b")); q.put((1, "a"))
    >>> q.queue[0]
    (1, 'a')
    >>> q.get()
    (1, 'a')
    """

    __slots__ = ()
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(
            f"cannot pickle or copy {type(self).__name__!r} object: "
            "it owns a lock and the threads waiting on it"
        )

    def __reduce__(self) -> NoReturn:
        self.__reduce_ex__(2)

    def peek(self) -> T:
        """Return the lowest item without removing it; ``Empty`` if there is none.  O(1)."""
        try:
            return self._heap.peek()
        except IndexError:
            raise Empty from None

    # Called by QueueCore with the lock held, when put or get cannot finish
    # at once (QueueProtocol._wait_for_room is the wait for room).

    def _held(self) -> int:
        return len(self._heap)

    def _wait_for_item(self, block: bool, timeout: Optional[float]) -> None:
        heap = self._heap
        self._check_drained()
        if not block:
            if not heap:
                raise Empty
        elif timeout is None:
            while not heap:
                wait(self, self._getters, None)
                self._check_drained()
        else:
            end = monotonic() + check_timeout(timeout)
            while not heap:
                remaining = end - monotonic()
                if remaining <= 0.0:
                    raise Empty
                wait(self, self._getters, remaining)
                self._check_drained()

    # -- batches ---------------------------------------------------------------

    def put_many(self, items: Iterable[T]) -> None:
        """Put every item, in order, under one lock acquisition.  O(k log n).

        Never blocks: with ``maxsize`` set and not room for all of them,
        raises ``Full`` and puts none.  If a comparison raises, the items
        before the one that failed stay queued.
        """
        batch = list(items)
        self._lock()
        try:
            if self.is_shutdown:
                raise ShutDown(SHUTDOWN_PUT)
            heap = self._heap
            if batch and 0 < self.maxsize <= len(heap) + len(batch) - 1:
                raise Full  # the last put_nowait would find the queue full
            getters = self._getters
            for item in batch:
                heap.push(item)
                self.unfinished_tasks += 1
                if getters:
                    getters.popleft().release()
        finally:
            self._unlock()

    def get_many(self, max_items: Optional[int] = None) -> list[T]:
        """Remove and return up to ``max_items`` items (all if None), lowest first.  O(k log n).

        Never blocks: returns what is there, possibly nothing.  Once shut down
        and empty, raises ``ShutDown``.  If a comparison raises, the items
        taken before it are returned and the queue is left as it was before
        the failing step, so the next call meets the exception; a failure
        on the first item raises at once.  Nothing is lost either way.
        """
        limit = None if max_items is None else to_count(max_items, "max_items")
        self._lock()
        try:
            heap = self._heap
            self._check_drained()
            k = len(heap) if limit is None else min(limit, len(heap))
            out: list[T] = []
            try:
                for _ in range(k):  # one by one: a raising comparison loses nothing
                    out.append(heap.pop())
            except Exception:
                if not out:
                    raise
            putters = self._putters
            for _ in range(min(len(out), len(putters))):
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
        self._shut_down(immediate)

    def _on_shutdown(self, immediate: bool) -> object:
        return self._drop_all() if immediate else None

    def clear(self) -> None:
        """Remove every item, counting each as done (``task_done``).  O(n)."""
        self._lock()
        try:
            dropped = self._drop_all()
            notify_all(self._putters)
        finally:
            self._unlock()
        del dropped  # item finalisers run outside the lock

    def _drop_all(self) -> list[T]:
        # With the lock held: empty the heap, counting each item as done.
        dropped = self._heap.clear()
        self.unfinished_tasks = max(0, self.unfinished_tasks - len(dropped))
        if not self.unfinished_tasks:
            notify_all(self._joiners)
        return dropped

    def __repr__(self) -> str:
        n, head = head_snapshot(self, lambda heap: heap.peek())
        if not n:
            return f"<{type(self).__name__} len=0 maxsize={self.maxsize}>"
        return f"<{type(self).__name__} len={n} maxsize={self.maxsize} next={reprlib.repr(head)}>"
