"""dq_core: fast, trustworthy scheduling data structures.

``import dq_core`` uses the compiled core when it is built and falls back to
the pure-Python twin otherwise; ``dq_core.implementation`` says which.
Setting ``DQ_CORE_NO_EXTENSIONS`` to any non-empty value forces pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._compat import USE_EXT, implementation
from ._exceptions import Empty, Full, ShutDown
from ._delayqueue import DelayQueue
from ._executor import PriorityExecutor
from ._queues import PriorityQueue
from ._ratelimit import RateLimiter
from ._timer import Timer, TimerHandle
from ._ttldict import TTLDict

if TYPE_CHECKING or not USE_EXT:
    from ._heap_py import Heap
    from ._ring_py import TTLRing
    from ._wheel_py import TimingWheel
else:
    from ._heap import Heap
    from ._ring import TTLRing
    from ._wheel import TimingWheel

__all__ = [
    "DelayQueue", "Empty", "Full", "Heap", "PriorityExecutor", "PriorityQueue", "RateLimiter",
    "ShutDown", "TTLDict", "TTLRing", "Timer", "TimerHandle", "TimingWheel",
    "implementation",
]
__version__ = "0.1.0"
