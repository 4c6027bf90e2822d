"""Job: what a claim (or ``dead()``) returns."""

from __future__ import annotations

from typing import Generic, Optional, TypeVar

T = TypeVar("T")


class Job(Generic[T]):
    """One claimed (or dead) job: ``id``, ``payload``, ``deadline``, ``attempts``, ``reason``.

    ``deadline`` is the Unix time (server clock, seconds) at which the job
    became due; ``attempts`` counts its deliveries, this one included.
    ``reason`` is None for a claimed job and says why a dead one died (from
    :meth:`RedisDelayQueue.dead`); a dead job whose payload the serializer
    cannot decode carries its raw bytes as ``payload``.  The
    job also carries its lease token, so ``ack(job)`` acks this lease only.
    """

    __slots__ = ("id", "payload", "deadline", "attempts", "reason", "_token")

    def __init__(
        self,
        id: str,
        payload: T,
        deadline: float,
        attempts: int,
        _token: str = "",
        *,
        reason: Optional[str] = None,
    ) -> None:
        self.id, self.payload, self.deadline = id, payload, deadline
        self.attempts, self.reason, self._token = attempts, reason, _token

    def __repr__(self) -> str:
        why = "" if self.reason is None else f", reason={self.reason!r}"
        return (
            f"Job(id={self.id!r}, payload={self.payload!r}, deadline={self.deadline!r}, "
            f"attempts={self.attempts!r}{why})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Job):
            return NotImplemented
        return (self.id, self.payload, self.deadline, self.attempts, self.reason, self._token) == (
            other.id,
            other.payload,
            other.deadline,
            other.attempts,
            other.reason,
            other._token,
        )

    __hash__ = None  # type: ignore[assignment]
