"""pyperf: cost per operation against size, for the charts of perf/plot.py.

    python perf/sweep.py --fast -o sweep.json            # sizes 1e2..1e6, a few minutes
    python perf/sweep.py --fast --sizes 100,10000 -o s.json
    python perf/plot.py sweep.json                       # PNGs into docs/_static/

Four families, each dq_core (compiled and pure) against its standard or
peer baseline, at every size N; benchmark names are ``<family> N=<n> <who>``
and every value is per operation:

- ``heap``: push N random priorities, then pop them all (per push or pop);
  dq_core.Heap against heapq with ``(priority, seq, item)`` tuples.
- ``pqueue``: put_nowait N ``(int, str)`` items with 100 priority levels,
  then get_nowait them all (per put or get); against queue.PriorityQueue.
- ``timers``: schedule N timers with delays uniform in 0-60 s, cancel every
  other one, then advance the clock through 61 s in N equal steps, firing
  the rest (per timer); TimingWheel (tick 1 ms) against heapq with lazy
  cancellation and ``sched`` (its cancel is O(n), so it runs up to 1e4).
- ``ttldict``: N sets, N gets, and N expiries on a fake clock (per
  operation); TTLDict against cachetools.TTLCache.

The runner defaults to 3 worker processes (``--fast``: 3 processes of 2
values): a sweep shows the shape of each curve; the per-workload tables of
the README come from the other perf/ scripts.
"""

from __future__ import annotations

import functools
import queue
from collections.abc import Callable
from typing import Any

import pyperf

from dq_core.benchmarks import heap, queues, timers, ttl
from dq_core.benchmarks.common import implementations

SIZES = (100, 1_000, 10_000, 100_000, 1_000_000)
SCHED_MAX = 10_000  # sched cancels by scanning its list: 1e5 timers take minutes


def lazy(
    workload: Callable[..., float], data: Callable[[], tuple[Any, ...]], *fixed: Any
) -> Callable[[int], float]:
    """``workload(loops, *fixed, *data())`` with the data built on first use.

    pyperf starts a process per run and each runs main(), which declares every
    benchmark; building 1e6-item inputs only in the process that runs them
    keeps the sweep's start-up small.  The workloads time themselves, so the
    build is never timed.
    """

    def run(loops: int) -> float:
        return workload(loops, *fixed, *data())

    return run


@functools.lru_cache(maxsize=None)
def priorities(n: int) -> tuple[list[float]]:
    return (heap.random_priorities(n),)


@functools.lru_cache(maxsize=None)
def jobs(n: int) -> tuple[list[tuple[int, str]]]:
    return (queues.pq_items(n),)


@functools.lru_cache(maxsize=None)
def delays(n: int) -> tuple[list[float]]:
    return (timers.timer_delays(n),)


def add_sizes_option(cmd: Any, args: Any) -> None:
    """Pass --sizes on to the worker processes."""
    cmd.extend(("--sizes", args.sizes))


def main() -> None:
    runner = pyperf.Runner(processes=3, values=3, add_cmdline_args=add_sizes_option)
    runner.argparser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="comma-separated sizes N (default: %(default)s)"
    )
    args = runner.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    runner.metadata["description"] = "dq_core cost per operation against size N"
    impls = implementations()
    for n in sizes:
        for label, impl in impls:
            runner.bench_time_func(
                f"heap N={n} {label}",
                lazy(heap.heap_push_pop, lambda n=n: priorities(n), impl.Heap),
                inner_loops=2 * n,
            )
        runner.bench_time_func(
            f"heap N={n} heapq", lazy(heap.heapq_push_pop, lambda n=n: priorities(n)), inner_loops=2 * n
        )

        for label, impl in impls:
            runner.bench_time_func(
                f"pqueue N={n} {label}",
                lazy(queues.pq_fill_drain, lambda n=n: jobs(n), impl.PriorityQueue),
                inner_loops=2 * n,
            )
        runner.bench_time_func(
            f"pqueue N={n} queue.PriorityQueue",
            lazy(queues.pq_fill_drain, lambda n=n: jobs(n), queue.PriorityQueue),
            inner_loops=2 * n,
        )

        for label, impl in impls:
            runner.bench_time_func(
                f"timers N={n} {label}",
                lazy(timers.wheel_churn, lambda n=n: delays(n), impl.TimingWheel),
                inner_loops=n,
            )
        runner.bench_time_func(
            f"timers N={n} heapq", lazy(timers.heapq_churn, lambda n=n: delays(n)), inner_loops=n
        )
        if n <= SCHED_MAX:
            runner.bench_time_func(
                f"timers N={n} sched", lazy(timers.sched_churn, lambda n=n: delays(n)), inner_loops=n
            )

        for label, make in ttl.ttldict_contenders(impls):
            runner.bench_time_func(
                f"ttldict N={n} {label}", ttl.ttl_set_get_expire, make, n, inner_loops=3 * n
            )


if __name__ == "__main__":
    main()
