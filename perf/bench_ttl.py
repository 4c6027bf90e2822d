"""pyperf: TTLRing and TTLDict (compiled and pure) against cachetools, in one run.

    python perf/bench_ttl.py --fast -o ttl.json
    python perf/compare.py ttl.json

``expire`` rows are per call; the TTLDict rows per operation (a set, a get,
or an expired entry).  Both sides use the same fake timer.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import cachetools
import pyperf

from dq_core import _ring_py, _ttldict, _ttlmap_py
from dq_core import bench as w

try:
    from dq_core import _ring, _ttlmap
except ImportError:  # pure-only build: compare what exists
    _ring = _ttlmap = None

# (label, TTLRing's module, TTLDictCore's module)
IMPLS = [(label, ring, ttlmap)
         for label, ring, ttlmap in (("dq_core-c", _ring, _ttlmap), ("dq_core-py", _ring_py, _ttlmap_py))
         if ring is not None]


def main() -> None:
    runner = pyperf.Runner()
    runner.metadata["description"] = "dq_core TTLRing/TTLDict vs cachetools.TTLCache"
    for backlog in (1_000, 500_000):
        for label, mod, _ in IMPLS:
            ring = w.ring_with_backlog(mod.TTLRing, backlog)
            runner.bench_time_func(f"expire nothing-due backlog={backlog} {label}",
                                   w.ring_expire_nothing_due, ring, inner_loops=1000)
        cache = cachetools.TTLCache(maxsize=float("inf"), ttl=60.0, timer=lambda: 0.0)
        for i in range(backlog):
            cache[i] = i
        runner.bench_time_func(f"expire nothing-due backlog={backlog} cachetools",
                               w.cachetools_expire_nothing_due, cache, inner_loops=1000)
    n = 100_000
    for label, _, mod in IMPLS:
        cls = type("TTLDict", (_ttldict.TTLDictMethods, mod.TTLDictCore, MutableMapping), {})
        runner.bench_time_func(f"TTLDict set+get+expire N={n} {label}", w.ttl_set_get_expire,
                               w.make_ttldict(cls), n, inner_loops=3 * n)
    runner.bench_time_func(f"TTLDict set+get+expire N={n} cachetools", w.ttl_set_get_expire,
                           w.make_ttlcache, n, inner_loops=3 * n)


if __name__ == "__main__":
    main()
