"""RateLimiter: a token bucket with lazy refill, exact under a fake clock.

No background thread: the tokens available at time ``now`` are computed
from the last time the bucket was full, ``burst + (now - full_at) * rate -
granted``, so no float error piles up over millions of calls, and nothing
overflows however small the rate (no ``burst / rate``).  Waiting threads
form a line (first come, first served): only its head sleeps, until its
tokens should exist, and it takes them when it wakes, after reading the
clock again.  A head that wakes late (the GIL held elsewhere, an OS delay)
therefore finds the bucket capped at ``burst`` and leaves the next tokens
for later: starts never bunch past the burst, as they would if each waiter
spent a reservation made for an instant already past.  The clock is read
before the lock is taken: user code never runs under it, and a reading that
is already stale only makes a caller wait a little longer.

``TokenBucket`` is that arithmetic alone, without a clock, a lock or any
waiting; ``dq_core.aio.RateLimiter`` runs the same bucket on the loop's clock.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Callable, Optional

from ._convert import at_least, to_real
from ._pickling import Uncopyable
from ._validate import check_clock, check_timeout, read_clock
from ._waiting import sleep

__all__ = ["RateLimiter", "TokenBucket"]

# Relative slack for float rounding in "are k tokens there yet?": far below
# anything a clock can measure, far above one ulp of the products involved.
_EPS = 1e-9


def _positive(value: object, name: str) -> float:
    x = to_real(value, name)
    if not x > 0 or x == float("inf"):
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    return x


def task_burst(burst: object) -> float:
    """``burst`` of a pool whose tasks take one token each: a number of at least 1."""
    return at_least(_positive(burst, "burst"), 1.0, "burst", "at least 1 (each task takes one token)")


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
        self._rate = _positive(rate, "rate")
        self._burst = _positive(burst, "burst")
        # tokens(now) = burst + (now - _full_at) * rate - _granted, capped at burst
        self._full_at = now
        self._granted = 0.0

    @property
    def rate(self) -> float:
        """Tokens added per second: a positive finite number."""
        return self._rate

    @rate.setter
    def rate(self, rate: float) -> None:
        self._retune(_positive(rate, "rate"), self._burst)

    @property
    def burst(self) -> float:
        """The most tokens stored: a positive finite number."""
        return self._burst

    @burst.setter
    def burst(self, burst: float) -> None:
        self._retune(self._rate, _positive(burst, "burst"))

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
        return (f"<{type(self).__name__} rate={self._rate!r} burst={self._burst!r} "
                f"available={self._available(now):.3g}")


class RateLimiter(Uncopyable, TokenBucket):
    """Token bucket: ``rate`` tokens per second, at most ``burst`` stored; starts full.

    Thread-safe.  ``try_acquire`` never waits; ``acquire`` waits (in real
    time, whatever the clock) until its tokens exist, in the order callers
    arrived, or returns False at once if that would take longer than
    ``timeout``; a waiter takes its tokens when it wakes, so one that wakes
    late never lets the next start early.  Tokens may be fractional; asking for more than ``burst``
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

    __slots__ = ("_rate", "_burst", "_clock", "_lock", "_full_at", "_granted", "_line", "_queued",
                 "__weakref__")

    def __init__(self, rate: float, burst: float = 1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        r, b = _positive(rate, "rate"), _positive(burst, "burst")
        check_clock(clock)
        self._clock = clock
        self._lock = threading.Lock()
        # The waiting threads, first come first served: each a lock its
        # predecessor releases when it leaves; the head alone sleeps.
        self._line: deque[threading.Lock] = deque()
        self._queued = 0.0  # the tokens the line asks for
        self._start(r, b, read_clock(clock))

    def _retune(self, rate: float, burst: float) -> None:
        now = read_clock(self._clock)
        with self._lock:
            self._set(now, rate, burst)

    def try_acquire(self, tokens: float = 1) -> bool:
        """Take ``tokens`` if they are there now; True if taken.  O(1)."""
        k = _positive(tokens, "tokens")
        now = read_clock(self._clock)
        with self._lock:
            self._check_tokens(k)
            if not self._line and self._has(now, k):  # never ahead of a waiter
                self._granted += k
                return True
            return False

    def acquire(self, tokens: float = 1, timeout: Optional[float] = None) -> bool:
        """Take ``tokens``, waiting until they exist; False if that exceeds ``timeout``.

        Callers are served in arrival order; each takes its tokens when it
        wakes, after reading the clock again.  The wait is estimated on
        arrival (the tokens of those ahead, then its own); a wait too long
        for any timeout (a tiny ``rate``) waits forever.
        """
        k = _positive(tokens, "tokens")
        limit = None if timeout is None else check_timeout(timeout)
        now = read_clock(self._clock)
        line = self._line
        with self._lock:
            self._check_tokens(k)
            if not line and self._has(now, k):
                self._granted += k
                return True
            if limit is not None and self._wait(now, self._queued + k) > limit:
                return False
            turn = threading.Lock()
            if line:
                turn.acquire()  # released by the predecessor when it leaves
            line.append(turn)
            self._queued += k
        try:
            turn.acquire()
            while True:
                now = read_clock(self._clock)
                with self._lock:
                    wait = self._wait(now, k)
                    if not now + wait > now:  # there, as far as the clock can tell
                        self._granted += k
                        return True
                sleep(wait)
        finally:
            with self._lock:
                self._queued -= k
                if line[0] is turn:
                    line.popleft()
                    if line:
                        line[0].release()  # the next one's turn
                    else:
                        self._queued = 0.0  # no float residue piles up
                else:  # interrupted before its turn came
                    line.remove(turn)

    def __len__(self) -> int:
        """Whole tokens in the bucket now: how many ``try_acquire()`` calls would succeed."""
        now = read_clock(self._clock)
        with self._lock:
            return self._whole(now)

    def __repr__(self) -> str:
        now = read_clock(self._clock)
        with self._lock:
            return self._repr(now) + ">"
