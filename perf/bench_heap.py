"""pyperf: Heap (compiled and pure) against heapq, in one run.

    python perf/bench_heap.py -o heap.json          # full run
    python perf/bench_heap.py --fast -o heap.json   # quicker, noisier
    python -m pyperf stats heap.json

Times are per element.  The workloads live in dq_core.benchmarks.heap, shared with
``python -m dq_core.bench``.
"""

from __future__ import annotations

import pyperf

from dq_core.benchmarks import heap as w
from dq_core.benchmarks.common import implementations

IMPLS = implementations()


def main() -> None:
    runner = pyperf.Runner()
    runner.metadata["description"] = "dq_core.Heap vs heapq"
    for n in (1_000, 100_000, 1_000_000):
        prios = w.random_priorities(n)
        for label, impl in IMPLS:
            runner.bench_time_func(f"push+pop N={n} {label}", w.heap_push_pop,
                                   impl.Heap, prios, inner_loops=2 * n)
        runner.bench_time_func(f"push+pop N={n} heapq", w.heapq_push_pop, prios,
                               inner_loops=2 * n)

    n = 100_000
    prios = w.random_priorities(n)
    items = list(range(n))
    for label, impl in IMPLS:
        runner.bench_time_func(f"push_many+pop_many N={n} {label}", w.heap_bulk,
                               impl.Heap, prios, items, inner_loops=2 * n)
    runner.bench_time_func(f"push_many+pop_many N={n} heapq", w.heapq_bulk,
                           prios, items, inner_loops=2 * n)

    m = 10_000
    small, new = prios[:m], w.random_priorities(m, seed=2)
    ops = 3 * m + m // 2
    for label, impl in IMPLS:
        runner.bench_time_func(f"update+remove N={m} {label}", w.heap_update_remove,
                               impl.Heap, small, new, inner_loops=ops)
    runner.bench_time_func(f"update+remove N={m} heapq-lazy", w.heapq_update_remove,
                           small, new, inner_loops=ops)


if __name__ == "__main__":
    main()
