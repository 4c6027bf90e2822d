"""dq_core.aio: dq_core's queues for asyncio, on the same compiled cores.

``PriorityQueue`` is a drop-in for :class:`asyncio.PriorityQueue` (Python
3.13 semantics on every supported Python); ``DelayQueue`` hands out items
once their deadline on the loop's clock has passed, with one loop timer per
queue.  Both work on the default loop and on uvloop, never block the loop
and start no thread.  ``QueueEmpty`` and ``QueueFull`` are asyncio's own
classes; ``QueueShutDown`` is asyncio's on Python >= 3.13 and a dq_core
class (a subclass of ``Exception``) before.  ``Timer`` keeps loop timers on
a TimingWheel with one ``loop.call_at`` per wheel; ``timeout``/``timeout_at``
are ``asyncio.timeout``/``timeout_at`` armed on it.  ``RateLimiter`` is the
threaded token bucket for coroutines (first come, first served, no polling);
``PriorityTaskPool`` starts coroutines lowest priority first under a
concurrency limit and a rate.
"""

from __future__ import annotations

from asyncio import QueueEmpty, QueueFull
from typing import TYPE_CHECKING, Any

from .._aiowaiting import QueueShutDown
from .._inuse import provide
from ._timer import Timeout, default_timer, timeout, timeout_at

if TYPE_CHECKING:  # the faces are the type source of both implementations
    from .._aiotimercore_py import TimerHandle
    from ._delayqueue import DelayQueue
    from ._priorityqueue import PriorityQueue
    from ._prioritytaskpool import PriorityTaskPool
    from ._ratelimiter import RateLimiter
    from ._timer import Timer

__all__ = [
    "DelayQueue",
    "PriorityQueue",
    "PriorityTaskPool",
    "QueueEmpty",
    "QueueFull",
    "QueueShutDown",
    "RateLimiter",
    "Timeout",
    "Timer",
    "TimerHandle",
    "default_timer",
    "timeout",
    "timeout_at",
]

_CLASSES = ("DelayQueue", "PriorityQueue", "PriorityTaskPool", "RateLimiter", "Timer", "TimerHandle")


def __getattr__(name: str) -> Any:
    # The classes are built by dq_core._assemble, which imports this package
    # to find their faces: they are looked up on first use, not at import.
    if name in _CLASSES:
        from .._assemble import aio_classes
        from .._compat import implementation

        value = getattr(aio_classes(implementation), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _timer_class() -> Any:
    return __getattr__("Timer")


provide("aio.Timer", _timer_class)  # default_timer() makes one; its module, a face, cannot import this


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
