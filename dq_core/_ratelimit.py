"""RateLimiter: a token bucket with lazy refill, exact under a fake clock.

No background thread: the tokens available at time ``now`` are computed
from the last time the bucket was full, ``burst + (now - full_at) * rate -
granted``, so no float error piles up over millions of calls, and nothing
overflows however small the rate (no ``burst / rate``).  ``acquire``
reserves its tokens at once (first come, first served) and sleeps until they
exist, so waiting threads never race each other for permits.  The clock is
read before the lock is taken: user code never runs under it, and a reading
that is already stale only makes a caller wait a little longer.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from ._convert import to_real
from ._waiting import Uncopyable, check_clock, check_timeout, read_clock, sleep

__all__ = ["RateLimiter"]

# Relative slack for float rounding in "are k tokens there yet?": far below
# anything a clock can measure, far above one ulp of the products involved.
_EPS = 1e-9


def _positive(value: object, name: str) -> float:
    x = to_real(value, name)
    if not x > 0 or x == float("inf"):
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    return x


class RateLimiter(Uncopyable):
    """Token bucket: ``rate`` tokens per second, at most ``burst`` stored; starts full.

    Thread-safe.  ``try_acquire`` never waits; ``acquire`` waits (in real
    time, whatever the clock) until its tokens exist, in the order callers
    arrived, or returns False at once if that would take longer than
    ``timeout``.  Tokens may be fractional; asking for more than ``burst``
    at once can never succeed and raises ``ValueError``.  Setting ``rate``
    or ``burst`` keeps the tokens available now (capped at the new burst).
    A RateLimiter cannot be copied or pickled.

    >>> now = [0.0]
    >>> lim = RateLimiter(rate=2, burst=2, clock=lambda: now[0])
    >>> lim.try_acquire(), lim.try_acquire(), lim.try_acquire()
    (True, True, False)
    >>> now[0] = 0.5; lim.try_acquire()
    True
    """

    __slots__ = ("_rate", "_burst", "_clock", "_lock", "_full_at", "_granted", "__weakref__")

    def __init__(self, rate: float, burst: float = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._rate = _positive(rate, "rate")
        self._burst = _positive(burst, "burst")
        check_clock(clock)
        self._clock = clock
        self._lock = threading.Lock()
        # tokens(now) = burst + (now - _full_at) * rate - _granted, capped at burst
        self._full_at = read_clock(clock)
        self._granted = 0.0

    @property
    def rate(self) -> float:
        """Tokens added per second: a positive finite number."""
        return self._rate

    @rate.setter
    def rate(self, rate: float) -> None:
        r = _positive(rate, "rate")
        now = read_clock(self._clock)
        with self._lock:
            self._rebase(now, self._refill(now))
            self._rate = r

    @property
    def burst(self) -> float:
        """The most tokens stored: a positive finite number."""
        return self._burst

    @burst.setter
    def burst(self, burst: float) -> None:
        b = _positive(burst, "burst")
        now = read_clock(self._clock)
        with self._lock:
            avail = self._refill(now)
            self._burst = b
            self._rebase(now, min(avail, b))

    def _rebase(self, now: float, avail: float) -> None:
        # Re-anchor at now with avail tokens there (lock held).
        self._full_at = now
        self._granted = self._burst - avail

    def _refill(self, now: float) -> float:
        """Tokens available at ``now``; re-anchors the reference when full (lock held)."""
        avail = self._burst + (now - self._full_at) * self._rate - self._granted
        if avail >= self._burst:
            # Full: forget the past, so a long idle spell cannot bank tokens.
            self._full_at = now
            self._granted = 0.0
            return self._burst
        return avail

    def _check_tokens(self, k: float) -> None:
        if k > self._burst:
            raise ValueError(f"tokens ({k!r}) must not exceed burst ({self._burst!r})")

    def try_acquire(self, tokens: float = 1) -> bool:
        """Take ``tokens`` if they are there now; True if taken.  O(1)."""
        k = _positive(tokens, "tokens")
        now = read_clock(self._clock)
        with self._lock:
            self._check_tokens(k)
            if self._refill(now) >= k * (1 - _EPS):
                self._granted += k
                return True
            return False

    def acquire(self, tokens: float = 1, timeout: Optional[float] = None) -> bool:
        """Take ``tokens``, waiting until they exist; False if that exceeds ``timeout``.

        Tokens are reserved at once, so callers are served in arrival order.
        A wait too long for any timeout (a tiny ``rate``) waits forever.
        """
        k = _positive(tokens, "tokens")
        limit = None if timeout is None else check_timeout(timeout)
        now = read_clock(self._clock)
        with self._lock:
            self._check_tokens(k)
            avail = self._refill(now)
            wait = 0.0 if avail >= k * (1 - _EPS) else (k - avail) / self._rate
            if limit is not None and wait > limit:
                return False
            self._granted += k  # reserved: later callers queue behind it
        if wait > 0:
            sleep(wait)
        return True

    def __repr__(self) -> str:
        now = read_clock(self._clock)
        with self._lock:
            avail = min(self._burst,
                        self._burst + (now - self._full_at) * self._rate - self._granted)
        return f"<RateLimiter rate={self._rate!r} burst={self._burst!r} available={avail:.3g}>"
