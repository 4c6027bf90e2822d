"""A callgrind target: one aio workload of ``perf/bench_aio.py``, run LOOPS times.

Instructions per element are the difference between two counts, which
removes start-up and imports:

    for k in 1 3; do valgrind --tool=callgrind --callgrind-out-file=cg.$k \\
        python perf/callgrind_aio.py dq c $k; done
    # (Ir of cg.3 - Ir of cg.1) / (2 * elements): elements 20,000 for alt
    # and dq (one put or one get each), 10,000 for 4p4c (items)

WORKLOAD: ``alt`` (PriorityQueue put_nowait+get_nowait, 100 held),
``4p4c`` (4 producer + 4 consumer tasks, maxsize 64), ``dq`` (DelayQueue
put_nowait + await get of due items).  WHO: ``c``, ``py`` or ``base``
(asyncio.PriorityQueue / the heapq + Event delay queue).
"""

from __future__ import annotations

import asyncio
import sys

from dq_core._assemble import aio_classes
from dq_core.benchmarks import aio as a
from dq_core.benchmarks.queues import pq_items


def main(workload: str, who: str, loops: int, n: int = 10_000) -> None:
    jobs = pq_items(n)
    if who == "base":
        pq, dq = asyncio.PriorityQueue, a.AsyncHeapqDelayQueue
    else:
        classes = aio_classes("cython" if who == "c" else "python")
        pq, dq = classes.PriorityQueue, classes.DelayQueue
    if workload == "alt":
        a.pq_alternating(loops, pq, jobs)
    elif workload == "4p4c":
        a.pq_producers_consumers(loops, pq, jobs)
    elif workload == "dq":
        a.delay_put_get(loops, dq, [-1.0] * n)
    else:
        raise SystemExit(f"unknown workload {workload!r}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
