"""pyperf: TTLRing and TTLDict (compiled and pure) against cachetools and cachebox, in one run.

    pip install cachetools cachebox
    python perf/bench_ttl.py --fast -o ttl.json
    python perf/compare.py ttl.json

Two families of rows, each group with one peer:

- against cachetools.TTLCache, on one fake timer: ``expire`` with nothing
  due (per call) and set + get + expire of 1e5 keys (per operation);
- against cachebox.TTLCache (Rust), on the real clock (dq_core's default
  ``time.monotonic``, cachebox its own): set + get of 1e5 new keys (per
  operation), get hits over 1e5 held keys (per get), a purge of 1e5
  expired entries (per entry; ``expire()`` builds the list of what it
  removed, ``purge()`` does not), the nothing-due check on a backlog of 1e5
  (per call), and a sliding window of 1e6 new keys living 0.2 s (per set +
  get pair).  dq_core contenders named ``-expire``/``-purge`` differ only
  in the method timed.

``--only WORD`` keeps the rows whose name contains WORD (repeatable).  The
workloads live in dq_core.benchmarks.ttl, shared with ``python -m dq_core.bench``.
"""

from __future__ import annotations

import pyperf

from dq_core.benchmarks import ttl as w
from dq_core.benchmarks.common import implementations

IMPLS = implementations()
N = 100_000
BACKLOG = 100_000


def _cmdline(cmd: list[str], args: object) -> None:
    for word in getattr(args, "only", None) or ():
        cmd.extend(("--only", word))


def _purgers(cls_name: str) -> list[tuple[str, object, str]]:
    """(label, new, method): each implementation's expire() and purge(), then cachebox's expire()."""
    out = []
    for label, impl in IMPLS:
        cls = getattr(impl, cls_name)
        for method in ("expire", "purge"):
            if hasattr(cls, method):
                out.append((f"{label}-{method}", cls, method))
    return out + [("cachebox", w.make_cachebox, "expire")]


def main() -> None:
    runner = pyperf.Runner(add_cmdline_args=_cmdline)
    runner.argparser.add_argument(
        "--only", action="append", default=[], help="run only the rows whose name contains this (repeatable)"
    )
    runner.metadata["description"] = "dq_core TTLRing/TTLDict vs cachetools.TTLCache and cachebox.TTLCache"
    only = runner.parse_args().only

    def wanted(name: str) -> bool:
        return not only or any(word in name for word in only)

    # -- against cachetools, on a fake timer
    for backlog in (1_000, 500_000):
        name = f"expire nothing-due backlog={backlog}"
        if wanted(name):
            for label, impl in IMPLS:
                runner.bench_time_func(
                    f"{name} {label}",
                    w.ring_expire_nothing_due,
                    w.ring_with_backlog(impl.TTLRing, backlog),
                    inner_loops=1000,
                )
            runner.bench_time_func(
                f"{name} cachetools",
                w.cachetools_expire_nothing_due,
                w.ttlcache_with_backlog(backlog),
                inner_loops=1000,
            )
    n = 100_000
    name = f"TTLDict set+get+expire N={n}"
    if wanted(name):
        for label, make in w.ttldict_contenders(IMPLS):
            runner.bench_time_func(f"{name} {label}", w.ttl_set_get_expire, make, n, inner_loops=3 * n)

    # -- against cachebox, on the real clock
    keys = list(range(N))
    name = f"TTLDict real-clock set+get N={N}"
    if wanted(name):
        for label, new in w.real_clock_contenders(IMPLS):
            runner.bench_time_func(f"{name} {label}", w.set_get, new, keys, inner_loops=2 * N)
    name = f"TTLDict get-hits N={N}"
    if wanted(name):
        for label, new in w.real_clock_contenders(IMPLS):
            runner.bench_time_func(f"{name} {label}", w.get_hits, w.filled(new, keys), keys, inner_loops=N)
    for kind in ("TTLDict", "TTLRing"):
        name = f"{kind} purge-expired N={N}"
        if wanted(name):
            for label, new, method in _purgers(kind):
                runner.bench_time_func(
                    f"{name} {label}",
                    w.purge_expired,
                    new,
                    N,
                    method,
                    kind == "TTLRing" and label != "cachebox",
                    inner_loops=N,
                )
    for kind in ("TTLDict", "TTLRing"):
        name = f"{kind} real-clock nothing-due backlog={BACKLOG}"
        if wanted(name):
            for label, new, method in _purgers(kind):
                if kind == "TTLRing" and label != "cachebox":
                    held = new(w.PEER_TTL)
                    for k in keys:
                        held.push(k)
                else:
                    held = w.filled(new, keys)
                runner.bench_time_func(
                    f"{name} {label}", w.nothing_due, getattr(held, method), inner_loops=1000
                )
    name = "TTLDict sliding-window ttl=0.2 N=1e6"
    if wanted(name):
        for label, new in w.real_clock_contenders(IMPLS):
            runner.bench_time_func(f"{name} {label}", w.sliding_window, new, inner_loops=1_000_000)


if __name__ == "__main__":
    main()
