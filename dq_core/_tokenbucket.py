"""TokenBucket: the arithmetic of a token bucket, without a clock, a lock or waiting.

Below both rate limiters (``dq_core.RateLimiter`` on threads,
``dq_core.aio.RateLimiter`` on the loop's clock) and both pools, which
share it rather than reach into each other's module.  The tokens available
at time ``now`` are computed from the last time the bucket was full,
``burst + (now - full_at) * rate - granted``, so no float error piles up
over millions of calls, and nothing overflows however small the rate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ._convert import at_least, to_real

__all__ = ["TokenBucket", "positive", "task_burst"]

# Relative slack for float rounding in "are k tokens there yet?": far below
# anything a clock can measure, far above one ulp of the products involved.
_EPS = 1e-9


def positive(value: object, name: str) -> float:
    x = to_real(value, name)
    if not x > 0 or x == float("inf"):
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    return x


def task_burst(burst: object) -> float:
    """``burst`` of a pool whose tasks take one token each: a number of at least 1."""
    return at_least(positive(burst, "burst"), 1.0, "burst", "at least 1 (each task takes one token)")


class TokenBucket:
    """The arithmetic of a token bucket read at times the caller passes in.

    ``rate`` tokens per second, at most ``burst`` stored.  A subclass
    declares the slots ``_rate``, ``_burst``, ``_full_at`` and ``_granted``
    and brings the clock, the locking and the waiting; it implements
    ``_retune(rate, burst)``, which the ``rate`` and ``burst`` setters call
    with validated values.  Nothing here calls user code.
    """

    if TYPE_CHECKING:  # the subclass's slots
        _rate: float
        _burst: float
        _full_at: float
        _granted: float
    else:
        __slots__ = ()

    def _start(self, rate: object, burst: object, now: float) -> None:
        """Set up a full bucket at ``now`` (``-inf``: full whenever first read)."""
        self._rate = positive(rate, "rate")
        self._burst = positive(burst, "burst")
        # tokens(now) = burst + (now - _full_at) * rate - _granted, capped at burst
        self._full_at = now
        self._granted = 0.0

    @property
    def rate(self) -> float:
        """Tokens added per second: a positive finite number."""
        return self._rate

    @rate.setter
    def rate(self, rate: float) -> None:
        self._retune(positive(rate, "rate"), self._burst)

    @property
    def burst(self) -> float:
        """The most tokens stored: a positive finite number."""
        return self._burst

    @burst.setter
    def burst(self, burst: float) -> None:
        self._retune(self._rate, positive(burst, "burst"))

    def _retune(self, rate: float, burst: float) -> None:
        raise NotImplementedError

    def _set(self, now: float, rate: float, burst: float) -> None:
        """New ``rate`` and ``burst`` keeping the tokens available at ``now`` (capped at burst)."""
        avail = self._refill(now)
        self._rate = rate
        self._burst = burst
        # Re-anchor at now with what was there.
        self._full_at = now
        self._granted = burst - min(avail, burst)

    def _refill(self, now: float) -> float:
        """Tokens available at ``now``; re-anchors the reference when full."""
        avail = self._burst + (now - self._full_at) * self._rate - self._granted
        if avail >= self._burst:
            # Full: forget the past, so a long idle spell cannot bank tokens.
            self._full_at = now
            self._granted = 0.0
            return self._burst
        return avail

    def _available(self, now: float) -> float:
        """Tokens available at ``now``, changing nothing (for repr)."""
        return min(self._burst, self._burst + (now - self._full_at) * self._rate - self._granted)

    def _check_tokens(self, k: float) -> None:
        if k > self._burst:
            raise ValueError(f"tokens ({k!r}) must not exceed burst ({self._burst!r})")

    def _has(self, now: float, k: float) -> bool:
        """Whether ``k`` tokens are there at ``now``."""
        return self._refill(now) >= k * (1 - _EPS)

    def _wait(self, now: float, k: float) -> float:
        """Seconds from ``now`` until ``k`` tokens exist (0.0 if they do); ``inf`` for never."""
        avail = self._refill(now)
        if avail >= k * (1 - _EPS):
            return 0.0
        return (k - avail) / self._rate

    def _whole(self, now: float) -> int:
        """How many one-token acquisitions would succeed at ``now`` (changing nothing)."""
        return max(0, math.floor(self._available(now) + _EPS))

    def _repr(self, now: float) -> str:
        return (
            f"<{type(self).__name__} rate={self._rate!r} burst={self._burst!r} "
            f"available={self._available(now):.3g}"
        )
