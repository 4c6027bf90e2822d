"""A callgrind target: one threaded-queue or heap workload, run LOOPS times.

The companion of ``perf/callgrind_aio.py`` for the synchronous cores.
Instructions per item are the difference between two counts, which
removes start-up and imports:

    for k in 1 3; do valgrind --tool=callgrind --callgrind-out-file=cg.$k \\
        python perf/callgrind_core.py pq c $k; done
    # (Ir of cg.3 - Ir of cg.1) / (2 * 10,000): one put and one get per item

WORKLOAD: ``pq`` (PriorityQueue put_nowait everything, then get_nowait
everything; ``(int, str)`` items), ``pqalt`` (one put_nowait and one
get_nowait in turn, 100 held), ``heap`` (Heap push everything, then pop
everything; float priorities).  WHO: ``c`` or ``py``.
"""

from __future__ import annotations

import sys

from dq_core._assemble import classes
from dq_core.benchmarks.heap import heap_push_pop, random_priorities
from dq_core.benchmarks.queues import pq_alternating, pq_fill_drain, pq_items


def main(workload: str, who: str, loops: int, n: int = 10_000) -> None:
    c = classes("cython" if who == "c" else "python")
    if workload == "pq":
        pq_fill_drain(loops, c.PriorityQueue, pq_items(n))
    elif workload == "pqalt":
        pq_alternating(loops, c.PriorityQueue, pq_items(n))
    elif workload == "heap":
        heap_push_pop(loops, c.Heap, random_priorities(n))
    else:
        raise SystemExit(f"unknown workload {workload!r}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
