"""dq_core: fast, trustworthy scheduling data structures.

``import dq_core`` uses the compiled core when it is built and falls back to
the pure-Python twin otherwise; ``dq_core.implementation`` says which.
Setting ``DQ_CORE_NO_EXTENSIONS`` to any non-empty value forces pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._compat import implementation
from ._exceptions import Empty, Full, ShutDown
from ._ratelimiter import RateLimiter
from ._timer import TimerHandle

if TYPE_CHECKING:  # the pure classes are the type source of both implementations
    from ._delayqueue import DelayQueue
    from ._heapcore_py import Heap
    from ._priorityexecutor import PriorityExecutor
    from ._priorityqueue import PriorityQueue
    from ._ringcore_py import TTLRing
    from ._timer import Timer
    from ._ttldict import TTLDict
    from ._wheelcore_py import TimingWheel
    from ._wheelttldict import WheelTTLDict

    def cached(
        ttl: object = None,
        maxsize: int | None = 128,
        *,
        typed: bool = False,
        key: object = None,
        cache: object = None,
    ) -> object: ...
else:
    from ._assemble import classes
    from ._pickling import publish

    _classes = classes(implementation)
    publish(_classes._asdict())  # what unpickling rebuilds: the classes in use
    Heap = _classes.Heap
    PriorityQueue = _classes.PriorityQueue
    DelayQueue = _classes.DelayQueue
    TimingWheel = _classes.TimingWheel
    Timer = _classes.Timer
    TTLRing = _classes.TTLRing
    TTLDict = _classes.TTLDict
    PriorityExecutor = _classes.PriorityExecutor
    WheelTTLDict = _classes.WheelTTLDict
    cached = _classes.cached
    del _classes, classes, publish

__all__ = [
    "DelayQueue",
    "Empty",
    "Full",
    "Heap",
    "PriorityExecutor",
    "PriorityQueue",
    "RateLimiter",
    "ShutDown",
    "TTLDict",
    "TTLRing",
    "Timer",
    "TimerHandle",
    "TimingWheel",
    "WheelTTLDict",
    "cached",
    "implementation",
]
__version__ = "0.1.0"
