"""Timer workloads: ``TimingWheel`` against heapq (lazy cancellation) and sched.

The timer workload: tick 1 ms, delays uniform in 0-60 s, every other timer
cancelled, then the clock advanced tick by tick through 61 s (``steps``
equal steps: perf/sweep.py takes N steps for N timers).
"""

from __future__ import annotations

import heapq
import random
from time import perf_counter
from typing import Any, Sequence

from .common import FakeTimer

__all__ = [
    "WHEEL_TICK",
    "WHEEL_TICKS",
    "HORIZON",
    "timer_delays",
    "wheel_timers",
    "heapq_timers",
    "sched_timers",
    "wheel_churn",
    "heapq_churn",
    "sched_churn",
    "wheel_schedule",
    "wheel_cancel",
    "heapq_push",
    "wheel_bytes_per_timer",
]

WHEEL_TICK = 0.001
WHEEL_TICKS = 61_000  # 61 s of ticks
HORIZON = WHEEL_TICKS * WHEEL_TICK


def timer_delays(n: int, seed: int = 4) -> list[float]:
    rnd = random.Random(seed)
    return [rnd.uniform(0.0, 60.0) for _ in range(n)]


def wheel_timers(loops: int, wheel_cls: Any, delays: Sequence[float], steps: int = WHEEL_TICKS) -> float:
    """Schedule every delay, cancel every other timer, advance in ``steps`` steps to the end."""
    total = 0.0
    for _ in range(loops):
        timer = FakeTimer()
        t0 = perf_counter()
        w = wheel_cls(WHEEL_TICK, 256, clock=timer)
        at = w.schedule_at
        handles = [at(i, d) for i, d in enumerate(delays)]
        cancel = w.cancel
        for h in handles[::2]:
            cancel(h)
        advance = w.advance
        fired = 0
        step = HORIZON / steps  # WHEEL_TICK itself for the default
        for k in range(1, steps + 1):
            fired += len(advance(k * step))
        total += perf_counter() - t0
        assert fired == len(delays) // 2
    return total


def heapq_timers(loops: int, delays: Sequence[float], steps: int = WHEEL_TICKS) -> float:
    """The same with heapq and lazy cancellation (the heapq docs' recipe)."""
    total = 0.0
    push, pop = heapq.heappush, heapq.heappop
    for _ in range(loops):
        t0 = perf_counter()
        q: list[list[Any]] = []
        entries: list[list[Any]] = []
        for i, d in enumerate(delays):
            entry: list[Any] = [d, i, i]
            push(q, entry)
            entries.append(entry)
        for entry in entries[::2]:
            entry[2] = None  # cancelled: skipped when it surfaces
        fired = 0
        step = HORIZON / steps
        for k in range(1, steps + 1):
            now = k * step
            out = []
            while q and q[0][0] <= now:
                item = pop(q)[2]
                if item is not None:
                    out.append(item)
            fired += len(out)
        total += perf_counter() - t0
        assert fired == len(delays) // 2
    return total


def sched_timers(loops: int, delays: Sequence[float], steps: int = WHEEL_TICKS) -> float:
    """The same with sched.scheduler (its cancel is O(n)) and no-op actions."""
    import sched

    total = 0.0
    for _ in range(loops):
        timer = FakeTimer()
        t0 = perf_counter()
        s = sched.scheduler(timer, lambda _: None)
        enter = s.enterabs
        events = [enter(d, 0, int) for d in delays]
        for ev in events[::2]:
            s.cancel(ev)
        run = s.run
        step = HORIZON / steps
        for k in range(1, steps + 1):
            timer.now = k * step
            run(blocking=False)
        total += perf_counter() - t0
        assert s.empty()
    return total


def wheel_schedule(loops: int, wheel_cls: Any, delays: Sequence[float], method: str = "schedule_at") -> float:
    """One ``method`` call per delay, alone, into a wheel that grows to len(delays) timers.

    ``schedule_at`` runs on a fake clock at 0, so every deadline lies ahead;
    ``schedule`` runs on the default clock (time.monotonic) and pays for reading it.
    """
    total = 0.0
    for _ in range(loops):
        if method == "schedule_at":
            w = wheel_cls(WHEEL_TICK, 256, clock=FakeTimer())
        else:
            w = wheel_cls(WHEEL_TICK, 256)
        call = getattr(w, method)
        t0 = perf_counter()
        for d in delays:
            call(None, d)
        total += perf_counter() - t0
    return total


def wheel_cancel(loops: int, wheel_cls: Any, delays: Sequence[float]) -> float:
    """cancel() alone, of every timer of a full wheel, in scheduling order."""
    total = 0.0
    for _ in range(loops):
        w = wheel_cls(WHEEL_TICK, 256, clock=FakeTimer())
        at = w.schedule_at
        handles = [at(None, d) for d in delays]
        cancel = w.cancel
        t0 = perf_counter()
        for h in handles:
            cancel(h)
        total += perf_counter() - t0
    return total


def heapq_push(loops: int, delays: Sequence[float]) -> float:
    """heappush of a [deadline, seq, item] entry: heapq's schedule."""
    total = 0.0
    push = heapq.heappush
    for _ in range(loops):
        q: list[list[Any]] = []
        t0 = perf_counter()
        for i, d in enumerate(delays):
            push(q, [d, i, None])
        total += perf_counter() - t0
    return total


def wheel_bytes_per_timer(wheel_cls: Any, delays: Sequence[float]) -> tuple[float, float]:
    """Bytes per pending timer (payload and the caller's handles excluded): wheel, heapq."""
    import tracemalloc

    item = object()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        w = wheel_cls(WHEEL_TICK, 256, clock=FakeTimer())
        for d in delays:
            w.schedule_at(item, d)
        wheel = tracemalloc.get_traced_memory()[0] - base
        del w
        base = tracemalloc.get_traced_memory()[0]
        q: list[tuple[float, int, Any]] = []
        for i, d in enumerate(delays):
            heapq.heappush(q, (d, i + 2**40, item))  # a seq int beyond the small-int cache
        heap = tracemalloc.get_traced_memory()[0] - base
        del q
    finally:
        tracemalloc.stop()
    return wheel / len(delays), heap / len(delays)


# -- the size sweep's variants: N steps for N timers ---------------------------


def wheel_churn(loops: int, wheel_cls: Any, delays: Sequence[float]) -> float:
    """``wheel_timers`` advancing in len(delays) steps (perf/sweep.py; the table takes 61000)."""
    return wheel_timers(loops, wheel_cls, delays, steps=len(delays))


def heapq_churn(loops: int, delays: Sequence[float]) -> float:
    """The same with heapq and lazy cancellation (the heapq docs' recipe)."""
    return heapq_timers(loops, delays, steps=len(delays))


def sched_churn(loops: int, delays: Sequence[float]) -> float:
    """The same with sched.scheduler and no-op actions."""
    return sched_timers(loops, delays, steps=len(delays))
