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

import threading
import time
from collections import deque
from typing import Callable, Optional

from ._pickling import Uncopyable
from ._tokenbucket import TokenBucket, positive
from ._validate import check_clock, check_timeout, read_clock
from ._waiting import sleep

__all__ = ["RateLimiter", "TokenBucket"]


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

    __slots__ = (
        "_rate",
        "_burst",
        "_clock",
        "_lock",
        "_full_at",
        "_granted",
        "_line",
        "_queued",
        "__weakref__",
    )

    def __init__(self, rate: float, burst: float = 1, clock: Callable[[], float] = time.monotonic) -> None:
        r, b = positive(rate, "rate"), positive(burst, "burst")
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
        k = positive(tokens, "tokens")
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
        k = positive(tokens, "tokens")
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
