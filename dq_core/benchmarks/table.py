"""Quick comparison of dq_core against the standard library.

Run ``python -m dq_core.bench`` (or ``--quick`` for a smaller, shorter run).
Each row times one workload on the implementation in use and on its
baseline (the standard library, or cachetools) in the same process, and
prints nanoseconds per element, the speed ratio and what the baseline was.
Progress goes to stderr, so stdout holds only the table.  When the load
average exceeds the number of cores, other processes compete for the CPU
and the table says that its ratios are unreliable.  For careful numbers use
the pyperf scripts in ``perf/``; they call the same workload functions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import statistics
import sys
from typing import Any, Callable, NamedTuple, Optional, Sequence, TextIO

from .aio import AsyncHeapqDelayQueue, delay_put_get, delay_waiting_consumers, pq_producers_consumers
from .aio import pq_alternating as aio_pq_alternating
from .heap import (
    heap_bulk,
    heap_push_pop,
    heap_update_remove,
    heapq_bulk,
    heapq_push_pop,
    heapq_update_remove,
    random_priorities,
)
from .queues import HeapqDelayQueue, delay_fill_drain, pq_alternating, pq_fill_drain, pq_items, pq_threads
from .timers import heapq_timers, sched_timers, timer_delays, wheel_bytes_per_timer, wheel_timers
from .ttl import (
    cachetools_expire_nothing_due,
    make_ttlcache,
    make_ttldict,
    ring_expire_nothing_due,
    ring_with_backlog,
    ttl_set_get_expire,
    ttlcache_with_backlog,
)

__all__ = ["Row", "main", "rows"]

Workload = Callable[..., float]
LoadReading = Callable[[], Optional[float]]


class Row(NamedTuple):
    """One line of the table: a workload on dq_core and on its baseline."""

    label: str
    workload: Workload
    args: tuple[Any, ...]
    base: Workload
    base_args: tuple[Any, ...]
    elements: int
    baseline: str  # what the base workload measures, as the table prints it


HEAPQ_TUPLES = "heapq, (priority, seq, item) tuples"


def rows(quick: bool = False) -> list[Row]:
    """(label, dq_core workload, args, baseline workload, args, elements) per row."""
    from dq_core import DelayQueue, Heap, PriorityQueue, TimingWheel, TTLDict, TTLRing

    n = 20_000 if quick else 100_000
    prios = random_priorities(n)
    items = list(range(n))
    m = n // 10
    small, new = prios[:m], random_priorities(m, seed=2)
    jobs = pq_items(m)
    past = [-p for p in small]  # already due: measures the queue, not the clock
    threaded: list[Row] = [
        Row(
            f"Heap push+pop, N={n:,}",
            heap_push_pop,
            (Heap, prios),
            heapq_push_pop,
            (prios,),
            2 * n,
            HEAPQ_TUPLES,
        ),
        Row(
            f"Heap push_many+pop_many, N={n:,}",
            heap_bulk,
            (Heap, prios, items),
            heapq_bulk,
            (prios, items),
            2 * n,
            "heapq.heapify of tuples, then heappop",
        ),
        Row(
            f"Heap update+remove, N={m:,}",
            heap_update_remove,
            (Heap, small, new),
            heapq_update_remove,
            (small, new),
            3 * m + m // 2,
            "heapq, entry map + lazy deletion",
        ),
        Row(
            "PriorityQueue put_nowait+get_nowait",
            pq_alternating,
            (PriorityQueue, jobs),
            pq_alternating,
            (queue.PriorityQueue, jobs),
            2 * m,
            "queue.PriorityQueue",
        ),
        Row(
            f"PriorityQueue fill+drain, N={m:,}",
            pq_fill_drain,
            (PriorityQueue, jobs),
            pq_fill_drain,
            (queue.PriorityQueue, jobs),
            2 * m,
            "queue.PriorityQueue",
        ),
        Row(
            "PriorityQueue 1 producer+1 consumer",
            pq_threads,
            (PriorityQueue, jobs),
            pq_threads,
            (queue.PriorityQueue, jobs),
            m,
            "queue.PriorityQueue, 2 threads",
        ),
        Row(
            f"DelayQueue put+get, N={m:,}",
            delay_fill_drain,
            (DelayQueue, past),
            delay_fill_drain,
            (HeapqDelayQueue, past),
            2 * m,
            "heapq + threading.Condition",
        ),
    ]
    return threaded + _ttl_rows(TTLRing, TTLDict, m) + _wheel_rows(TimingWheel, n, m) + _aio_rows(quick)


def _aio_rows(quick: bool) -> list[Row]:
    """The ``dq_core.aio`` rows, on the default loop (uvloop: ``perf/bench_aio.py``)."""
    from dq_core import aio

    m = 2_000 if quick else 10_000
    jobs = pq_items(m)
    past = [-1.0] * m
    return [
        Row(
            "aio.PriorityQueue put_nowait+get_nowait",
            aio_pq_alternating,
            (aio.PriorityQueue, jobs),
            aio_pq_alternating,
            (asyncio.PriorityQueue, jobs),
            2 * m,
            "asyncio.PriorityQueue",
        ),
        Row(
            "aio.PriorityQueue 4 producers+4 consumers",
            pq_producers_consumers,
            (aio.PriorityQueue, jobs),
            pq_producers_consumers,
            (asyncio.PriorityQueue, jobs),
            m,
            "asyncio.PriorityQueue, 8 tasks",
        ),
        Row(
            f"aio.DelayQueue put+get, N={m:,}",
            delay_put_get,
            (aio.DelayQueue, past),
            delay_put_get,
            (AsyncHeapqDelayQueue, past),
            2 * m,
            "heapq + asyncio.Event",
        ),
        Row(
            "aio.DelayQueue put, 4 waiting consumers",
            delay_waiting_consumers,
            (aio.DelayQueue, m),
            delay_waiting_consumers,
            (AsyncHeapqDelayQueue, m),
            m,
            "heapq + asyncio.Event, 4 tasks",
        ),
    ]


def _wheel_rows(wheel_cls: Any, n: int, m: int) -> list[Row]:
    timers, few = timer_delays(n), timer_delays(m // 5)
    return [
        Row(
            f"TimingWheel {n:,} timers, half cancelled",
            wheel_timers,
            (wheel_cls, timers),
            heapq_timers,
            (timers,),
            n,
            "heapq, lazy cancellation",
        ),
        Row(
            f"TimingWheel vs sched, {m // 5:,} timers",
            wheel_timers,
            (wheel_cls, few),
            sched_timers,
            (few,),
            m // 5,
            "sched.scheduler",
        ),
    ]


def _ttl_rows(ring_cls: Any, dict_cls: Any, m: int) -> list[Row]:
    try:
        import cachetools  # noqa: F401  (the baseline; not a dependency)
    except ImportError:
        return []
    backlog = 100_000
    ring = ring_with_backlog(ring_cls, backlog)
    cache = ttlcache_with_backlog(backlog)
    return [
        Row(
            f"TTLRing.expire(), nothing due, {backlog:,} held",
            ring_expire_nothing_due,
            (ring,),
            cachetools_expire_nothing_due,
            (cache,),
            1000,
            "cachetools.TTLCache.expire()",
        ),
        Row(
            f"TTLDict set+get+expire, N={m:,}",
            ttl_set_get_expire,
            (make_ttldict(dict_cls), m),
            ttl_set_get_expire,
            (make_ttlcache, m),
            3 * m,
            "cachetools.TTLCache",
        ),
    ]


def _ns_per_element(fn: Workload, args: tuple[Any, ...], elements: int, repeat: int) -> float:
    fn(1, *args)  # warm up
    samples = [fn(1, *args) for _ in range(repeat)]
    return statistics.median(samples) / elements * 1e9


def load_average() -> Optional[float]:
    """The 1-minute load average, or None where the system has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def overload_note(load: Optional[float], cores: int) -> Optional[str]:
    """What the table says when ``load`` exceeds ``cores``; None when it does not."""
    if load is None or load <= cores:
        return None
    return (
        f"note: the load average ({load:.1f}) exceeded the {cores} cores during the run: other "
        "processes competed for the CPU, so these ratios are unreliable; run again when the "
        "machine is quiet, or use perf/ (pyperf) for careful numbers"
    )


class Progress:
    """``[i/n] what is being timed`` on ``stream``: one line rewritten on a terminal, lines otherwise."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream, self.total, self.done = stream, total, 0
        self.tty = stream.isatty()

    def show(self, what: str) -> None:
        text = f"[{self.done + 1}/{self.total}] {what}"
        self.stream.write(f"\r\033[K{text}" if self.tty else text + "\n")
        self.stream.flush()

    def step(self) -> None:
        """One step of ``total`` done; on a terminal, the status line is cleared for the table."""
        self.done += 1
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def main(
    argv: Sequence[str] | None = None, *, read_load: LoadReading = load_average, cores: Optional[int] = None
) -> int:
    """Print the table; ``read_load`` and ``cores`` are the load check's inputs (tests pass their own)."""
    parser = argparse.ArgumentParser(prog="python -m dq_core.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = parser.parse_args(argv)

    import dq_core

    cores = cores or os.cpu_count() or 1
    repeat = 3 if args.quick else 7
    table = rows(args.quick)
    timers = 100_000 if args.quick else 1_000_000
    progress = Progress(sys.stderr, len(table) + 1)
    loads = [read_load()]
    print(f"dq_core {dq_core.__version__} ({dq_core.implementation}), Python {sys.version.split()[0]}")
    print(f"median of {repeat} runs; ns per element; ratio = baseline time / dq_core time")
    if overload_note(loads[0], cores):
        print(f"load average {loads[0]:.1f} on {cores} cores: busy, the ratios may be unreliable")
    print()
    header = f"{'operation':<46} {'dq_core':>10} {'baseline':>10} {'ratio':>7}  baseline measured"
    print(header)
    print("-" * len(header))
    sys.stdout.flush()
    for row in table:
        progress.show(f"{row.label}: dq_core")
        ours = _ns_per_element(row.workload, row.args, row.elements, repeat)
        progress.show(f"{row.label}: {row.baseline}")
        theirs = _ns_per_element(row.base, row.base_args, row.elements, repeat)
        progress.step()
        print(f"{row.label:<46} {ours:>10.1f} {theirs:>10.1f} {theirs / ours:>6.2f}x  {row.baseline}")
        sys.stdout.flush()
        loads.append(read_load())
    progress.show(f"TimingWheel memory, {timers:,} timers (tracemalloc)")
    wheel, heap = wheel_bytes_per_timer(dq_core.TimingWheel, timer_delays(timers))
    progress.step()
    print(
        f"\nTimingWheel memory per pending timer: {wheel:.1f} bytes "
        f"(heapq (deadline, seq, item) entry: {heap:.1f} bytes)"
    )
    try:
        import cachetools  # noqa: F401
    except ImportError:
        print("\n(TTLRing/TTLDict rows compare with cachetools: pip install cachetools)")
    loads.append(read_load())
    note = overload_note(max((x for x in loads if x is not None), default=None), cores)
    if note:
        print(f"\n{note}")
    return 0
