"""Quick comparison of dq_core against the standard library.

Run ``python -m dq_core.bench`` (or ``--quick`` for a run of a few seconds).
Each row times one workload on the implementation in use and on its stdlib
counterpart in the same process, and prints nanoseconds per element and the
speed ratio.  For careful numbers use the pyperf scripts in ``perf/``; they
call the same workload functions.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import statistics
import sys
from typing import Any, Callable, Sequence

from .aio import AsyncHeapqDelayQueue, delay_put_get, delay_waiting_consumers
from .aio import pq_alternating as aio_pq_alternating
from .aio import pq_producers_consumers
from .heap import (
    heap_bulk, heap_push_pop, heap_update_remove, heapq_bulk, heapq_push_pop, heapq_update_remove,
    random_priorities,
)
from .queues import HeapqDelayQueue, delay_fill_drain, pq_alternating, pq_fill_drain, pq_items, pq_threads
from .timers import heapq_timers, sched_timers, timer_delays, wheel_bytes_per_timer, wheel_timers
from .ttl import (
    cachetools_expire_nothing_due, make_ttlcache, make_ttldict, ring_expire_nothing_due,
    ring_with_backlog, ttl_set_get_expire, ttlcache_with_backlog,
)

__all__ = ["main", "rows"]

Workload = Callable[..., float]
Row = tuple[str, Workload, tuple[Any, ...], Workload, tuple[Any, ...], int]


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
        (f"Heap push+pop, N={n:,}", heap_push_pop, (Heap, prios),
         heapq_push_pop, (prios,), 2 * n),
        (f"Heap push_many+pop_many, N={n:,}", heap_bulk, (Heap, prios, items),
         heapq_bulk, (prios, items), 2 * n),
        (f"Heap update+remove, N={m:,}", heap_update_remove, (Heap, small, new),
         heapq_update_remove, (small, new), 3 * m + m // 2),
        ("PriorityQueue put_nowait+get_nowait", pq_alternating, (PriorityQueue, jobs),
         pq_alternating, (queue.PriorityQueue, jobs), 2 * m),
        (f"PriorityQueue fill+drain, N={m:,}", pq_fill_drain, (PriorityQueue, jobs),
         pq_fill_drain, (queue.PriorityQueue, jobs), 2 * m),
        ("PriorityQueue 1 producer+1 consumer", pq_threads, (PriorityQueue, jobs),
         pq_threads, (queue.PriorityQueue, jobs), m),
        (f"DelayQueue put+get, N={m:,}", delay_fill_drain, (DelayQueue, past),
         delay_fill_drain, (HeapqDelayQueue, past), 2 * m),
    ]
    return threaded + _ttl_rows(TTLRing, TTLDict, m) + _wheel_rows(TimingWheel, n, m) + _aio_rows(quick)


def _aio_rows(quick: bool) -> list[Row]:
    """The ``dq_core.aio`` rows, on the default loop (uvloop: ``perf/bench_aio.py``)."""
    from dq_core import aio

    m = 2_000 if quick else 10_000
    jobs = pq_items(m)
    past = [-1.0] * m
    return [
        ("aio.PriorityQueue put_nowait+get_nowait", aio_pq_alternating, (aio.PriorityQueue, jobs),
         aio_pq_alternating, (asyncio.PriorityQueue, jobs), 2 * m),
        ("aio.PriorityQueue 4 producers+4 consumers", pq_producers_consumers,
         (aio.PriorityQueue, jobs), pq_producers_consumers, (asyncio.PriorityQueue, jobs), m),
        (f"aio.DelayQueue put+get, N={m:,}", delay_put_get, (aio.DelayQueue, past),
         delay_put_get, (AsyncHeapqDelayQueue, past), 2 * m),
        ("aio.DelayQueue put, 4 waiting consumers", delay_waiting_consumers,
         (aio.DelayQueue, m), delay_waiting_consumers, (AsyncHeapqDelayQueue, m), m),
    ]


def _wheel_rows(wheel_cls: Any, n: int, m: int) -> list[Row]:
    timers, few = timer_delays(n), timer_delays(m // 5)
    return [
        (f"TimingWheel {n:,} timers, half cancelled", wheel_timers, (wheel_cls, timers),
         heapq_timers, (timers,), n),
        (f"TimingWheel vs sched, {m // 5:,} timers", wheel_timers, (wheel_cls, few),
         sched_timers, (few,), m // 5),
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
        (f"TTLRing.expire(), nothing due, {backlog:,} held", ring_expire_nothing_due, (ring,),
         cachetools_expire_nothing_due, (cache,), 1000),
        (f"TTLDict set+get+expire, N={m:,}", ttl_set_get_expire, (make_ttldict(dict_cls), m),
         ttl_set_get_expire, (make_ttlcache, m), 3 * m),
    ]


def _ns_per_element(fn: Workload, args: tuple[Any, ...], elements: int, repeat: int) -> float:
    fn(1, *args)  # warm up
    samples = [fn(1, *args) for _ in range(repeat)]
    return statistics.median(samples) / elements * 1e9


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dq_core.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (a few seconds)")
    args = parser.parse_args(argv)

    import dq_core

    repeat = 3 if args.quick else 7
    print(f"dq_core {dq_core.__version__} ({dq_core.implementation}), Python {sys.version.split()[0]}")
    print(f"median of {repeat} runs; ns per element; ratio = stdlib time / dq_core time\n")
    header = f"{'operation':<46} {'dq_core':>10} {'stdlib':>10} {'ratio':>7}  baseline"
    print(header)
    print("-" * len(header))
    for label, fn, fargs, base, bargs, elements in rows(args.quick):
        ours = _ns_per_element(fn, fargs, elements, repeat)
        theirs = _ns_per_element(base, bargs, elements, repeat)
        print(f"{label:<46} {ours:>10.1f} {theirs:>10.1f} {theirs / ours:>6.2f}x  {base.__name__}")
        sys.stdout.flush()
    wheel, heap = wheel_bytes_per_timer(dq_core.TimingWheel, timer_delays(100_000 if args.quick else 1_000_000))
    print(f"\nTimingWheel memory per pending timer: {wheel:.1f} bytes "
          f"(heapq (deadline, seq, item) entry: {heap:.1f} bytes)")
    try:
        import cachetools  # noqa: F401
    except ImportError:
        print("\n(TTLRing/TTLDict rows compare with cachetools: pip install cachetools)")
    return 0
