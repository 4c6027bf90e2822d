"""aio.PriorityQueue: a drop-in for ``asyncio.PriorityQueue``, on dq_core's compiled heap.

The semantics are those of ``asyncio/queues.py`` of Python 3.13, on every
supported Python: the same waiting (futures in deques, ``wakeup_next``),
the same cancellation (a cancelled ``get`` never swallows an item, a
cancelled ``put`` never inserts, and a woken waiter that is cancelled
passes its wake-up on), ``shutdown`` and ``join``.  The ordering is
heapq's own algorithm run by ``ItemHeap``, so items come out in exactly
the standard library's order; what is new is speed, the ``put_many`` /
``get_many`` extras, and a comparison that raises leaving the queue as it
was (heapq leaves the new item in).
"""

from __future__ import annotations

import asyncio
import sys
import types
from asyncio import QueueFull
from collections import deque
from typing import TYPE_CHECKING, Any, Iterable, Optional

from .._aiowaiting import QueueShutDown, queue_get, wakeup_all, wakeup_next
from .._convert import to_count
from .._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT
from .._final import refuse_storage_hooks
from ._base import LoopBound, park

if TYPE_CHECKING:
    from .._aioqueuecore_py import AioQueueCore as _Core
    from .._itemheapcore_py import T
else:
    from typing import TypeVar

    T = TypeVar("T")
    # The core (dq_core._aioqueuecore's AioQueueCore, compiled or pure, itself an
    # asyncio.PriorityQueue) is joined as a further base by dq_core._assemble.
    _Core = asyncio.PriorityQueue

__all__ = ["PriorityQueue"]


# asyncio.Queue's storage hooks: this queue never calls them.
@refuse_storage_hooks(
    "dq_core.aio.PriorityQueue", "asyncio.Queue", ("_init", "_put", "_get"), "put_nowait() and get_nowait()"
)
class PriorityQueue(LoopBound, _Core[T]):
    """A priority queue for coroutines: lowest item first, by the items' own ``<``.

    A drop-in for :class:`asyncio.PriorityQueue` of Python 3.13 (typically
    of ``(priority, data)`` tuples) on every supported Python, and an
    instance of it: ``put``/``get`` wait, the ``_nowait`` forms raise
    ``asyncio.QueueFull``/``asyncio.QueueEmpty``, ``task_done``/``join``,
    and ``shutdown(immediate=False)`` with ``QueueShutDown`` (asyncio's on
    3.13+, ``dq_core.aio.QueueShutDown`` before).  Cancelling a waiting
    ``get`` or ``put`` loses nothing and inserts nothing.  ``put_many`` and
    ``get_many`` are non-blocking extras.  A comparison that raises
    propagates and leaves the queue as it was; one that calls into the
    queue gets ``RuntimeError``.

    Not thread-safe, like asyncio's, except for ``put_threadsafe(item)``:
    other threads put with it, without waiting, and wake the loop only
    when a ``get`` waits.  The queue binds to the first loop it waits on,
    or that takes in items put from threads (and to the next such loop
    once that one is closed); copying and pickling raise ``TypeError``.

    >>> async def main():
    ...     q = PriorityQueue()
    ...     await q.put((2, "b")); q.put_nowait((1, "a"))
    ...     return [await q.get(), q.get_nowait()]
    >>> asyncio.run(main())
    [(1, 'a'), (2, 'b')]
    """

    # The heap, the waiter deques, the counters and the paths that never wait
    # (put_nowait, get_nowait, qsize, empty, full, task_done, and put and get
    # up to their first wait) are the core's.
    __slots__ = ()

    if not TYPE_CHECKING:  # asyncio's, not typing.Generic's (the pure core is one)
        __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # asyncio's put and put_nowait ask self.full(), and its full() asks
        # self.qsize(); the core's read the heap.  A subclass of a public
        # class (this face joined with a core) that overrides either gets
        # asyncio's paths, where it does not override them itself.
        if PriorityQueue in cls.__bases__:
            return  # a public class itself
        public: Any = next(c for c in cls.__mro__ if PriorityQueue in c.__bases__)
        if cls.qsize is not public.qsize and cls.full is public.full:
            cls.full = _full_asking_qsize  # type: ignore[method-assign]
        if cls.full is not public.full:
            if cls.put_nowait is public.put_nowait:
                cls.put_nowait = _put_nowait_asking_full  # type: ignore[method-assign]
            if cls.put is public.put:
                cls.put = PriorityQueue._wait_put  # type: ignore[method-assign, assignment]
            if cls.put_threadsafe is public.put_threadsafe:
                cls.put_threadsafe = _put_threadsafe_asking_full  # type: ignore[method-assign]

    @property
    def maxsize(self) -> int:
        """Number of items allowed in the queue (0 or less: no bound)."""
        return self._maxsize  # type: ignore[return-value]  # typed as asyncio's: any number works

    # -- put ------------------------------------------------------------------

    async def _wait_put(self, item: T) -> None:
        # put() once the queue was full: asyncio's wait for a free slot
        while self.full():
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_PUT)
            await park(self._get_loop(), self._putters, self._has_room)
        return self.put_nowait(item)

    def put_many(self, items: Iterable[T]) -> None:
        """Put every item, in order, without waiting.  O(k log n).

        With ``maxsize`` set and no room for all of them, raises
        ``QueueFull`` and puts none.  If a comparison raises, the items
        before the one that failed stay queued.
        """
        batch = list(items)
        if self._is_shutdown:
            raise QueueShutDown(SHUTDOWN_PUT)
        if not batch:
            return
        if 0 < self._maxsize <= sys.maxsize:
            inbox = self._inbox
            inbox._lock()  # as put_nowait: room taken against put_threadsafe, compared after
            try:
                if self._maxsize <= inbox.transit + len(self._heap) + len(inbox.items) + len(batch) - 1:
                    raise QueueFull  # the last put_nowait would find the queue full
                inbox.transit += len(batch)
            finally:
                inbox._unlock()
            self._push_all(batch, True)
        else:
            self._push_all(batch, False)

    def _push_all(self, batch: list[T], reserved: bool) -> None:
        # reserved: their room is counted in transit, given back item by item
        push = self._heap.push
        getters = self._getters
        inbox = self._inbox
        done = 0
        try:
            for item in batch:
                push(item)
                done += 1
                if reserved:
                    inbox.transit -= 1
                self._unfinished_tasks += 1
                if getters:
                    wakeup_next(getters)
        finally:
            if reserved:
                inbox.transit -= len(batch) - done  # not put: a comparison raised

    # -- get ------------------------------------------------------------------

    if sys.version_info >= (3, 12) and not TYPE_CHECKING:
        # a Python coroutine's result needs no StopIteration from 3.12 (see
        # dq_core._aiowaiting.queue_get; callgrind, 3.13, 4 + 4 tasks: 6,232
        # instructions per item against 6,869; 3.11: 5,497 against 4,662)
        get = queue_get

    async def _wait_get(self) -> T:
        # get() once the queue was empty: asyncio's wait for an item
        while self.empty():
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_GET)
            loop = self._get_loop()
            # the next put_threadsafe wakes the loop, unless one came meanwhile
            if self._inbox.listen():
                await park(loop, self._getters, self._has_item)
        return self.get_nowait()

    def _has_item(self) -> bool:
        return not self.empty()

    def get_many(self, max_items: Optional[int] = None) -> list[T]:
        """Remove and return up to ``max_items`` items (all if None), lowest first.  O(k log n).

        Never waits: returns what is there, possibly nothing.  Once shut
        down and empty, raises ``QueueShutDown``.  If a comparison raises,
        the items taken before it are returned and the queue keeps the rest,
        so the next call meets the exception; a failure on the first item
        raises at once.
        """
        limit = None if max_items is None else to_count(max_items, "max_items")
        heap = self._heap
        if self._inbox.items:
            self._take_in()
        if self._is_shutdown and not heap:
            raise QueueShutDown(SHUTDOWN_GET)
        k = len(heap) if limit is None else min(limit, len(heap))
        out: list[T] = []
        pop = self._heap.pop
        try:
            for _ in range(k):  # one by one: a raising comparison loses nothing
                out.append(pop())
        except Exception:
            if not out:
                raise
        putters = self._putters
        for _ in range(len(out)):
            if not wakeup_next(putters):
                break
        return out

    # -- tasks and shutdown -----------------------------------------------------

    async def join(self) -> None:
        """Wait until every item put has been taken and marked done by ``task_done``."""
        if self._inbox.items:
            self._take_in()  # items put from threads count too
        if self._unfinished_tasks > 0:
            joiner = self._get_loop().create_future()
            self._joiners.append(joiner)
            try:
                await joiner
            finally:
                try:
                    self._joiners.remove(joiner)
                except ValueError:  # woken: task_done or shutdown took it
                    pass

    def shutdown(self, immediate: bool = False) -> None:
        """Shut the queue down: ``put`` raises ``QueueShutDown`` from now on.  O(n) if immediate.

        ``get`` raises ``QueueShutDown`` once the queue is empty; with
        ``immediate``, the items are dropped at once (each counted as done,
        which may end ``join``).  Every waiting ``put`` and ``get`` wakes.
        """
        # RuntimeError from a comparison of the heap's items, before anything changed
        dropped: list[T] = self._heap.clear() if immediate else []
        inbox = self._inbox
        inbox._lock()  # a put_threadsafe after this raises QueueShutDown
        try:
            self._is_shutdown = True
        finally:
            inbox._unlock()
        unqueued: list[T] = []
        if immediate:
            batch = inbox.swap()  # what threads put before: dropped too
            unqueued = batch[:]
            batch.clear()
            self._unfinished_tasks = max(0, self._unfinished_tasks - len(dropped))
            if self._unfinished_tasks == 0:
                wakeup_all(self._joiners)
        wakeup_all(self._getters)
        wakeup_all(self._putters)
        del dropped, unqueued  # item finalisers run with the queue consistent

    # -- representation ----------------------------------------------------------

    def _unbind_closed(self) -> bool:
        """Another loop asks: once the queue's loop is closed, drop its waiters and say True.

        The items stay, those put from threads too; the futures of the
        closed loop's waiters can never be woken.
        """
        loop = self._loop
        if loop is None or not loop.is_closed():
            return False
        self._getters.clear()
        self._putters.clear()
        self._joiners.clear()
        inbox = self._inbox
        inbox._lock()
        try:
            inbox.want = 0  # nobody waits: thread puts wake no loop
        finally:
            inbox._unlock()
        return True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {id(self):#x} {self._format()}>"

    def __str__(self) -> str:
        return f"<{type(self).__name__} {self._format()}>"

    def _wakeup_next(self, waiters: deque[asyncio.Future[None]]) -> None:
        wakeup_next(waiters)

    def _format(self) -> str:
        # asyncio.Queue's format, the heap list shown as its _queue
        result = f"maxsize={self._maxsize!r}"
        if self._heap:
            result += f" _queue={self._heap.snapshot()!r}"
        if self._inbox.items:
            result += f" _inbox[{len(self._inbox.items)}]"
        if self._getters:
            result += f" _getters[{len(self._getters)}]"
        if self._putters:
            result += f" _putters[{len(self._putters)}]"
        if self._unfinished_tasks:
            result += f" tasks={self._unfinished_tasks}"
        if self._is_shutdown:
            result += " shutdown"
        return result

    def _check(self) -> None:
        """Assert the invariants: heap order and the counters (between loop steps)."""
        self._heap._check()
        assert self._unfinished_tasks >= 0
        inbox = self._inbox
        assert inbox.transit == 0 and not inbox.spare, "a take-in left items in transit"


# What a subclass overriding full() or qsize() gets (see __init_subclass__):
# asyncio.Queue's put_nowait and full, on the core's heap, and a
# put_threadsafe that asks full() too (in the calling thread, under the
# inbox's lock, so that loop and threads never overfill the queue).


def _put_nowait_asking_full(self: Any, item: Any) -> None:
    """Put ``item`` into the queue without waiting.  O(log n).

    Raises ``QueueFull`` if there is no free slot, ``QueueShutDown`` if
    the queue has been shut down.
    """
    if self._is_shutdown:
        raise QueueShutDown(SHUTDOWN_PUT)
    self._push_bounded(item, self.full)
    self._unfinished_tasks += 1
    if self._getters:
        wakeup_next(self._getters)


def _put_threadsafe_asking_full(self: Any, item: Any) -> None:
    """Put ``item`` into the queue from any thread, without waiting.  O(1).

    As the public class's ``put_threadsafe``, where ``QueueFull`` is what
    the subclass's ``full()`` says (asked in the calling thread).
    """
    self._thread_put(item, self.full)


def _full_asking_qsize(self: Any) -> bool:
    """Return True if there are ``maxsize`` items in the queue.  O(1)."""
    return 0 < self._maxsize <= self.qsize()  # type: ignore[no-any-return]
