"""pyperf: PriorityExecutor dispatch overhead against ThreadPoolExecutor, in one run.

    python perf/bench_executor.py --fast -o executor.json
    python perf/compare.py executor.json

Submits 1e4 no-op tasks to 4 workers and waits for all of them; per task.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from time import perf_counter

import pyperf

from dq_core.benchmarks.common import implementations


def noop() -> None:
    pass


def dispatch(loops: int, executor_cls, n: int) -> float:
    total = 0.0
    for _ in range(loops):
        ex = executor_cls(max_workers=4)
        t0 = perf_counter()
        futures = [ex.submit(noop) for _ in range(n)]
        for f in futures:
            f.result()
        total += perf_counter() - t0
        ex.shutdown()
    return total


def main() -> None:
    runner = pyperf.Runner()
    n = 10_000
    for label, impl in implementations():
        runner.bench_time_func(f"dispatch N={n} {label}", dispatch, impl.PriorityExecutor, n, inner_loops=n)
    runner.bench_time_func(
        f"dispatch N={n} ThreadPoolExecutor", dispatch, ThreadPoolExecutor, n, inner_loops=n
    )


if __name__ == "__main__":
    main()
