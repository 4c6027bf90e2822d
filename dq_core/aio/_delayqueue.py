"""aio.DelayQueue: items a coroutine can take only once their deadline has passed.

Deadlines are on the running loop's clock (``loop.time()``), kept in the
keyed Heap of the implementation (equal deadlines first-in first-out,
handles to cancel or reschedule in O(log n)).

Waiting takes one loop timer per queue, never one per waiter or per item:
while coroutines wait in ``get``, the queue keeps a single ``loop.call_at``
armed for the head's deadline and re-arms it when the head changes (an
earlier put, a cancel or reschedule of the head, a take).  When it fires,
the clock is read again (a loop may fire a timer up to its clock resolution
early) and one waiter is woken; that waiter, once it has taken its item,
wakes the next if another item is due (``_pending`` counts woken waiters
that have not run yet, so one due item never wakes a crowd).  A woken
waiter that is cancelled passes its wake-up on, so no item is stranded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import types
from time import monotonic as _monotonic
from asyncio import AbstractEventLoop, QueueEmpty
from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar

from .._aiowaiting import LOOP_CLOSED, QueueShutDown, delay_get, wakeup_all, wakeup_next
from .._convert import to_count, to_real
from .._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT
from .._queuerepr import delay_queue_repr
from ._base import LoopBound, park

if TYPE_CHECKING:
    from .._aioqueuecore_py import AioDelayCore as _Core
else:
    # The core (dq_core._aioqueuecore's AioDelayCore, compiled or pure) is joined
    # as a further base by dq_core._assemble.
    _Core = Generic

__all__ = ["DelayQueue"]

T = TypeVar("T")


def _delay(delay: object) -> float:
    return delay if type(delay) is float and delay == delay else to_real(delay, "delay")


class DelayQueue(LoopBound, _Core[T]):
    """A queue for coroutines whose items can be taken only once their deadline passed.

    ``put_nowait(item, delay)`` makes ``item`` due at ``loop.time() +
    delay`` and returns a handle for ``cancel`` and ``reschedule``;
    ``await get()`` returns the earliest-due item once due, never early;
    equal deadlines come out first-in first-out.  ``maxsize > 0`` bounds
    the items held, due or not: ``await put`` waits for room.  ``shutdown``
    as the threaded DelayQueue's; ``async for item in dq`` yields items as
    they come due until the queue is shut down and drained.  Cancelling a
    waiting ``get`` or ``put`` loses nothing and inserts nothing.

    The queue binds to the first running loop that uses it.  Not
    thread-safe: from other threads, only ``put_threadsafe``,
    ``put_at_threadsafe``, ``cancel_threadsafe`` and
    ``shutdown_threadsafe`` may be called (they never wait, and wake the
    loop only when a ``get`` waits or their Future is waited on); the other
    methods raise ``RuntimeError`` when no loop runs in the calling thread.
    Copying and pickling raise ``TypeError``.

    >>> async def main():
    ...     dq = DelayQueue()
    ...     dq.put_nowait("later", delay=0.02)
    ...     dq.put_nowait("now")
    ...     return [await dq.get(), await dq.get()]
    >>> asyncio.run(main())
    ['now', 'later']
    """

    # The heap, the waiter deques, the one timer and the paths that never wait
    # (put_nowait, get_nowait, the sizes, next_deadline, and get up to its
    # first wait) are the core's.
    __slots__ = ()

    _NO_LOOP = (
        "no running event loop: a DelayQueue is used in its event loop; from another "
        "thread, call put_threadsafe, put_at_threadsafe, cancel_threadsafe or "
        "shutdown_threadsafe")

    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)

    @property
    def maxsize(self) -> int:
        """The most items held at once, due or not (0 or less: no bound)."""
        return self._maxsize

    def put_at_nowait(self, item: T, deadline: float) -> int:
        """Add ``item``, due at ``deadline`` on ``loop.time()``; return its handle.  O(log n).

        Otherwise as ``put_nowait``.
        """
        d = to_real(deadline, "deadline")
        self._get_loop()
        return self._add(item, d)

    async def put(self, item: T, delay: float = 0.0) -> int:
        """Add ``item``, due ``delay`` seconds from the call, waiting for room; return its handle.

        Waits while ``maxsize`` items are held.  Raises ``QueueShutDown``
        once the queue is shut down.  O(log n).
        """
        d = _delay(delay)
        return await self._put(item, self._get_loop().time() + d)

    async def put_at(self, item: T, deadline: float) -> int:
        """Add ``item``, due at ``deadline`` on ``loop.time()``, waiting for room; return its handle."""
        d = to_real(deadline, "deadline")
        self._get_loop()
        return await self._put(item, d)

    async def _put(self, item: T, deadline: float) -> int:
        # asyncio.Queue.put's wait for room
        while 0 < self._maxsize <= len(self._heap):
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_PUT)
            await park(self._get_loop(), self._putters, self._has_room)
        return self._add(item, deadline)

    # -- get ------------------------------------------------------------------

    if sys.version_info >= (3, 12):
        # a Python coroutine's result needs no StopIteration from 3.12 (see
        # dq_core._aiowaiting.queue_get; callgrind, 3.13, put + get of due
        # items: 2,436 instructions per element against 2,937; 3.11: 2,159
        # against 1,886)
        get = delay_get

    async def _wait_get(self) -> T:
        # get() once get_nowait() raised QueueEmpty: park on a future until woken, retry
        loop = self._get_loop()  # bound by get_nowait: the same loop
        inbox = self._inbox
        while True:
            if not inbox.listen():  # a thread's call came since get_nowait looked
                try:
                    return self.get_nowait()  # takes it in
                except QueueEmpty:
                    continue
            getter = loop.create_future()
            self._getters.append(getter)
            self._schedule()
            try:
                await getter
            except:  # noqa: E722 -- also on cancellation
                getter.cancel()
                try:
                    self._getters.remove(getter)
                except ValueError:  # removed when woken
                    pass
                if not getter.cancelled():  # woken, but we will not take: pass it on
                    self._pending -= 1
                    self._schedule()
                elif not self._getters:
                    self._disarm()
                raise
            self._pending -= 1
            try:
                return self.get_nowait()  # QueueShutDown once shut down and empty
            except QueueEmpty:
                pass

    def get_many(self, max_items: Optional[int] = None) -> list[T]:
        """Remove and return every item due now (at most ``max_items``), earliest first.  O(k log n).

        Never waits.  Once shut down and empty, raises ``QueueShutDown``.
        """
        limit = None if max_items is None else to_count(max_items, "max_items")
        loop = self._get_loop()
        if self._inbox.items:
            self._take_calls()
        now = loop.time()
        heap = self._heap
        if self._is_shutdown and not heap:
            raise QueueShutDown(SHUTDOWN_GET)
        out: list[T] = []
        while heap and (limit is None or len(out) < limit) and heap.peekitem()[0] <= now:
            out.append(heap.pop())
            self._taken()
        return out

    def __aiter__(self) -> DelayQueue[T]:
        return self

    async def __anext__(self) -> T:
        """The next item as it comes due; ends once the queue is shut down and drained."""
        try:
            return await self.get()
        except QueueShutDown:
            raise StopAsyncIteration from None

    # -- handles ----------------------------------------------------------------

    def _in_own_loop(self) -> None:
        """``RuntimeError`` unless called in the loop the queue is bound to (if bound).

        Checked before anything changes: the loop's timer and waiters
        belong to its thread.
        """
        if self._loop is not None:
            self._get_loop()

    def cancel(self, handle: int) -> bool:
        """Remove the item behind ``handle``; True if it was still held.  O(log n)."""
        self._in_own_loop()
        heap = self._heap
        head = heap.peekitem()[0] if self._getters and heap else None
        try:
            item = heap.remove(handle)
        except KeyError:
            return False
        if self._putters:
            wakeup_next(self._putters)
        if self._getters:
            if self._is_shutdown and not heap:
                self._wake_all()
            elif not heap or heap.peekitem()[0] != head:
                self._schedule()
        del item  # its finaliser runs with the queue consistent
        return True

    def reschedule(self, handle: int, delay: float) -> bool:
        """Make the item behind ``handle`` due ``delay`` seconds from now.  O(log n).

        Returns False if the handle is stale.  The item goes behind others
        with the same deadline.
        """
        deadline = self._get_loop().time() + to_real(delay, "delay")
        heap = self._heap
        try:
            heap.update(handle, deadline)
        except KeyError:
            return False
        if self._getters:
            self._schedule()
        return True

    # -- from other threads --------------------------------------------------------
    #
    # A thread's call is queued in the inbox with the Future it returns; the
    # loop carries it out when it next looks (a get) or is woken.  It is
    # woken only when a getter waits (the inbox's wake-up wish, as for
    # aio.PriorityQueue.put_threadsafe) or when someone waits on the Future
    # (_ThreadCall): a producer that never looks at its Futures costs the
    # loop no wake-up.

    def _call_threadsafe(self, kind: int, *args: Any) -> concurrent.futures.Future[Any]:
        loop = self._loop
        if loop is None:
            raise RuntimeError(
                f"{self!r} is not bound to an event loop yet: use it once on its loop first")
        if loop.is_closed():
            raise RuntimeError(LOOP_CLOSED)
        call = _ThreadCall(self, kind, args)
        inbox = self._inbox
        inbox._lock()
        try:
            inbox.items.append(call)
            wake = inbox.want
            inbox.want = False
        finally:
            inbox._unlock()
        if wake:
            self._wake(call, want=True)
        return call

    def _wake(self, call: _ThreadCall, want: bool = False) -> None:
        """Have the loop take the calls in (``want``: the wish of a waiting getter was used)."""
        loop = self._loop
        assert loop is not None
        try:
            loop.call_soon_threadsafe(self._on_call_threadsafe)
        except BaseException as exc:  # the loop closed meanwhile: nothing half-done
            inbox = self._inbox
            inbox._lock()
            try:
                if want:
                    inbox.want = True  # the getter may still wait
                try:
                    inbox.items.remove(call)
                except ValueError:  # the loop took it in: it is done, or will be
                    return
            finally:
                inbox._unlock()
            if want:
                raise
            call.set_exception(RuntimeError(LOOP_CLOSED) if loop.is_closed() else exc)

    def _on_call_threadsafe(self) -> None:
        """In the loop, woken for the threads' calls: carry them out, then listen again."""
        while True:
            self._take_calls()
            if not self._getters or self._inbox.listen():
                return

    def _take_calls(self) -> None:
        """Carry out the calls other threads queued, in order, settling their Futures."""
        inbox = self._inbox
        if inbox.taking:  # called back from a Future's callback: the outer loop goes on
            return
        inbox.taking = True
        try:
            while True:
                inbox._lock()
                try:
                    calls = inbox.items[:]
                    inbox.items.clear()
                finally:
                    inbox._unlock()
                if not calls:
                    return
                # the loop's clock less time.monotonic (the puts' clock), read once for
                # the batch: a put's deadline is its call's time on the loop's clock
                # plus its delay (see _ThreadCall.run)
                offset = self._loop.time() - _monotonic()  # type: ignore[union-attr]
                for i, call in enumerate(calls):
                    try:
                        call.run(offset)
                    except BaseException:  # KeyboardInterrupt in a callback: the rest stay queued
                        inbox._lock()
                        try:
                            inbox.items[:0] = calls[i + 1:]
                        finally:
                            inbox._unlock()
                        raise
        finally:
            inbox.taking = False

    def put_threadsafe(self, item: T, delay: float = 0.0) -> concurrent.futures.Future[int]:
        """From any thread: ``put_nowait(item, delay)`` in the queue's loop, without waiting.

        Returns a ``concurrent.futures.Future`` of the handle (or of the
        ``QueueFull``/``QueueShutDown`` raised), settled when the loop takes
        the call in: at once if a ``get`` waits, else when the loop next
        gets or when the Future is waited on.  The delay counts from this
        call.  ``RuntimeError`` if the queue has not been bound to a loop
        yet, or its loop is closed (nothing is queued then).
        """
        return self._call_threadsafe(_PUT, item, _delay(delay), _monotonic())

    def put_at_threadsafe(self, item: T, deadline: float) -> concurrent.futures.Future[int]:
        """From any thread: ``put_at_nowait(item, deadline)`` in the queue's loop, as ``put_threadsafe``."""
        return self._call_threadsafe(_PUT_AT, item, to_real(deadline, "deadline"))

    def cancel_threadsafe(self, handle: int) -> concurrent.futures.Future[bool]:
        """From any thread: ``cancel(handle)`` in the queue's loop; a Future of its result."""
        return self._call_threadsafe(_CANCEL, handle)

    def shutdown_threadsafe(self, immediate: bool = False) -> concurrent.futures.Future[None]:
        """From any thread: ``shutdown(immediate)`` in the queue's loop; a Future of its end."""
        return self._call_threadsafe(_SHUTDOWN, immediate)

    # -- shutdown ---------------------------------------------------------------

    def shutdown(self, immediate: bool = False) -> None:
        """Shut the queue down: ``put`` raises ``QueueShutDown`` from now on.  O(n) if immediate.

        Waiting getters go on receiving items as they come due, then raise
        ``QueueShutDown``.  With ``immediate``, the items are dropped and
        every waiting and later ``get`` raises ``QueueShutDown`` at once.
        Waiting ``put`` calls raise ``QueueShutDown``.
        """
        self._in_own_loop()
        self._is_shutdown = True
        dropped: list[T] = []
        if immediate:
            dropped = self._heap.pop_many(len(self._heap))
        if not self._heap:
            self._wake_all()
        wakeup_all(self._putters)
        del dropped  # item finalisers run with the queue consistent

    # -- checks and representation -----------------------------------------------------

    def _check(self) -> None:
        """Assert the invariants (call between loop steps, not inside one)."""
        self._heap._check()
        assert self._pending >= 0
        waiting = [g for g in self._getters if not g.done()]
        if self._timer is not None:
            assert waiting and self._heap, "a timer armed with nobody waiting"
        if waiting and self._heap and not self._pending:
            assert self._timer is not None, "getters wait for a head but no timer is armed"
            assert self._timer_when <= self._heap.peekitem()[0], "the timer is armed past the head"

    __repr__ = delay_queue_repr  # the threaded DelayQueue's words


_PUT, _PUT_AT, _CANCEL, _SHUTDOWN = range(4)


class _ThreadCall(concurrent.futures.Future):  # type: ignore[type-arg]
    """A call another thread made on a DelayQueue, and the Future of its result.

    Waiting on it (``result``, ``exception``, ``done``, callbacks,
    ``concurrent.futures.wait``: everything reads the Future's condition)
    first has the loop woken to take the call in, once.
    """

    def __init__(self, queue: DelayQueue[Any], kind: int, args: tuple[Any, ...]) -> None:
        self._nudged = True  # (the condition does not exist yet)
        super().__init__()
        self._queue = queue
        self._kind = kind
        self._args = args
        self._nudged = False

    @property
    def _condition(self) -> Any:
        if not self._nudged:
            self._nudged = True
            self._queue._wake(self)
        return self._cond

    @_condition.setter
    def _condition(self, condition: Any) -> None:
        self._cond = condition

    def run(self, offset: float) -> None:
        """In the loop: carry the call out and settle the Future (unless it was cancelled).

        ``offset``: the loop's clock less ``time.monotonic``, for a put's deadline.
        """
        self._nudged = True  # taken in: waiting on it wakes nothing any more
        if not self.set_running_or_notify_cancel():
            return
        queue = self._queue
        kind, args = self._kind, self._args
        self._args = ()
        try:
            if kind == _PUT:
                item, delay, since = args
                # the call's time on the loop's clock, never before an earlier
                # put's (the offset moves by the clocks' resolution from batch to
                # batch): equal delays come out in call order
                inbox = queue._inbox
                base = max(since + offset, inbox.floor)
                inbox.floor = base
                result: Any = queue.put_at_nowait(item, base + delay)
            elif kind == _PUT_AT:
                result = queue.put_at_nowait(*args)
            elif kind == _CANCEL:
                result = queue.cancel(*args)
            else:
                queue.shutdown(*args)
                result = None
        except Exception as exc:
            self.set_exception(exc)
        else:
            self.set_result(result)
