"""dq_core.aio's cores: the pure-Python twin of the compiled ``dq_core._aioqueuecore``.

``AioQueueCore`` holds aio.PriorityQueue's heap (an ``ItemHeap``), its
waiter deques and counters, and every path that never waits: ``put_nowait``,
``get_nowait``, ``qsize``/``empty``/``full`` and ``task_done``.
``AioDelayCore`` does the same for aio.DelayQueue (a keyed ``Heap`` of
deadlines on the loop's clock) and owns its one loop timer.  The waiting
coroutines (``put``, ``get``, ``join``) and the rare paths live in the
faces, ``dq_core.aio._priorityqueue`` and ``dq_core.aio._delayqueue``, shared by both
implementations; they park futures on the deques held here.

Waking follows ``asyncio/queues.py``: the first waiter not done yet gets
``set_result(None)`` and re-checks when its task runs.

Other threads reach a queue through its ``_Inbox``: ``put_threadsafe``
appends to a list under a lock, and the loop takes what is there into the
heap when it next looks (a get, or a wake-up).  The loop is woken (one
``call_soon_threadsafe``) only when a getter waits: a getter about to park
looks at the inbox under the same lock and, finding it empty, asks for a
wake-up there (``_Inbox.listen``), so a put either lands before that look
(and the getter takes it instead of parking) or sees the request (and wakes
the loop): no wake-up is ever lost.

>>> q = AioQueueCore()
>>> q.put_nowait((2, "b")); q.put_nowait((1, "a"))
>>> q.get_nowait(), q.qsize()
((1, 'a'), 1)
"""

from __future__ import annotations

import asyncio
import math
import sys
import threading
from asyncio import AbstractEventLoop, Future, QueueEmpty, QueueFull, TimerHandle
from collections import deque
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Mapping, NoReturn, Optional, TypeVar

from ._convert import to_real
from ._heapcore_py import Heap
from ._heapcore_py import T as Item  # unbounded: delay-queue items are never compared
from ._itemheapcore_py import ItemHeap, T
from ._lockcore_py import LockedBase
from ._validate import check_maxsize, check_real_maxsize
from ._aiowaiting import (
    LOOP_CLOSED, LoopTimer, QueueShutDown, delay_get, queue_get, report_unqueued, wakeup_all,
    wakeup_next,
)
from ._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = MappingProxyType({})


__all__ = ["AioDelayCore", "AioQueueCore", "MAX_ARM"]

_get_running_loop = asyncio.get_running_loop

#: The longest the DelayQueue's timer is armed ahead; a later head re-arms on
#: firing (some loops, uvloop among them, refuse a far or infinite ``call_at``).
MAX_ARM = 86400.0


_SIZE_MAX = sys.maxsize  # a larger maxsize is never reached (the compiled core: no bound)


class _Inbox(LockedBase):
    """_Inbox()\n--\n\nWhat other threads hand a queue's loop: a list under a lock, and a wake-up wish."""

    __slots__ = ("items", "want", "taking", "floor", "_mutex", "_owner")

    def __init__(self) -> None:
        self.items: list[Any] = []  # changed only under the lock; read anywhere as a hint
        self.want = False  # a getter waits: the next put wakes the loop (under the lock)
        # the DelayQueue's, in its loop's thread: carrying calls out; the last put's call time
        self.taking = False
        self.floor = -math.inf
        self._mutex = threading.Lock()
        self._owner = 0

    def listen(self, /) -> bool:
        """A getter is about to wait: True, and the next put wakes the loop; False if items came."""
        self._lock()
        try:
            if self.items:
                return False
            self.want = True
            return True
        finally:
            self._unlock()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("cannot pickle or copy '_Inbox' object: it belongs to a queue")


class _AioQueueCore(Generic[T]):
    """_AioQueueCore(maxsize=0)\n--\n\nThe non-waiting half of aio.PriorityQueue: heap, waiters, counters."""

    __slots__ = (
        "_heap", "_getters", "_putters", "_joiners", "_maxsize", "_unfinished_tasks",
        "_is_shutdown", "_loop", "_inbox", "__weakref__",
    )

    def __init__(self, maxsize: float = 0) -> None:
        self._maxsize = check_real_maxsize(maxsize)
        self._heap: ItemHeap[T] = ItemHeap()
        self._getters: deque[Future[None]] = deque()
        self._putters: deque[Future[None]] = deque()
        self._joiners: deque[Future[None]] = deque()
        self._unfinished_tasks = 0
        self._is_shutdown = False
        self._loop: Optional[AbstractEventLoop] = None
        self._inbox = _Inbox()

    if TYPE_CHECKING:  # the face's
        async def _wait_put(self, item: T) -> None: ...
        async def _wait_get(self) -> T: ...

    # Sizes count the items other threads put that the loop has not taken in yet.

    def qsize(self, /) -> int:
        """Number of items in the queue.  O(1)."""
        return len(self._heap) + len(self._inbox.items)

    def empty(self, /) -> bool:
        """Return True if the queue is empty, False otherwise.  O(1)."""
        return not self._heap and not self._inbox.items

    def full(self, /) -> bool:
        """Return True if there are ``maxsize`` items in the queue.  O(1).

        With ``maxsize`` 0 (the default) or less, never true.
        """
        return 0 < self._maxsize <= len(self._heap) + len(self._inbox.items)

    def _has_room(self, /) -> bool:
        """True unless ``maxsize`` items are held (what a woken putter waits for)."""
        return not 0 < self._maxsize <= len(self._heap) + len(self._inbox.items)

    def put_nowait(self, /, item: T) -> None:
        """Put ``item`` into the queue without waiting.  O(log n).

        Raises ``QueueFull`` if there is no free slot, ``QueueShutDown`` if
        the queue has been shut down.
        """
        if self._is_shutdown:
            raise QueueShutDown(SHUTDOWN_PUT)
        if 0 < self._maxsize <= _SIZE_MAX:
            self._push_bounded(item)
        else:
            self._heap.push(item)
        self._unfinished_tasks += 1
        if self._getters:
            wakeup_next(self._getters)

    def _push_bounded(self, /, item: T) -> None:
        """Push ``item`` if there is room (``QueueFull`` if not), counted against thread-side puts."""
        inbox = self._inbox
        inbox._lock()  # a put_threadsafe counts the heap: it must not count it half-changed
        try:
            if self._maxsize <= len(self._heap) + len(inbox.items):
                raise QueueFull
            self._heap.push(item)
        finally:
            inbox._unlock()

    def put_threadsafe(self, /, item: T) -> None:
        """Put ``item`` into the queue from any thread, without waiting.  O(1).

        The item is in the queue at once (``qsize()`` counts it); the loop
        takes it into the heap when a coroutine next gets, and is woken for
        it only if a ``get`` is waiting.  Raises ``QueueFull`` if there is no
        free slot, ``QueueShutDown`` once the queue has been shut down, and
        ``RuntimeError`` once the event loop the queue is bound to is closed
        (nothing is put then).  A queue not bound to a loop yet takes the
        item too.  The items are compared in the loop: one whose comparison
        raises there goes to the loop's exception handler instead of the
        queue.
        """
        loop = self._loop
        if loop is not None and loop.is_closed():
            raise RuntimeError(LOOP_CLOSED)
        inbox = self._inbox
        inbox._lock()
        try:
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_PUT)
            if 0 < self._maxsize <= len(self._heap) + len(inbox.items):
                raise QueueFull
            inbox.items.append(item)
            if not inbox.want:
                return
            inbox.want = False
            loop = self._loop  # bound before a getter could ask for a wake-up
        finally:
            inbox._unlock()
        assert loop is not None
        try:
            loop.call_soon_threadsafe(self._on_put_threadsafe)
        except BaseException:
            if self._unput(item):
                raise
            # the loop took it in meanwhile: it is put, and the loop runs

    def _unput(self, /, item: T) -> bool:
        """The wake-up failed (the loop closed meanwhile): take ``item`` back; False if taken in."""
        inbox = self._inbox
        inbox._lock()
        try:
            inbox.want = True  # the getter may still wait
            items = inbox.items
            for i in range(len(items) - 1, -1, -1):
                if items[i] is item:
                    del items[i]
                    return True
            return False
        finally:
            inbox._unlock()

    def _on_put_threadsafe(self, /) -> None:
        """In the loop, woken by a thread's put: take the items in and wake the getters."""
        while True:
            self._take_in()
            if not self._getters or self._inbox.listen():
                return

    def _take_in(self, /) -> None:
        """Move what other threads put into the heap, waking a getter per item.  O(k log n)."""
        loop = self._loop
        failed: list[tuple[T, Exception]] = []
        heap = self._heap
        inbox = self._inbox
        # held while comparing: a put_threadsafe must never count an item twice or not at all
        inbox._lock()
        try:
            items = inbox.items
            done = taken = 0
            try:
                while done < len(items):
                    item = items[done]
                    try:
                        heap.push(item)
                    except Exception as exc:  # it goes to the loop's exception handler
                        failed.append((item, exc))
                    else:
                        taken += 1
                    done += 1
            finally:
                del items[:done]
                self._unfinished_tasks += taken
        finally:
            inbox._unlock()
        getters = self._getters
        while taken and getters:
            if not wakeup_next(getters):
                break
            taken -= 1
        if failed:
            report_unqueued(self, loop, failed)

    def get_nowait(self, /) -> T:
        """Remove and return the lowest item if there is one, else raise ``QueueEmpty``.  O(log n).

        Raises ``QueueShutDown`` if the queue has been shut down and is
        empty, or shut down immediately.
        """
        if self._inbox.items:
            self._take_in()
        if not self._heap:
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_GET)
            raise QueueEmpty
        item = self._heap.pop()
        if self._putters:
            wakeup_next(self._putters)
        return item

    async def put(self, item: T) -> None:
        """Put ``item`` into the queue, waiting for a free slot if it is full.  O(log n).

        Raises ``QueueShutDown`` if the queue has been shut down.
        """
        if 0 < self._maxsize <= len(self._heap) + len(self._inbox.items):
            return await self._wait_put(item)  # the face's: waits on the loop
        return self.put_nowait(item)

    if TYPE_CHECKING:  # as asyncio.Queue's, for the classes that join both
        async def get(self) -> T: ...
    else:
        get = queue_get  # get_nowait() if not empty, else the face's _wait_get()

    def task_done(self, /) -> None:
        """Indicate that an item taken by ``get`` has been processed.  O(1).

        When every item put has been marked done, ``join`` returns.  Raises
        ``ValueError`` if called more times than there were items put.
        """
        if self._unfinished_tasks <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished_tasks -= 1
        if self._unfinished_tasks == 0:
            if self._inbox.items:  # put from threads, and not done either
                self._take_in()
                if self._unfinished_tasks:
                    return
            wakeup_all(self._joiners)


class AioQueueCore(_AioQueueCore[T], asyncio.PriorityQueue[T]):
    """The heap, the waiters and the non-waiting paths of aio.PriorityQueue.

    An ``asyncio.PriorityQueue`` by inheritance only: every method of the
    standard library's class is overridden here or in ``dq_core.aio._priorityqueue``
    (the waiting coroutines, ``shutdown``), and its ``__init__`` never runs.
    """

    __slots__ = ()


class AioDelayCore(LoopTimer, Generic[Item]):
    """AioDelayCore(maxsize=0)\n--\n\nThe non-waiting half of aio.DelayQueue: heap, waiters, the one timer."""

    __slots__ = (
        "_heap", "_maxsize", "_is_shutdown", "_getters", "_putters", "_pending", "_timer",
        "_timer_when", "_loop", "_inbox", "__weakref__",
    )

    def __init__(self, maxsize: int = 0) -> None:
        self._maxsize = check_maxsize(maxsize)
        self._heap: Heap[Item] = Heap()
        self._is_shutdown = False
        self._getters: deque[Future[None]] = deque()
        self._putters: deque[Future[None]] = deque()
        self._pending = 0  # getters woken that have not run yet
        self._timer: Optional[TimerHandle] = None
        self._timer_when = 0.0
        self._loop: Optional[AbstractEventLoop] = None
        self._inbox = _Inbox()  # the calls of other threads (the face's *_threadsafe)

    if TYPE_CHECKING:  # the face's
        def _get_loop(self) -> AbstractEventLoop: ...
        async def _wait_get(self) -> Item: ...
        def _take_calls(self) -> None: ...

    # -- sizes ----------------------------------------------------------------

    def qsize(self, /) -> int:
        """Number of items held, due or not.  O(1)."""
        return len(self._heap)

    def __len__(self, /) -> int:
        """Return len(self)."""
        return len(self._heap)

    def empty(self, /) -> bool:
        """Return True if no item is held, due or not.  O(1)."""
        return not self._heap

    def full(self, /) -> bool:
        """Return True if ``maxsize`` items are held.  O(1)."""
        return 0 < self._maxsize <= len(self._heap)

    def _has_room(self, /) -> bool:
        """True unless ``maxsize`` items are held (what a woken putter waits for)."""
        return not 0 < self._maxsize <= len(self._heap)

    def next_deadline(self, /) -> Optional[float]:
        """The earliest deadline held (on ``loop.time()``), or None if empty.  O(1)."""
        heap = self._heap
        return heap.peekitem()[0] if heap else None

    # -- put and get ------------------------------------------------------------

    def put_nowait(self, /, item: Item, delay: float = 0.0) -> int:
        """Add ``item``, due ``delay`` seconds from now; return its handle.  O(log n).

        A ``delay`` <= 0 makes it due at once, ``inf`` never (until
        rescheduled).  Raises ``QueueFull`` if ``maxsize`` items are held,
        ``QueueShutDown`` once the queue is shut down.
        """
        if type(delay) is not float or delay != delay:
            delay = to_real(delay, "delay")
        try:
            loop = _get_running_loop()
        except RuntimeError:  # no loop runs here: the face's error names the *_threadsafe methods
            loop = self._get_loop()
        if loop is not self._loop:
            self._get_loop()
        deadline = loop.time() + delay
        if self._is_shutdown or self._maxsize > 0 or self._getters or deadline != deadline:
            return self._add(item, deadline)
        return self._heap.push(deadline, item)

    def _add(self, /, item: Item, deadline: float) -> int:
        """Admit ``item`` due at ``deadline`` (shutdown, room), push it, re-arm for a new head."""
        heap = self._heap
        if deadline != deadline:  # inf + -inf: a loop clock at inf and a delay of -inf
            raise ValueError("deadline must not be NaN (loop.time() + delay)")
        if self._is_shutdown:
            raise QueueShutDown(SHUTDOWN_PUT)
        if 0 < self._maxsize <= len(heap):
            raise QueueFull
        if self._getters and (not heap or deadline < heap.peekitem()[0]):
            handle = heap.push(deadline, item)
            self._schedule()  # a new head
            return handle
        return heap.push(deadline, item)

    def get_nowait(self, /) -> Item:
        """Remove and return the earliest-due item if it is due, else raise ``QueueEmpty``.  O(log n).

        Raises ``QueueShutDown`` once the queue is shut down and holds no item.
        """
        try:
            loop = _get_running_loop()
        except RuntimeError:  # no loop runs here: the face's error names the *_threadsafe methods
            loop = self._get_loop()
        if loop is not self._loop:
            self._get_loop()
        if self._inbox.items:
            self._take_calls()  # the face's: other threads' puts, in order
        heap = self._heap
        if heap:
            if heap.peekitem()[0] <= loop.time():
                item = heap.pop()
                if self._putters or self._getters:
                    self._taken()
                return item
        elif self._is_shutdown:
            raise QueueShutDown(SHUTDOWN_GET)
        raise QueueEmpty

    get = delay_get  # try get_nowait(), else the face's _wait_get()

    def _taken(self, /) -> None:
        """The head was taken: wake a putter, and the next getter or the timer."""
        if self._putters:
            wakeup_next(self._putters)
        if self._getters:
            if self._is_shutdown and not self._heap:
                self._wake_all()  # they raise QueueShutDown now
            else:
                self._schedule()

    # -- the one timer ------------------------------------------------------------

    def _schedule(self, /) -> None:
        """Make sure a waiting getter will learn that the head is due: wake one or arm the timer."""
        heap = self._heap
        if not self._getters or not heap or self._pending:
            # nobody to wake, nothing to wait for, or a woken getter will call again
            self._disarm()
            return
        deadline = heap.peekitem()[0]
        loop = self._loop
        assert loop is not None
        now = loop.time()
        if deadline <= now:
            self._disarm()
            if wakeup_next(self._getters):
                self._pending += 1
            return
        self._arm(loop, min(deadline, now + MAX_ARM))

    # the timer (LoopTimer's _arm, _on_timer, _disarm): firing re-runs _schedule
    _on_due = _schedule

    def _wake_all(self, /) -> None:
        """Wake every getter (shutdown: each re-checks and raises QueueShutDown)."""
        self._disarm()
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(None)
                self._pending += 1
