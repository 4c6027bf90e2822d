"""A callgrind target: one TTLDict workload on 10,000 keys, run LOOPS times.

Instructions per operation are the difference between two counts, which
removes start-up, imports and the set-up outside the loop:

    for k in 1 3; do valgrind --tool=callgrind --callgrind-out-file=cg.$k \\
        python perf/callgrind_ttl.py get c $k; done
    # (Ir of cg.3 - Ir of cg.1) / (2 * 10,000): one get per key and loop

WORKLOAD: ``set`` (a new TTLDict, then every key set once), ``get`` (every
key read from a TTLDict holding them all), ``expire`` and ``purge`` (a new
TTLDict, every key set, then all of them removed at once by ``expire()`` or
``purge()``: the removal costs the difference with ``set``), ``evict``
(a new TTLDict of maxsize 5,000, every key set once: half of the sets
evict one).  A ``-lru`` suffix (``get-lru``) runs the workload on a
TTLDict made with ``lru=True`` (a get then also refreshes the key).  The
mapping reads its default clock (time.monotonic) for every set and get;
the removal is given its ``now``.  WHO: ``c`` or ``py``.
"""

from __future__ import annotations

import sys

from dq_core._assemble import classes

N = 10_000


def main(workload: str, who: str, loops: int) -> None:
    cls = classes("cython" if who == "c" else "python").TTLDict
    workload, lru = workload.removesuffix("-lru"), workload.endswith("-lru")

    def ttl_dict(ttl: float, maxsize: int | None = None) -> object:
        return cls(ttl, maxsize, lru=True) if lru else cls(ttl, maxsize)

    keys = list(range(N))
    if workload == "get":
        d = ttl_dict(60.0)
        for k in keys:
            d[k] = k
        for _ in range(loops):
            for k in keys:
                d[k]
        return
    if workload not in ("set", "expire", "purge", "evict"):
        raise SystemExit(f"unknown workload {workload!r}")
    for _ in range(loops):
        d = ttl_dict(60.0, N // 2 if workload == "evict" else None)
        for k in keys:
            d[k] = k
        if workload not in ("set", "evict"):
            getattr(d, workload)(now=1e18)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
