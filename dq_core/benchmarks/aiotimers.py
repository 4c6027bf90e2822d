"""Asyncio timer workloads: ``aio.Timer`` against ``loop.call_later``.

Each has pyperf's time-function signature, ``f(loops, *args) -> seconds``,
and is timed in CPU seconds of the process (``time.process_time``), as the
workloads of ``dq_core.benchmarks.aio``.  The contender is a factory:
``loop_call_later`` (the loop's own ``call_later``) or an ``aio.Timer``
class (``call_later`` of a fresh Timer).

Running 60 s of timers through must not take 60 s: ``perf/bench_aio.py``
runs ``run_through`` on an event loop whose clock is virtual (it jumps from
one timer to the next; the tests' ``VirtualClockLoop``), both contenders
alike.  uvloop's clock is libuv's real one: there the delays are scaled
down (``UVLOOP_SCALE``) and the CPU time only is counted.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from time import process_time
from typing import Any, Callable, Sequence

from .aio import NewLoop, run_on

__all__ = [
    "loop_call_later",
    "timer_call_later",
    "delays",
    "run_through",
    "schedule_cost",
    "cancel_cost",
    "UVLOOP_SCALE",
    "loop_call_at",
    "timer_call_at",
    "lateness",
]

#: ``contender(loop)`` returns a ``call_later(delay, callback)``
Contender = Callable[[asyncio.AbstractEventLoop], Callable[..., Any]]

#: On uvloop (a real clock), the delays of the run-through are divided by this.
UVLOOP_SCALE = 60.0


def loop_call_later(loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
    """The baseline contender: the loop's own ``call_later``."""
    return loop.call_later


def timer_call_later(timer_cls: Any) -> Contender:
    """The contender ``timer_cls().call_later`` (an ``aio.Timer`` class of either implementation)."""

    def contender(loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
        return timer_cls().call_later  # type: ignore[no-any-return]

    return contender


def delays(n: int, span: float, seed: int = 13) -> list[float]:
    """``n`` delays uniform in [0, span)."""
    rng = random.Random(seed)
    return [rng.random() * span for _ in range(n)]


def run_through(loops: int, contender: Contender, ds: list[float], new_loop: NewLoop) -> float:
    """Schedule a timer per delay of ``ds``, cancel every other one, run the rest through.

    ``new_loop`` makes a loop on a virtual clock, or a real one with short delays.
    """
    total = 0.0
    span = max(ds)
    for _ in range(loops):

        async def main() -> float:
            loop = asyncio.get_running_loop()
            fired = itertools.count()
            cb = fired.__next__
            t0 = process_time()
            call_later = contender(loop)
            hs = [call_later(d, cb) for d in ds]
            for h in hs[::2]:
                h.cancel()
            del hs
            await asyncio.sleep(span + 0.01)  # after the last timer, one tick late at most
            elapsed = process_time() - t0
            n = next(fired)
            if n != len(ds) // 2:
                raise AssertionError(f"{n} timers ran, not {len(ds) // 2}")
            return elapsed

        total += run_on(new_loop, main())
    return total


def _per_call(
    loops: int, contender: Contender, ds: list[float], new_loop: NewLoop, time_cancel: bool
) -> float:
    # schedule one timer per delay, then cancel them all; time one of the two
    async def main() -> float:
        loop = asyncio.get_running_loop()
        call_later = contender(loop)
        elapsed = 0.0
        for _ in range(loops):
            t0 = process_time()
            hs = [call_later(d, _nothing) for d in ds]
            t1 = process_time()
            for h in hs:
                h.cancel()
            elapsed += process_time() - t1 if time_cancel else t1 - t0
            await asyncio.sleep(0)
        return elapsed

    return run_on(new_loop, main())


def schedule_cost(
    loops: int, contender: Contender, ds: list[float], new_loop: NewLoop = asyncio.new_event_loop
) -> float:
    """``call_later`` once per delay of ``ds`` (the timers are cancelled after, untimed)."""
    return _per_call(loops, contender, ds, new_loop, time_cancel=False)


def cancel_cost(
    loops: int, contender: Contender, ds: list[float], new_loop: NewLoop = asyncio.new_event_loop
) -> float:
    """``cancel()`` of one timer per delay of ``ds``, scheduled before (untimed)."""
    return _per_call(loops, contender, ds, new_loop, time_cancel=True)


def _nothing() -> None:
    pass


# -- lateness: how long after its deadline a callback runs (real time) ---------------------

#: ``at_contender(loop)`` returns a ``call_at(when, callback, *args)``
AtContender = Callable[[asyncio.AbstractEventLoop], Callable[..., Any]]


def loop_call_at(loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
    """The baseline: the loop's own ``call_at``."""
    return loop.call_at


def timer_call_at(timer_cls: Any) -> AtContender:
    """``timer_cls().call_at`` (an ``aio.Timer`` class of either implementation; tick 1 ms)."""

    def contender(loop: asyncio.AbstractEventLoop) -> Callable[..., Any]:
        return timer_cls().call_at  # type: ignore[no-any-return]

    return contender


def lateness(
    contender: AtContender,
    ds: Sequence[float],
    new_loop: NewLoop,
    head_start: float = 0.05,
    used_for: float = 0.0,
) -> list[float]:
    """Seconds each callback ran after its deadline (real time).

    One timer per delay of ``ds``, all scheduled in one go, due
    ``head_start`` + delay from then: with a head start, what is measured
    is the firing; without, the first ones also wait for the scheduling of
    the rest.  ``used_for``: the contender was made (and a Timer bound)
    that many seconds before, as a long-lived Timer is, which puts the
    wheel's slot boundaries anywhere in the schedule.
    """

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        time = loop.time
        call_at = contender(loop)
        if used_for:
            call_at(time(), _nothing)
            await asyncio.sleep(used_for)
        late: list[float] = []
        done = loop.create_future()
        left = [len(ds)]

        def fired(when: float) -> None:
            late.append(time() - when)
            left[0] -= 1
            if not left[0]:
                done.set_result(None)

        start = time() + head_start
        for d in ds:
            call_at(start + d, fired, start + d)
        await done
        return late

    return run_on(new_loop, main())
