"""What the asyncio queues share: their exceptions, loop binding and waking.

Waiting follows ``asyncio/queues.py``: a waiting coroutine parks on a future
of its own in a deque; ``wakeup_next`` completes the first one not already
done (cancelled waiters can sit in the deque until their task runs its
``except`` clause).  Nothing here starts a thread or blocks the loop.
"""

from __future__ import annotations

import asyncio
from asyncio import Future, QueueEmpty, QueueFull, TimerHandle
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional, Protocol, TypeVar

from .._validate import check_maxsize

__all__ = [
    "QueueEmpty", "QueueFull", "QueueShutDown", "LoopBound", "LoopTimer", "delay_get", "park",
    "queue_get", "unstarted", "wakeup_next", "wakeup_all", "check_maxsize", "MAX_ARM",
]

#: The longest a loop timer is armed ahead (RateLimiter; the DelayQueue and
#: Timer cores keep the same value as their own ``MAX_ARM``): a later deadline
#: re-arms on firing, since some loops (uvloop) refuse a far or infinite ``call_at``.
MAX_ARM = 86400.0

if hasattr(asyncio, "QueueShutDown"):  # Python >= 3.13
    QueueShutDown = asyncio.QueueShutDown
else:

    class QueueShutDown(Exception):  # type: ignore[no-redef]
        """Raised when putting on to or getting from a shut-down Queue."""

    QueueShutDown.__module__ = "dq_core.aio"


def wakeup_next(waiters: deque[Future[None]]) -> bool:
    """Complete the first waiter not done yet (as asyncio's ``_wakeup_next``); True if one was."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
            return True
    return False


async def park(loop: asyncio.AbstractEventLoop, waiters: deque[Future[None]],
               pass_on: Callable[[], bool]) -> None:
    """Wait on a future of our own in ``waiters`` until woken, as asyncio's put/get wait.

    If the wait ends by an exception (cancellation, a timeout) after we were
    woken, and ``pass_on()`` says what we were woken for is still there, the
    wake-up goes to the next waiter: a cancelled waiter never swallows it.
    """
    waiter = loop.create_future()
    waiters.append(waiter)
    try:
        await waiter
    except:  # noqa: E722 -- as asyncio: also on cancellation
        waiter.cancel()  # in case it is not done yet
        try:
            waiters.remove(waiter)
        except ValueError:  # removed when woken, or by shutdown
            pass
        if pass_on() and not waiter.cancelled():
            wakeup_next(waiters)
        raise


T_co = TypeVar("T_co", covariant=True)


class _DueSource(Protocol[T_co]):
    def get_nowait(self) -> T_co: ...
    async def _wait_get(self) -> T_co: ...


class _ItemSource(Protocol[T_co]):
    def empty(self) -> bool: ...
    def get_nowait(self) -> T_co: ...
    async def _wait_get(self) -> T_co: ...


async def queue_get(self: _ItemSource[T_co]) -> T_co:
    """Remove and return the lowest item, waiting until there is one.  O(log n).

    Raises ``QueueShutDown`` if the queue has been shut down and is
    empty, or shut down immediately.
    """
    # aio.PriorityQueue's get: the pure core's, and the face's from Python 3.12.
    # From 3.12 the interpreter runs a Python coroutine awaited by another in
    # a frame of its own and hands its result over with no exception object,
    # while a compiled coroutine (the core's, src/_await.pxd) must return its
    # result in a StopIteration there, which costs more than the rest of a get.
    # Before 3.12 the compiled coroutine's am_send returns it and is the
    # faster.  put returns None, which needs no StopIteration: the core's
    # everywhere.  The same holds for delay_get below.
    if self.empty():  # as asyncio's get (a method call is cheaper than reading _heap)
        return await self._wait_get()  # the face's: waits on the loop
    return self.get_nowait()


async def delay_get(self: _DueSource[T_co]) -> T_co:
    """Remove and return the earliest-due item, waiting until one is due.  O(log n).

    Raises ``QueueShutDown`` once the queue is shut down and holds no
    item, or at once after an immediate shutdown.
    """
    # aio.DelayQueue's get: the pure core's, and the face's from Python 3.12
    # (see queue_get); the compiled core has its own before 3.12
    try:
        return self.get_nowait()  # QueueShutDown once shut down and empty
    except QueueEmpty:
        pass
    return await self._wait_get()  # the face's: waits on the loop


async def unstarted() -> None:
    """A coroutine never started: the compiled put/get throw into one in place of their own."""
    # (dq_core._aioqueue: an exception thrown into a compiled put() or get()
    # that has not started is raised as CPython raises it in a coroutine)


def wakeup_all(waiters: deque[Future[None]]) -> None:
    """Complete every waiter not done yet and empty the deque."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)


class LoopBound:
    """Binds an object to the first event loop it waits on, as asyncio's queues do.

    Also refuses copy and pickle: the object owns the futures of waiting tasks.
    The ``_loop`` slot itself is the subclass's: the queues' cores
    (``dq_core._aioqueue``) hold it, and RateLimiter and PriorityTaskPool list it.
    """

    if not TYPE_CHECKING:  # the core's slot holds _loop, which mypy would refuse here
        __slots__ = ()
    _loop: Optional[asyncio.AbstractEventLoop]

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        """The running loop; ``RuntimeError`` if none runs or it is not the one bound."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            if self._loop is not None:
                raise RuntimeError(f"{self!r} is bound to a different event loop")
            self._loop = loop
        return loop

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(
            f"cannot pickle or copy {type(self).__name__!r} object: "
            "it owns the futures of the tasks waiting on it")


class LoopTimer:
    """The one loop timer of an object that waits on the loop's clock (a mixin).

    ``_arm(loop, when)`` keeps a single ``loop.call_at`` armed, re-armed
    only when ``when`` changes; when it fires, ``_on_due()`` runs, which
    re-reads the clock (a loop may fire up to its clock resolution early)
    and arms again or wakes.  The ``_timer`` and ``_timer_when`` slots are
    the subclass's (the pure DelayQueue core, RateLimiter); the compiled
    DelayQueue core does the same in C.
    """

    if not TYPE_CHECKING:  # the subclasses' slots hold them
        __slots__ = ()
    _timer: Optional[TimerHandle]
    _timer_when: float

    def _on_due(self) -> None:
        """What the timer firing runs: the subclass's."""
        raise NotImplementedError

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        """Have the timer fire at ``when`` on ``loop.time()``: re-armed only if it changes."""
        timer = self._timer
        if timer is not None:
            if self._timer_when == when:
                return
            timer.cancel()
        self._timer = loop.call_at(when, self._on_timer)
        self._timer_when = when

    def _on_timer(self, /) -> None:
        """The timer fired: re-read the clock (never wake early) and wake or re-arm."""
        self._timer = None
        self._on_due()

    def _disarm(self, /) -> None:
        """Cancel the timer, if armed."""
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()
