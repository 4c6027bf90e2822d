"""pyperf: PriorityExecutor dispatch overhead against ThreadPoolExecutor, in one run.

    python perf/bench_executor.py --fast -o executor.json
    python perf/compare.py executor.json

Submits 1e4 no-op tasks to 4 workers and waits for all of them; per task.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from time import perf_counter

import pyperf

from dq_core import _executor, _pqueue_py, _queues

try:
    from dq_core import _pqueue
except ImportError:  # pure-only build: compare what exists
    _pqueue = None


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
    for label, mod in (("dq_core-c", _pqueue), ("dq_core-py", _pqueue_py)):
        if mod is not None:
            pq = type("PriorityQueue", (_queues.PriorityQueueMethods, mod.QueueCore), {})
            cls = type("PriorityExecutor", (_executor.PriorityExecutor,), {"_queue_class": pq})
            runner.bench_time_func(f"dispatch N={n} {label}", dispatch, cls, n, inner_loops=n)
    runner.bench_time_func(f"dispatch N={n} ThreadPoolExecutor", dispatch, ThreadPoolExecutor, n,
                           inner_loops=n)


if __name__ == "__main__":
    main()
