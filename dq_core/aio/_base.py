"""What the asyncio faces share: loop binding and parking a waiting coroutine.

Waiting follows ``asyncio/queues.py``: a waiting coroutine parks on a future
of its own in a deque; ``wakeup_next`` (``dq_core._aiowaiting``, shared with
the cores) completes the first one not already done (cancelled waiters can
sit in the deque until their task runs its ``except`` clause).  Nothing here
starts a thread or blocks the loop.
"""

from __future__ import annotations

import asyncio
from asyncio import Future
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional

from .._aiowaiting import MAX_ARM, wakeup_next

__all__ = ["LoopBound", "park", "MAX_ARM"]


async def park(
    loop: asyncio.AbstractEventLoop, waiters: deque[Future[None]], pass_on: Callable[[], bool]
) -> None:
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


class LoopBound:
    """Binds an object to the first event loop it waits on, as asyncio's queues do.

    Also refuses copy and pickle: the object owns the futures of waiting tasks.
    The ``_loop`` slot itself is the subclass's: the queues' cores
    (``dq_core._aioqueuecore``) hold it, and RateLimiter and PriorityTaskPool list it.
    """

    if not TYPE_CHECKING:  # the core's slot holds _loop, which mypy would refuse here
        __slots__ = ()
    _loop: Optional[asyncio.AbstractEventLoop]

    #: The message of the RuntimeError raised where no event loop runs
    #: (empty: asyncio's own); a class says there how to reach it from another thread.
    _NO_LOOP = ""

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        """The running loop; ``RuntimeError`` if none runs or it is not the one bound."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if not self._NO_LOOP:
                raise
            raise RuntimeError(self._NO_LOOP) from None
        if loop is not self._loop:
            if self._loop is not None and not self._unbind_closed():
                raise RuntimeError(f"{self!r} is bound to a different event loop")
            self._loop = loop
        return loop

    def _unbind_closed(self) -> bool:
        """Another loop asks: True if the object may bind to it (its loop closed), else False.

        The queues override it: once their loop is closed they drop what
        belonged to it (waiters, timer) and bind to the next loop.
        """
        return False

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(
            f"cannot pickle or copy {type(self).__name__!r} object: "
            "it owns the futures of the tasks waiting on it"
        )
