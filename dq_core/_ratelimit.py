"""RateLimiter: a token bucket with lazy refill, exact under a fake clock.

No background thread: the tokens available at time ``now`` are computed
from a reference point, ``(now - ref) * rate - granted``, so no float error
piles up over millions of calls.  ``acquire`` reserves its tokens at once
(first come, first served) and sleeps until they exist, so waiting threads
never race each other for permits.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from ._convert import to_real
from ._waiting import check_timeout

__all__ = ["RateLimiter"]

# Relative slack for float rounding in "are k tokens there yet?": far below
# anything a clock can measure, far above one ulp of the products involved.
_EPS = 1e-9


def _positive(value: object, name: str) -> float:
    x = to_real(value, name)
    if not x > 0 or x == float("inf"):
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    return x


class RateLimiter:
    """Token bucket: ``rate`` tokens per second, at most ``burst`` stored; starts full.

    Thread-safe.  ``try_acquire`` never waits; ``acquire`` waits (in real
    time, whatever the clock) until its tokens exist, in the order callers
    arrived, or returns False at once if that would take longer than
    ``timeout``.

    >>> now = [0.0]
    >>> lim = RateLimiter(rate=2, burst=2, clock=lambda: now[0])
    >>> lim.try_acquire(), lim.try_acquire(), lim.try_acquire()
    (True, True, False)
    >>> now[0] = 0.5; lim.try_acquire()
    True
    """

    __slots__ = ("rate", "burst", "_clock", "_lock", "_ref", "_granted", "__weakref__")

    def __init__(self, rate: float, burst: float = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = _positive(rate, "rate")
        self.burst = _positive(burst, "burst")
        self._clock = clock
        self._lock = threading.Lock()
        # tokens(now) = (now - _ref) * rate - _granted, capped at burst
        self._ref = clock() - self.burst / self.rate
        self._granted = 0.0

    def _tokens(self, tokens: object) -> float:
        k = _positive(tokens, "tokens")
        if k > self.burst:
            raise ValueError(f"tokens ({k!r}) must not exceed burst ({self.burst!r})")
        return k

    def _refill(self, now: float) -> float:
        """Tokens available at ``now``; re-anchors the reference when full."""
        avail = (now - self._ref) * self.rate - self._granted
        if avail >= self.burst:
            # Full: forget the past, so a long idle spell cannot bank tokens.
            self._ref = now - self.burst / self.rate
            self._granted = 0.0
            return self.burst
        return avail

    def try_acquire(self, tokens: float = 1) -> bool:
        """Take ``tokens`` if they are there now; True if taken.  O(1)."""
        k = self._tokens(tokens)
        with self._lock:
            if self._refill(self._clock()) >= k * (1 - _EPS):
                self._granted += k
                return True
            return False

    def acquire(self, tokens: float = 1, timeout: Optional[float] = None) -> bool:
        """Take ``tokens``, waiting until they exist; False if that exceeds ``timeout``.

        Tokens are reserved at once, so callers are served in arrival order.
        """
        k = self._tokens(tokens)
        if timeout is not None:
            check_timeout(timeout)
        with self._lock:
            now = self._clock()
            avail = self._refill(now)
            wait = 0.0 if avail >= k * (1 - _EPS) else (k - avail) / self.rate
            if timeout is not None and wait > timeout:
                return False
            self._granted += k  # reserved: later callers queue behind it
        if wait > 0:
            time.sleep(wait)
        return True

    def __repr__(self) -> str:
        with self._lock:
            avail = min(self.burst, (self._clock() - self._ref) * self.rate - self._granted)
        return f"<RateLimiter rate={self.rate!r} burst={self.burst!r} available={avail:.3g}>"
