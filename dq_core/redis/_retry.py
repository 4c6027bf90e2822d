"""RetryPolicy: how long a job given back without a delay waits before it is due again."""

from __future__ import annotations

import math
from typing import Any, Optional

from .._convert import to_count, to_real


class RetryPolicy:
    """Exponential backoff with jitter, and a limit on attempts, for a queue's retries.

    Given once to the queue (``RedisDelayQueue(..., retry=RetryPolicy(...))``)
    and stored with it, as ``max_attempts`` is: ``nack(job)`` without a delay,
    from any client of the queue, makes the job due again after

        ``min(max_delay, base * factor ** (attempts - 1)) * (1 - jitter * r)``

    seconds, ``attempts`` counting the job's deliveries so far (1 after its
    first) and ``r`` drawn uniformly from [0, 1) at each retry: with the
    defaults 1, 2, 4, 8, ... seconds up to 5 minutes, each up to 10% shorter,
    so that jobs that failed together do not all come back at once.
    ``max_attempts`` (None: no limit, or the queue's own ``max_attempts``) is
    the queue's: past it a job goes to the dead set.  Immutable; compares by
    value.
    """

    __slots__ = ("base", "factor", "max_delay", "jitter", "max_attempts")

    base: float
    factor: float
    max_delay: float
    jitter: float
    max_attempts: Optional[int]

    def __init__(
        self,
        base: float = 1.0,
        factor: float = 2.0,
        max_delay: float = 300.0,
        jitter: float = 0.1,
        max_attempts: Optional[int] = None,
    ) -> None:
        base = to_real(base, "base")
        if not 0.0 < base < math.inf:
            raise ValueError(f"base must be a positive finite number of seconds, got {base!r}")
        factor = to_real(factor, "factor")
        if not 1.0 <= factor < math.inf:
            raise ValueError(f"factor must be a finite number of at least 1, got {factor!r}")
        max_delay = to_real(max_delay, "max_delay")
        if not base <= max_delay < math.inf:
            raise ValueError(
                f"max_delay must be a finite number of seconds of at least base ({base!r}), got {max_delay!r}"
            )
        jitter = to_real(jitter, "jitter")
        if not 0.0 <= jitter <= 1.0:
            raise ValueError(f"jitter must be from 0 to 1 (a fraction of the delay), got {jitter!r}")
        if max_attempts is not None:
            max_attempts = to_count(max_attempts, "max_attempts")
            if max_attempts < 1:
                raise ValueError("max_attempts must be at least 1 (or None: no limit)")
        for name, value in (
            ("base", base),
            ("factor", factor),
            ("max_delay", max_delay),
            ("jitter", jitter),
            ("max_attempts", max_attempts),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"RetryPolicy is immutable: cannot set {name!r}")

    def delay(self, attempts: int, r: float = 0.0) -> float:
        """The wait after ``attempts`` deliveries, for the random draw ``r`` in [0, 1)."""
        n = max(attempts, 1) - 1
        try:
            grown = self.base * self.factor**n
        except OverflowError:
            grown = math.inf
        return min(self.max_delay, grown) * (1.0 - self.jitter * r)

    def _wire(self) -> str:
        """The backoff as the scripts store and read it: 'base,factor,max_delay,jitter'."""
        return ",".join(repr(v) for v in (self.base, self.factor, self.max_delay, self.jitter))

    @classmethod
    def _from_wire(cls, text: str, max_attempts: Optional[int] = None) -> "RetryPolicy":
        base, factor, max_delay, jitter = map(float, text.split(","))
        return cls(base, factor, max_delay, jitter, max_attempts)

    def __repr__(self) -> str:
        return (
            f"RetryPolicy(base={self.base!r}, factor={self.factor!r}, "
            f"max_delay={self.max_delay!r}, jitter={self.jitter!r}, "
            f"max_attempts={self.max_attempts!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RetryPolicy):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, k) for k in self.__slots__))

    def __reduce__(self) -> "tuple[Any, ...]":
        return (RetryPolicy, tuple(getattr(self, k) for k in self.__slots__))
