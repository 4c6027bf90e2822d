"""pyperf: PriorityQueue and DelayQueue against the standard library, in one run.

    python perf/bench_queues.py --fast -o queues.json
    python perf/compare.py queues.json

Times are per element (one put or one get; per item for the threaded run).
The workloads live in dq_core.bench, shared with ``python -m dq_core.bench``.
"""

from __future__ import annotations

import queue

import pyperf

from dq_core import _delayqueue, _heap_py, _pqueue_py, _queues
from dq_core import bench as w

try:
    from dq_core import _heap, _pqueue
except ImportError:  # pure-only build: compare what exists
    _heap = _pqueue = None


def queue_classes():
    """(label, PriorityQueue class, DelayQueue class) per implementation."""
    out = []
    for label, hmod, qmod in (("dq_core-c", _heap, _pqueue), ("dq_core-py", _heap_py, _pqueue_py)):
        if hmod is None:
            continue
        pq = type("PriorityQueue", (_queues.PriorityQueueMethods, qmod.QueueCore), {})
        dq = type("DelayQueue", (_delayqueue.DelayQueue,), {"_heap_class": hmod.Heap})
        out.append((label, pq, dq))
    return out


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
