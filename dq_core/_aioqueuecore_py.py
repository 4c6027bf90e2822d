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
the loop): no wake-up is ever lost.  The loop holds the lock only to swap
the inbox's list for an empty one (``_Inbox.swap``) and compares the items
after, counting them meanwhile as in transit: a thread never waits for a
comparison.

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
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, NoReturn, Optional

from ._aiowaiting import (
    LOOP_CLOSED,
    MAX_ARM,
    WANT_ITEM,
    LoopTimer,
    QueueShutDown,
    delay_get,
    queue_get,
    report_unqueued,
    wakeup_all,
    wakeup_next,
)
from ._convert import to_real
from ._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT
from ._heapcore_py import Heap
from ._heapcore_py import T as Item  # unbounded: delay-queue items are never compared
from ._itemheapcore_py import ItemHeap, T
from ._lockcore_py import LockedBase
from ._validate import check_maxsize, check_real_maxsize

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = MappingProxyType({})


__all__ = ["AioDelayCore", "AioQueueCore", "MAX_ARM"]

_get_running_loop = asyncio.get_running_loop
_running_loop = asyncio._get_running_loop  # the running loop, or None

#: What a take-in called from a comparison of the heap's items raises (the
#: items stay in the inbox).
_HEAP_BUSY = "the heap was re-entered from a comparison of its items"


_SIZE_MAX = sys.maxsize  # a larger maxsize is never reached (the compiled core: no bound)


class _Inbox(LockedBase):
    """_Inbox()\n--\n\nWhat other threads hand a queue's loop: a list under a lock, and a wake-up wish."""

    __slots__ = ("items", "spare", "want", "transit", "taking", "pos", "soon", "floor", "_mutex", "_owner")

    def __init__(self) -> None:
        # changed only under the lock; read anywhere as a hint.  The two lists
        # live as long as the inbox: swap() trades them, never frees one.
        self.items: list[Any] = []
        self.spare: list[Any] = []  # the loop's batch, taken out of items (the loop's thread only)
        self.want = 0  # WANT_ITEM, WANT_ROOM: who waits; the next such call wakes the loop
        # aio.PriorityQueue's items out of items and not in the heap yet: counted by
        # qsize; written by the loop's thread only, read by threads under the lock
        self.transit = 0
        # the DelayQueue's, in its loop's thread: carrying calls out, the next call
        # of spare to carry out, a take-in scheduled; the last put's call time
        self.taking = False
        self.pos = 0
        self.soon = False
        self.floor = -math.inf
        self._mutex = threading.Lock()
        self._owner = 0

    def listen(self, /, wants: int = WANT_ITEM) -> bool:
        """A waiter is about to park: True, and the next call it wants wakes the loop; False if items came."""
        self._lock()
        try:
            if self.items:
                return False
            self.want |= wants
            return True
        finally:
            self._unlock()

    def swap(self, /) -> list[Any]:
        """What threads handed over so far becomes ``spare`` (which must be empty), returned.  O(1)."""
        self._lock()
        try:
            batch = self.items
            self.items = self.spare
            self.spare = batch
            return batch
        finally:
            self._unlock()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("cannot pickle or copy '_Inbox' object: it belongs to a queue")


class _AioQueueCore(Generic[T]):
    """_AioQueueCore(maxsize=0)\n--\n\nThe non-waiting half of aio.PriorityQueue: heap, waiters, counters."""

    __slots__ = (
        "_heap",
        "_getters",
        "_putters",
        "_joiners",
        "_maxsize",
        "_unfinished_tasks",
        "_is_shutdown",
        "_loop",
        "_inbox",
        "__weakref__",
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
        def _get_loop(self) -> AbstractEventLoop: ...  # LoopBound's

    # Sizes count the items other threads put that the loop has not taken in
    # yet, and those it is taking in (in transit).  The count of those in
    # transit is read first: the loop pushes an item, then uncounts it, so a
    # thread reading meanwhile counts it twice at worst, never not at all.

    def qsize(self, /) -> int:
        """Number of items in the queue.  O(1)."""
        inbox = self._inbox
        return inbox.transit + len(self._heap) + len(inbox.items)

    def empty(self, /) -> bool:
        """Return True if the queue is empty, False otherwise.  O(1)."""
        inbox = self._inbox
        return not inbox.transit and not self._heap and not inbox.items

    def full(self, /) -> bool:
        """Return True if there are ``maxsize`` items in the queue.  O(1).

        With ``maxsize`` 0 (the default) or less, never true.
        """
        inbox = self._inbox
        return 0 < self._maxsize <= inbox.transit + len(self._heap) + len(inbox.items)

    def _has_room(self, /) -> bool:
        """True unless ``maxsize`` items are held (what a woken putter waits for)."""
        inbox = self._inbox
        return not 0 < self._maxsize <= inbox.transit + len(self._heap) + len(inbox.items)

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

    def _push_bounded(self, /, item: T, full: Optional[Callable[[], bool]] = None) -> None:
        """Push ``item`` if there is room (``QueueFull`` if not), counted against thread-side puts.

        ``full``: a subclass's ``full``, asked instead of counting.  The room
        is taken under the inbox's lock and the item compared after it.
        """
        inbox = self._inbox
        inbox._lock()
        try:
            if (
                full()
                if full is not None
                else (self._maxsize <= inbox.transit + len(self._heap) + len(inbox.items))
            ):
                raise QueueFull
            inbox.transit += 1  # its room, taken: a put_threadsafe counts it from here
        finally:
            inbox._unlock()
        try:
            self._heap.push(item)
        finally:
            inbox.transit -= 1  # in the heap now, or not put

    def put_threadsafe(self, /, item: T) -> None:
        """Put ``item`` into the queue from any thread, without waiting.  O(1).

        The item is in the queue at once (``qsize()`` counts it); the loop
        takes it into the heap when a coroutine next gets, and is woken for
        it only if a ``get`` is waiting.  It never waits for the loop: the
        loop holds the inbox's lock only to swap its list, never while it
        compares.  Raises ``QueueFull`` if there is no free slot,
        ``QueueShutDown`` once the queue has been shut down, and
        ``RuntimeError`` once the event loop the queue is bound to is closed
        (nothing is put then).  The queue binds to its loop when a coroutine
        first waits on it or first takes in items put from threads; before
        that it takes items, which wait for a loop to take them.  The items
        are compared in the loop: one whose comparison raises there goes to
        the loop's exception handler instead of the queue.
        """
        self._thread_put(item, None)

    def _thread_put(self, /, item: T, full: Optional[Callable[[], bool]]) -> None:
        """``put_threadsafe``; ``full``: a subclass's ``full``, asked under the inbox's lock."""
        loop = self._loop
        if loop is not None and loop.is_closed():
            raise RuntimeError(LOOP_CLOSED)
        inbox = self._inbox
        inbox._lock()
        try:
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_PUT)
            if (
                full()
                if full is not None
                else (0 < self._maxsize <= inbox.transit + len(self._heap) + len(inbox.items))
            ):
                raise QueueFull
            inbox.items.append(item)
            if not inbox.want:
                return
            inbox.want = 0
            loop = self._loop  # bound before a getter could ask for a wake-up
        finally:
            inbox._unlock()
        assert loop is not None
        try:
            loop.call_soon_threadsafe(self._on_put_threadsafe)
        except BaseException as exc:
            if self._unput(item):
                if loop.is_closed():  # closed since the look above: the same words
                    raise RuntimeError(LOOP_CLOSED) from exc
                raise
            # the loop took it in meanwhile: it is put, and the loop runs

    def _unput(self, /, item: T) -> bool:
        """The wake-up failed (the loop closed meanwhile): take ``item`` back; False if taken in."""
        inbox = self._inbox
        inbox._lock()
        try:
            inbox.want |= WANT_ITEM  # the getter may still wait
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
        self._take_in()
        if self._getters and not self._inbox.listen():
            # more came meanwhile: taken in on the loop's next round, after what is ready
            loop = self._loop
            assert loop is not None
            loop.call_soon(self._on_put_threadsafe)

    def _take_in(self, /) -> None:
        """Move what other threads put into the heap, waking a getter per item.  O(k log n).

        Takes what is there when it starts, never what comes meanwhile.  Binds
        the queue to the running loop if it is bound to none.
        """
        heap = self._heap
        if heap._busy:  # from a comparison of the heap's items: they stay in the inbox
            raise RuntimeError(_HEAP_BUSY)
        loop = self._loop
        if loop is None:
            self._loop = _running_loop()  # the loop that takes thread puts in owns the queue
        elif loop.is_closed() and _running_loop() is not None:
            self._get_loop()  # the face's: binds to the running loop (or raises)
        loop = self._loop
        inbox = self._inbox
        inbox._lock()
        try:
            batch = inbox.items
            inbox.items = inbox.spare
            inbox.spare = batch
            inbox.transit += len(batch)
        finally:
            inbox._unlock()
        failed: list[tuple[T, Exception]] = []
        taken = done = 0
        try:
            for item in batch:
                try:
                    heap.push(item)
                except Exception as exc:  # it goes to the loop's exception handler
                    failed.append((item, exc))
                else:
                    taken += 1
                    inbox.transit -= 1  # after the push: see qsize
                done += 1
        except BaseException:  # the item interrupted, the rest and the failed go back
            self._requeue(batch, done, failed)
            raise
        finally:
            batch.clear()
            self._unfinished_tasks += taken
            getters = self._getters
            while taken and getters and wakeup_next(getters):
                taken -= 1
        inbox.transit -= len(failed)
        if not self._unfinished_tasks and self._joiners and not inbox.items:
            wakeup_all(self._joiners)  # the last items put failed: nothing is left to do
        if failed:
            report_unqueued(self, loop, failed)

    def _requeue(self, /, batch: list[T], done: int, failed: list[tuple[T, Exception]]) -> None:
        """A take-in interrupted: what it did not push goes back to the front of the inbox."""
        rest = [item for item, _ in failed] + batch[done:]
        inbox = self._inbox
        inbox._lock()
        try:
            inbox.items[:0] = rest
            inbox.transit -= len(rest)
        finally:
            inbox._unlock()

    def get_nowait(self, /) -> T:
        """Remove and return the lowest item if there is one, else raise ``QueueEmpty``.  O(log n).

        O(k log n) with k items put from threads since the last look: they
        are taken in first.  Raises ``QueueShutDown`` if the queue has been
        shut down and is empty, or shut down immediately.
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
        inbox = self._inbox
        if 0 < self._maxsize <= inbox.transit + len(self._heap) + len(inbox.items):
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
            inbox = self._inbox
            if inbox.transit or inbox.items:  # put from threads, and not done either
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
        "_heap",
        "_maxsize",
        "_is_shutdown",
        "_getters",
        "_putters",
        "_pending",
        "_timer",
        "_timer_when",
        "_loop",
        "_inbox",
        "__weakref__",
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
        def _take_calls(self, finish: bool = False) -> None: ...
        def _catch_up(self) -> None: ...

    # -- sizes ----------------------------------------------------------------
    #
    # Read in the queue's loop, they first carry out the calls other threads
    # queued (the face's _catch_up): a thread's put counts once it returned.

    def qsize(self, /) -> int:
        """Number of items held, due or not.  O(1); O(k log n) with k calls of threads waiting.

        In the queue's loop, the calls other threads queued are carried out
        first: the answer counts every call made before it.
        """
        if self._inbox.items:
            self._catch_up()
        return len(self._heap)

    def __len__(self, /) -> int:
        """Return len(self)."""
        if self._inbox.items:
            self._catch_up()
        return len(self._heap)

    def empty(self, /) -> bool:
        """Return True if no item is held, due or not.  O(1); O(k log n) with k calls of threads waiting.

        In the queue's loop, the calls other threads queued are carried out first.
        """
        if self._inbox.items:
            self._catch_up()
        return not self._heap

    def full(self, /) -> bool:
        """Return True if ``maxsize`` items are held.  O(1); O(k log n) with k calls of threads waiting.

        In the queue's loop, the calls other threads queued are carried out first.
        """
        if self._inbox.items:
            self._catch_up()
        return 0 < self._maxsize <= len(self._heap)

    def _has_room(self, /) -> bool:
        """True unless ``maxsize`` items are held (what a woken putter waits for)."""
        return not 0 < self._maxsize <= len(self._heap)

    def next_deadline(self, /) -> Optional[float]:
        """The earliest deadline held (on ``loop.time()``), or None if empty.  O(1).

        O(k log n) with k calls of threads waiting: in the queue's loop, the
        calls other threads queued are carried out first.
        """
        if self._inbox.items:
            self._catch_up()
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

        O(k log n) with k calls of threads waiting: the calls other threads
        queued since the last look are carried out first.  Raises
        ``QueueShutDown`` once the queue is shut down and holds no item.
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
