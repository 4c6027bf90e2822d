"""pyperf: PriorityQueue and DelayQueue against the standard library, in one run.

    python perf/bench_queues.py --fast -o queues.json
    python perf/compare.py queues.json

Times are per element (one put or one get; per item for the threaded run).
The workloads live in dq_core.bench, shared with ``python -m dq_core.bench``.
"""

from __future__ import annotations

import queue

import pyperf

from dq_core import bench as w


def queue_classes():
    """(label, PriorityQueue class, DelayQueue class) per implementation."""
    return [(label, impl.PriorityQueue, impl.DelayQueue) for label, impl in w.implementations()]


def main() -> None:
    runner = pyperf.Runner()
    runner.metadata["description"] = "dq_core queues vs queue.PriorityQueue and heapq+Condition"
    classes = queue_classes()
    n = 10_000
    for levels in (100, 1_000_000):
        jobs = w.pq_items(n, levels)
        for label, pq, _ in classes + [("queue", queue.PriorityQueue, None)]:
            runner.bench_time_func(f"PQ alternating levels={levels} {label}", w.pq_alternating,
                                   pq, jobs, inner_loops=2 * n)
            runner.bench_time_func(f"PQ fill-drain N={n} levels={levels} {label}",
                                   w.pq_fill_drain, pq, jobs, inner_loops=2 * n)
    jobs = w.pq_items(n)
    for label, pq, _ in classes + [("queue", queue.PriorityQueue, None)]:
        runner.bench_time_func(f"PQ 1P1C threads N={n} {label}", w.pq_threads, pq, jobs,
                               inner_loops=n)
    past = [-p for p in w.random_priorities(n)]
    for label, _, dq in classes + [("heapq+Condition", None, w.HeapqDelayQueue)]:
        runner.bench_time_func(f"DelayQueue put+get N={n} {label}", w.delay_fill_drain,
                               dq, past, inner_loops=2 * n)


if __name__ == "__main__":
    main()
