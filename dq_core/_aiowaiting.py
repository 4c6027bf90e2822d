"""Futures parked in waiter deques, as ``asyncio/queues.py`` parks them.

What the asyncio cores (compiled and pure) and the asyncio faces share:
``QueueShutDown``, waking the first or every waiter, the ``get`` coroutines
of the queues, the one loop timer of an object that waits on the loop's
clock, and the unstarted coroutine the compiled put/get stand in for.  A
leaf module: it imports nothing of dq_core, so a core can use it without
reaching up to a face.  Nothing here starts a thread or blocks the loop.
"""

from __future__ import annotations

import asyncio
from asyncio import Future, QueueEmpty, TimerHandle
from collections import deque
from typing import TYPE_CHECKING, Any, Optional, Protocol, TypeVar

__all__ = [
    "LOOP_CLOSED",
    "LoopTimer",
    "MAX_ARM",
    "QueueShutDown",
    "WANT_ITEM",
    "WANT_ROOM",
    "delay_get",
    "queue_get",
    "report_unqueued",
    "unstarted",
    "wakeup_all",
    "wakeup_next",
]

#: What a ``*_threadsafe`` method raises (``RuntimeError``) once the queue's loop is closed.
LOOP_CLOSED = "the queue's event loop is closed"

#: What a waiter about to park asks of its queue's inbox (``_Inbox.listen``):
#: that the next call of another thread that could end its wait wake the loop.
#: A getter waits (a put ends it), a putter waits (a DelayQueue's cancel or
#: shutdown from a thread may end it).
WANT_ITEM = 1
WANT_ROOM = 2

#: The longest a loop timer is armed ahead (the RateLimiter, and the DelayQueue
#: and Timer cores of both implementations): a later deadline re-arms on
#: firing, since some loops (uvloop) refuse a far or infinite ``call_at``.
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
    # (dq_core._aioqueuecore: an exception thrown into a compiled put() or get()
    # that has not started is raised as CPython raises it in a coroutine)


def report_unqueued(
    queue: object, loop: Optional[asyncio.AbstractEventLoop], failed: list[tuple[Any, Exception]]
) -> None:
    """Items put from other threads whose comparison raised when the loop took them in.

    Each goes to the exception handler of ``loop`` (the queue's), or of the
    running loop if the queue is bound to none; with no loop at all, the
    first one's exception is raised (the others are dropped as well).
    """
    if loop is None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise failed[0][1] from None
    for item, exc in failed:
        loop.call_exception_handler(
            {
                "message": "Exception when the queue took in an item put_threadsafe() gave it; "
                "the item was dropped",
                "exception": exc,
                "item": item,
                "queue": queue,
            }
        )


def wakeup_all(waiters: deque[Future[None]]) -> None:
    """Complete every waiter not done yet and empty the deque."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)


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
