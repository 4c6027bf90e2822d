"""Rate limiter workloads: ``aio.RateLimiter`` against ``aiolimiter``.

``make`` builds a limiter of ``rate`` tokens per second holding at most
``burst``, for either kind: ``aio.RateLimiter(rate, burst)`` or
``aiolimiter.AsyncLimiter(max_rate=burst, time_period=burst / rate)``
(its leaky bucket lets ``max_rate`` through per ``time_period``: the same
rate and burst).  The timed workloads have pyperf's time-function
signature and count CPU time of the process (``time.process_time``), as
``dq_core.benchmarks.aio`` does; ``behaviour`` runs both in real time and
reports what a caller sees: the most tokens granted in any window against
``rate * window + burst``, and the order waiters are served in.
"""

from __future__ import annotations

import asyncio
from time import process_time
from typing import Any

from .aio import NewLoop, run_on

__all__ = ["make", "acquire_uncontended", "acquire_contended", "behaviour"]


def make(kind: str, rate: float, burst: float) -> Any:
    """A limiter of ``kind`` ("dq_core" or "aiolimiter") with this rate and burst."""
    if kind == "aiolimiter":
        from aiolimiter import AsyncLimiter

        return AsyncLimiter(max_rate=burst, time_period=burst / rate)
    from dq_core.aio import RateLimiter

    return RateLimiter(rate, burst)


def acquire_uncontended(
    loops: int, kind: str, new_loop: NewLoop = asyncio.new_event_loop, n: int = 10_000
) -> float:
    """``await lim.acquire()`` from one task, tokens always there (a huge rate and burst)."""

    async def main() -> float:
        lim = make(kind, 1e12, 1e12)
        acquire = lim.acquire
        t0 = process_time()
        for _ in range(loops):
            for _ in range(n):
                await acquire()
        return process_time() - t0

    return run_on(new_loop, main())


def acquire_contended(
    loops: int,
    kind: str,
    new_loop: NewLoop = asyncio.new_event_loop,
    n: int = 2_000,
    tasks: int = 8,
    rate: float = 200_000.0,
) -> float:
    """``tasks`` tasks acquiring one token each in turn, ``n`` in all, at ``rate``, burst 1."""

    async def main() -> float:
        total = 0.0
        for _ in range(loops):
            lim = make(kind, rate, 1)

            async def taker(k: int) -> None:
                acquire = lim.acquire
                for _ in range(k):
                    await acquire()

            t0 = process_time()
            await asyncio.gather(*(taker(n // tasks) for _ in range(tasks)))
            total += process_time() - t0
        return total

    return run_on(new_loop, main())


def behaviour(
    kind: str,
    new_loop: NewLoop = asyncio.new_event_loop,
    rate: float = 100.0,
    burst: float = 5.0,
    seconds: float = 1.0,
) -> dict[str, float]:
    """Real time: 20 tasks asking for 1 token, 2 asking for 5, as fast as granted, for ``seconds``.

    Returns the tokens granted per second, the worst window (most tokens
    granted in any window over ``rate * window + burst``: at most 1 keeps
    the promise), the grants the 5-token tasks got, and how many times a
    waiter was served before one that had waited longer (FIFO: 0).
    """

    async def main() -> dict[str, float]:
        loop = asyncio.get_running_loop()
        lim = make(kind, rate, burst)
        grants: list[tuple[float, float]] = []
        arrivals: list[tuple[float, float]] = []  # (arrived, granted) of every acquire
        end = loop.time() + seconds

        async def taker(k: float) -> None:
            while loop.time() < end:
                arrived = loop.time()
                await lim.acquire(k)
                now = loop.time()
                grants.append((now, k))
                arrivals.append((arrived, now))
                await asyncio.sleep(0)

        tasks = [asyncio.ensure_future(taker(1)) for _ in range(20)]
        tasks += [asyncio.ensure_future(taker(5)) for _ in range(2)]
        await asyncio.sleep(seconds)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return {
            "tokens_per_s": sum(k for _, k in grants) / seconds,
            "worst_window": worst_window(grants, rate, burst),
            "big_grants": float(sum(1 for _, k in grants if k == 5)),
            "overtaken": float(_overtaken(arrivals)),
        }

    return run_on(new_loop, main())


def worst_window(grants: list[tuple[float, float]], rate: float, burst: float) -> float:
    """The most tokens granted in any stretch [t_i, t_j] over what the limit allows there (1.0: exact)."""
    grants = sorted(grants)
    worst = 0.0
    for i in range(len(grants)):
        total = 0.0
        for j in range(i, min(len(grants), i + 200)):
            total += grants[j][1]
            worst = max(worst, total / (rate * (grants[j][0] - grants[i][0]) + burst))
    return worst


def _overtaken(arrivals: list[tuple[float, float]]) -> int:
    """Pairs (a, b) where b arrived strictly later but was granted strictly earlier (sampled)."""
    by_grant = sorted(arrivals, key=lambda ag: ag[1])
    count = 0
    latest_arrival = float("-inf")
    for arrived, _ in by_grant:
        if arrived < latest_arrival:
            count += 1  # someone who came later was already served
        latest_arrival = max(latest_arrival, arrived)
    return count
