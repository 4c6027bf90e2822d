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
from asyncio import AbstractEventLoop, QueueEmpty
from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar

from .._aiowaiting import (
    LOOP_CLOSED,
    WANT_ITEM,
    WANT_ROOM,
    QueueShutDown,
    delay_get,
    wakeup_all,
    wakeup_next,
)
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

_running_loop = asyncio._get_running_loop  # the running loop, or None


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
    loop only when their Future is waited on, or when a coroutine waits
    whose wait they could end: a ``get`` for a put, a ``get`` or a ``put``
    for a cancel or a shutdown); the other methods raise ``RuntimeError``
    when no loop runs in the calling thread.  In the loop, the methods
    first carry out the calls other threads queued before them.  Copying
    and pickling raise ``TypeError``.

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
        "shutdown_threadsafe"
    )

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
        # asyncio.Queue.put's wait for room; a thread's cancel or shutdown wakes it
        took = False
        while 0 < self._maxsize <= len(self._heap):
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_PUT)
            if self._must_look(WANT_ROOM, took):
                took = True
                self._take_calls()  # a thread's cancel may make room, its shutdown end the wait
                continue
            await park(self._get_loop(), self._putters, self._has_room)
            took = False
        return self._add(item, deadline)

    def _must_look(self, wants: int, took: bool) -> bool:
        """A waiter is about to park: True if the threads' calls must be taken in first.

        False: park.  The inbox then wakes the loop for a call of ``wants``,
        or the loop takes the calls on its next round, or a take-in under
        way further up this stack (whose callback started the waiter)
        listens for it when it ends.  True at most once per wait
        (``took``): a thread that keeps calling never keeps a waiter from
        parking, nor the loop from its other work.
        """
        inbox = self._inbox
        if inbox.taking or inbox.listen(wants):
            return False
        if not took:
            return True
        self._take_soon()
        return False

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
        took = False
        while True:
            if self._must_look(WANT_ITEM, took):  # a thread's call came since get_nowait looked
                took = True
                try:
                    return self.get_nowait()  # takes it in
                except QueueEmpty:
                    continue
            took = False
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
        if self._inbox.items:
            self._take_calls()
        return self._cancel(handle)

    def _cancel(self, handle: int) -> bool:
        # cancel, once the threads' calls before it were carried out
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
        if self._inbox.items:
            self._take_calls()
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
    # loop carries it out when it next looks (any method called in the loop)
    # or is woken.  It is woken only when someone waits on the Future
    # (_ThreadCall), or when a coroutine waits whose wait the call could end
    # (the wish a waiter about to park leaves in the inbox, as for
    # aio.PriorityQueue.put_threadsafe): a put wakes a waiting get, a cancel
    # or a shutdown a waiting get or put.  A producer that never looks at its
    # Futures costs the loop no wake-up.

    def _thread_loop(self) -> AbstractEventLoop:
        """The queue's loop, for a call from another thread: ``RuntimeError`` if none or closed."""
        loop = self._loop
        if loop is None:
            raise RuntimeError(f"{self!r} is not bound to an event loop yet: use it once on its loop first")
        if loop.is_closed():
            raise RuntimeError(LOOP_CLOSED)
        return loop

    def _call_threadsafe(
        self, kind: int, wants: int, args: tuple[Any, ...]
    ) -> concurrent.futures.Future[Any]:
        # queue the call; wake the loop if a waiter of ``wants`` asked for it
        call = _ThreadCall(self, kind, args)
        inbox = self._inbox
        inbox._lock()
        try:
            inbox.items.append(call)
            wanted = inbox.want
            if wanted & wants:
                inbox.want = 0  # the loop listens again for those still waiting
        finally:
            inbox._unlock()
        if wanted & wants:
            self._wake(call, wanted)
        return call

    def _wake(self, call: _ThreadCall, wanted: int = 0) -> None:
        """Have the loop take the calls in (``wanted``: the waiters' wish this call used)."""
        loop = self._loop
        assert loop is not None
        try:
            loop.call_soon_threadsafe(self._on_call_threadsafe)
        except BaseException as exc:  # the loop closed meanwhile: nothing half-done
            inbox = self._inbox
            inbox._lock()
            try:
                inbox.want |= wanted  # the waiters may still wait
                try:
                    inbox.items.remove(call)
                except ValueError:  # the loop took it in: it is done, or will be
                    return
            finally:
                inbox._unlock()
            error = RuntimeError(LOOP_CLOSED) if loop.is_closed() else exc
            if wanted:
                if error is exc:
                    raise
                raise error from exc
            call.set_exception(error)

    def _on_call_threadsafe(self) -> None:
        """In the loop, woken for the threads' calls: carry them out."""
        self._take_calls()

    def _on_take_soon(self) -> None:
        """In the loop, on the round after a look that found calls coming: carry them out."""
        self._inbox.soon = False
        self._take_calls()

    def _take_soon(self) -> None:
        """Have the loop carry the threads' calls out on its next round (once)."""
        inbox = self._inbox
        if not inbox.soon:
            loop = self._loop
            assert loop is not None
            inbox.soon = True
            loop.call_soon(self._on_take_soon)

    def _catch_up(self) -> None:
        """Carry out the threads' calls if called in the queue's loop (the sizes ask)."""
        loop = self._loop
        if loop is not None and _running_loop() is loop:
            self._take_calls()

    def _take_calls(self, finish: bool = False) -> None:
        """Carry out, in order, the calls other threads queued, settling their Futures.

        Bounded: the calls queued when it starts (one swap of the inbox),
        never those that come meanwhile (the loop takes them on its next
        round if a coroutine waits).  Called again from a Future's callback
        while it runs, it returns at once and the outer one goes on in
        order; with ``finish`` (a shutdown) it carries out the rest of the
        outer one's calls and those queued since first.  Then it listens
        for the waiters there are.
        """
        inbox = self._inbox
        if inbox.taking:
            if finish:
                self._run_calls()  # the outer one's calls, issued before the shutdown
                inbox.spare.clear()
                inbox.pos = 0
                inbox.swap()
                self._run_calls()  # and those queued since
            return
        inbox.taking = True
        try:
            inbox.swap()
            inbox.pos = 0
            self._run_calls()
        except BaseException:  # KeyboardInterrupt in a callback: the rest stay queued
            rest = inbox.spare[inbox.pos :]
            inbox._lock()
            try:
                inbox.items[:0] = rest
            finally:
                inbox._unlock()
            raise
        finally:
            inbox.spare.clear()
            inbox.pos = 0
            inbox.taking = False
        wants = (WANT_ITEM if self._getters else 0) | (WANT_ROOM if self._putters else 0)
        if wants and not inbox.listen(wants):
            self._take_soon()  # more came meanwhile: on the loop's next round

    def _run_calls(self) -> None:
        # the calls of the batch under way, from the shared position on: a
        # nested take-in (finish) goes on where the outer one is
        inbox = self._inbox
        while True:
            batch, i = inbox.spare, inbox.pos
            if i >= len(batch):
                return
            inbox.pos = i + 1
            batch[i].run()

    def put_threadsafe(self, item: T, delay: float = 0.0) -> concurrent.futures.Future[int]:
        """From any thread: ``put_nowait(item, delay)`` in the queue's loop, without waiting.

        Returns a ``concurrent.futures.Future`` of the handle (or of the
        ``QueueFull``/``QueueShutDown`` raised), settled when the loop takes
        the call in: at once if a ``get`` waits, else when the loop next
        looks at the queue or when the Future is waited on.  The delay
        counts from this call, on the loop's clock: ``loop.time()`` is read
        here, in the calling thread (asyncio's loops read
        ``time.monotonic()``, uvloop its own clock), so the item is never
        due early on ``loop.time()``.  ``RuntimeError`` if the queue has not
        been bound to a loop yet (nothing to read the time of), or its loop
        is closed (nothing is queued then).
        """
        d = _delay(delay)
        loop = self._thread_loop()
        return self._call_threadsafe(_PUT, WANT_ITEM, (item, d, loop.time()))

    def put_at_threadsafe(self, item: T, deadline: float) -> concurrent.futures.Future[int]:
        """From any thread: ``put_at_nowait(item, deadline)`` in the queue's loop, as ``put_threadsafe``."""
        d = to_real(deadline, "deadline")
        self._thread_loop()
        return self._call_threadsafe(_PUT_AT, WANT_ITEM, (item, d))

    def cancel_threadsafe(self, handle: int) -> concurrent.futures.Future[bool]:
        """From any thread: ``cancel(handle)`` in the queue's loop; a Future of its result.

        Wakes the loop if a ``get`` or a ``put`` waits (the cancel may end
        its wait), else as ``put_threadsafe``.
        """
        self._thread_loop()
        return self._call_threadsafe(_CANCEL, WANT_ITEM | WANT_ROOM, (handle,))

    def shutdown_threadsafe(self, immediate: bool = False) -> concurrent.futures.Future[None]:
        """From any thread: ``shutdown(immediate)`` in the queue's loop; a Future of its end.

        Wakes the loop if a ``get`` or a ``put`` waits (the shutdown may end
        its wait), else as ``put_threadsafe``.
        """
        self._thread_loop()
        return self._call_threadsafe(_SHUTDOWN, WANT_ITEM | WANT_ROOM, (immediate,))

    def _unbind_closed(self) -> bool:
        """Another loop asks: once the queue's loop is closed, forget it and say True.

        Its timer and waiters go (they can never run again); the calls
        threads queued for it settle with ``RuntimeError``, as when waited
        on after the loop closed.  The items stay, on their deadlines.
        """
        loop = self._loop
        if loop is None or not loop.is_closed():
            return False
        self._disarm()
        self._getters.clear()
        self._putters.clear()
        self._pending = 0
        inbox = self._inbox
        inbox._lock()
        try:
            inbox.want = 0
            calls = inbox.items[:]
            inbox.items.clear()
        finally:
            inbox._unlock()
        inbox.soon = False  # a take-in the closed loop had scheduled never runs
        for call in calls:
            call._nudged = True  # settling it must not try to wake the closed loop
            if call.set_running_or_notify_cancel():
                call.set_exception(RuntimeError(LOOP_CLOSED))
        return True

    # -- shutdown ---------------------------------------------------------------

    def shutdown(self, immediate: bool = False) -> None:
        """Shut the queue down: ``put`` raises ``QueueShutDown`` from now on.  O(n) if immediate.

        Waiting getters go on receiving items as they come due, then raise
        ``QueueShutDown``.  With ``immediate``, the items are dropped and
        every waiting and later ``get`` raises ``QueueShutDown`` at once.
        Waiting ``put`` calls raise ``QueueShutDown``.  The calls other
        threads queued before it are carried out first (their puts are kept).
        """
        self._in_own_loop()
        inbox = self._inbox
        if inbox.items or inbox.taking:
            self._take_calls(finish=True)
        self._shut(immediate)

    def _shut(self, immediate: bool) -> None:
        # shutdown, once the threads' calls before it were carried out
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
        inbox = self._inbox
        assert not inbox.taking and not inbox.spare and inbox.pos == 0, "a take-in left calls"
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

    def run(self) -> None:
        """In the loop: carry the call out and settle the Future (unless it was cancelled).

        Whatever the call raises settles the Future; a ``BaseException``
        (``KeyboardInterrupt``) then goes on up.
        """
        self._nudged = True  # taken in: waiting on it wakes nothing any more
        if not self.set_running_or_notify_cancel():
            return
        queue = self._queue
        kind, args = self._kind, self._args
        self._args = ()
        try:
            if kind == _PUT:
                item, delay, now = args
                # the call's time on the loop's clock, never before an earlier
                # put's: equal delays come out in call order
                inbox = queue._inbox
                base = max(now, inbox.floor)
                inbox.floor = base
                result: Any = queue.put_at_nowait(item, base + delay)
            elif kind == _PUT_AT:
                result = queue.put_at_nowait(*args)
            elif kind == _CANCEL:
                result = queue._cancel(*args)
            else:
                queue._shut(*args)
                result = None
        except BaseException as exc:
            self.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            self.set_result(result)
