"""What the asyncio queues share: their exceptions, loop binding and waking.

Waiting follows ``asyncio/queues.py``: a waiting coroutine parks on a future
of its own in a deque; ``wakeup_next`` completes the first one not already
done (cancelled waiters can sit in the deque until their task runs its
``except`` clause).  Nothing here starts a thread or blocks the loop.
"""

from __future__ import annotations

import asyncio
import operator
from asyncio import Future, QueueEmpty, QueueFull
from collections import deque
from typing import Any, NoReturn, Optional

__all__ = [
    "QueueEmpty", "QueueFull", "QueueShutDown", "LoopBound", "wakeup_next", "wakeup_all",
    "check_maxsize",
]

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


def wakeup_all(waiters: deque[Future[None]]) -> None:
    """Complete every waiter not done yet and empty the deque."""
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)


def check_maxsize(maxsize: object) -> int:
    """``maxsize`` as an int (0 or less: unbounded), or ``TypeError`` naming it."""
    if not hasattr(type(maxsize), "__index__"):
        raise TypeError(f"maxsize must be an int, not {type(maxsize).__name__!r}")
    return operator.index(maxsize)  # type: ignore[arg-type]


class LoopBound:
    """Binds an object to the first event loop it waits on, as asyncio's queues do.

    Also refuses copy and pickle: the object owns the futures of waiting tasks.
    """

    __slots__ = ("_loop",)
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
