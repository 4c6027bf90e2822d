"""pyperf: TTLRing and TTLDict (compiled and pure) against cachetools, in one run.

    python perf/bench_ttl.py --fast -o ttl.json
    python perf/compare.py ttl.json

``expire`` rows are per call; the TTLDict rows per operation (a set, a get,
or an expired entry).  Both sides use the same fake timer.  The workloads
live in dq_core.benchmarks.ttl, shared with ``python -m dq_core.bench``.
"""

from __future__ import annotations

import pyperf

from dq_core.benchmarks import ttl as w
from dq_core.benchmarks.common import implementations

IMPLS = implementations()


def main() -> None:
    runner = pyperf.Runner()
    runner.metadata["description"] = "dq_core TTLRing/TTLDict vs cachetools.TTLCache"
    for backlog in (1_000, 500_000):
        for label, impl in IMPLS:
            ring = w.ring_with_backlog(impl.TTLRing, backlog)
            runner.bench_time_func(f"expire nothing-due backlog={backlog} {label}",
                                   w.ring_expire_nothing_due, ring, inner_loops=1000)
        cache = w.ttlcache_with_backlog(backlog)
        runner.bench_time_func(f"expire nothing-due backlog={backlog} cachetools",
                               w.cachetools_expire_nothing_due, cache, inner_loops=1000)
    n = 100_000
    for label, make in w.ttldict_contenders(IMPLS):
        runner.bench_time_func(f"TTLDict set+get+expire N={n} {label}", w.ttl_set_get_expire,
                               make, n, inner_loops=3 * n)


if __name__ == "__main__":
    main()
