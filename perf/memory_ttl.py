"""Bytes per entry of TTLDict (compiled and pure), TTLRing, cachebox and cachetools at N held.

    python perf/memory_ttl.py            # N = 1,000,000
    python perf/memory_ttl.py 100000

Each contender runs in a fresh interpreter.  The keys (ints beyond the
small-int cache) exist before the first reading, and each key is also its
value, so what is counted is the structure alone.  Two readings, both as
differences before and after N sets (or pushes):

- RSS (``/proc/self/statm``), which sees every allocator, Rust's included;
- tracemalloc, which sees what Python's allocators (PyMem, PyObject) hand
  out: all of dq_core's and cachetools', none of cachebox's.

The ratio column compares RSS with cachebox's.
"""

from __future__ import annotations

import os
import subprocess
import sys

CONTENDERS = ["dq_core-c", "dq_core-py", "TTLRing-c", "TTLRing-py", "cachebox", "cachetools"]


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(who: str, n: int, traced: bool) -> float:
    """Bytes per entry of ``who`` holding ``n`` entries, by RSS or (traced) by tracemalloc."""
    import gc
    import tracemalloc

    keys = list(range(2**40, 2**40 + n))
    if who.startswith(("dq_core", "TTLRing")):
        from dq_core._assemble import classes

        impl = classes("cython" if who.endswith("-c") else "python")
        obj = impl.TTLRing(600.0) if who.startswith("TTLRing") else impl.TTLDict(600.0)
    elif who == "cachebox":
        import cachebox

        obj = cachebox.TTLCache(0, global_ttl=600.0)
    else:
        import cachetools

        obj = cachetools.TTLCache(maxsize=float("inf"), ttl=600.0)
    gc.collect()
    if traced:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0] if traced else _rss()
    if who.startswith("TTLRing"):
        for k in keys:
            obj.push(k)
    else:
        for k in keys:
            obj[k] = k
    gc.collect()
    after = tracemalloc.get_traced_memory()[0] if traced else _rss()
    return (after - before) / n


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(measure(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "traced"))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rows = {}
    for who in CONTENDERS:
        got = []
        for how in ("rss", "traced"):
            out = subprocess.run(
                [sys.executable, __file__, "--one", who, str(n), how], capture_output=True, text=True
            )
            got.append(float(out.stdout) if out.returncode == 0 else float("nan"))
        rows[who] = got
    base = rows["cachebox"][0]
    print(f"bytes per entry at {n:,} held (Python {sys.version.split()[0]})")
    print(f"{'contender':<12} {'RSS':>8} {'tracemalloc':>12} {'RSS / cachebox':>15}")
    for who, (rss, traced) in rows.items():
        print(f"{who:<12} {rss:8.1f} {traced:12.1f} {rss / base:14.2f}x")


if __name__ == "__main__":
    main()
