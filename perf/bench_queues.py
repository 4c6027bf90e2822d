"""pyperf: PriorityQueue and DelayQueue against the standard library, in one run.

    python perf/bench_queues.py --fast -o queues.json
    python perf/compare.py queues.json

Times are per element (one put or one get; per item for the threaded run),
except the DelayQueue rows: per pair, one ``put(item, delay)`` of an item
already due and one ``get_nowait()`` (10,000 held at most), the unit of seed
003's Go figure (push+take, 476.8 ns/op).  Every time includes the Python
loop that makes the calls, the same for dq_core and its baseline.
The workloads live in dq_core.benchmarks.queues, shared with ``python -m dq_core.bench``.
"""

from __future__ import annotations

import queue
import random

import pyperf

from dq_core.benchmarks import queues as w
from dq_core.benchmarks.common import implementations
from dq_core.benchmarks.heap import random_priorities


def queue_classes():
    """(label, PriorityQueue class, DelayQueue class) per implementation."""
    return [(label, impl.PriorityQueue, impl.DelayQueue) for label, impl in implementations()]


def main() -> None:
    runner = pyperf.Runner()
    runner.metadata["description"] = "dq_core queues vs queue.PriorityQueue and heapq+Condition"
    classes = queue_classes()
    n = 10_000
    for levels in (100, 1_000_000):
        jobs = w.pq_items(n, levels)
        for label, pq, _ in classes + [("queue", queue.PriorityQueue, None)]:
            runner.bench_time_func(
                f"PQ alternating levels={levels} {label}", w.pq_alternating, pq, jobs, inner_loops=2 * n
            )
            runner.bench_time_func(
                f"PQ fill-drain N={n} levels={levels} {label}", w.pq_fill_drain, pq, jobs, inner_loops=2 * n
            )
    # issue #15's workload: (random int 0..1000, int), ties decided by the second int
    rng = random.Random(5)
    int_pairs = [(rng.randrange(1001), i) for i in range(n)]
    for label, pq, _ in classes + [("queue", queue.PriorityQueue, None)]:
        runner.bench_time_func(
            f"PQ alternating (int 0..1000, int) {label}", w.pq_alternating, pq, int_pairs, inner_loops=2 * n
        )
    jobs = w.pq_items(n)
    for label, pq, _ in classes + [("queue", queue.PriorityQueue, None)]:
        runner.bench_time_func(f"PQ 1P1C threads N={n} {label}", w.pq_threads, pq, jobs, inner_loops=n)
    past = [-p for p in random_priorities(n)]
    for label, _, dq in classes + [("heapq+Condition", None, w.HeapqDelayQueue)]:
        runner.bench_time_func(
            f"DelayQueue put+get_nowait pair N={n} {label}", w.delay_fill_drain, dq, past, inner_loops=n
        )


if __name__ == "__main__":
    main()
