"""pyperf: WheelTTLDict and @cached (compiled and pure) against cachebox and cachetools, in one run.

    pip install -e ".[bench]"
    python perf/bench_cache.py --fast -o cache.json
    python perf/compare.py cache.json
    python perf/bench_cache.py --memory          # bytes per entry, each in a fresh process
    python perf/bench_cache.py --tracemalloc     # bytes per entry that tracemalloc sees
    python perf/bench_cache.py --callgrind       # instructions per operation (valgrind)
    python perf/bench_cache.py --callgrind expire purge   # only those rows

Rows are per operation: a set of a new key with its own ttl, a get that
hits (a bound ``__getitem__`` called, and ``cache[key]`` in the
``subscript`` rows), an expired entry removed (1e5 due at once, by each cache's own
``expire()``; dq_core's ``purge()``, which as the peers' ``expire()``
returns no list: the same unit of work; dq_core's ``expire()``, which
returns the pairs, in rows of its own), a call of a cached function that
hits.  Peers:
cachebox ``VTTLCache`` (a ttl per key), ``TTLCache`` (one ttl) and
``@cached``; cachetools ``TLRUCache`` (a ttl per key through its ``ttu``)
and ``@cached`` (with a lock, as dq_core's is thread-safe, and without);
``functools.lru_cache`` (no ttl) as the floor of a Python-level cache.
cachebox's caches run on real time, so its expiry row fills with a short
ttl and sleeps it out before the timed ``expire()``; the others use a
clock moved by hand.
"""

from __future__ import annotations

import collections
import functools
import gc
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from typing import Any, Callable

import cachebox
import cachetools
import pyperf

from dq_core.benchmarks.common import FakeTimer, implementations

IMPLS = implementations()
N = 10_000  # keys of the set and get rows
DUE = 100_000  # keys of the expiry row
TTL = 60.0


def _ttu(key: Any, value: Any, now: float) -> float:
    return now + TTL


# -- contenders: name -> factory of an empty cache with a ttl per key ---------


def _contenders() -> list[tuple[str, Callable[[Callable[[], float]], Any], Callable[[Any], Any]]]:
    """(label, make(clock), setter(cache) -> set(key, value)) per per-key-ttl mapping."""
    out: list[tuple[str, Any, Any]] = []
    for label, impl in IMPLS:
        out.append(
            (
                label,
                lambda clock, impl=impl: impl.WheelTTLDict(TTL, clock=clock),
                lambda c: functools.partial(c.set, ttl=TTL),
            )
        )
    out.append(
        (
            "cachebox.VTTLCache",
            lambda clock: cachebox.VTTLCache(0),
            lambda c: functools.partial(c.insert, ttl=TTL),
        )
    )
    out.append(("cachebox.TTLCache", lambda clock: cachebox.TTLCache(0, TTL), lambda c: c.__setitem__))
    out.append(
        (
            "cachetools.TLRUCache",
            lambda clock: cachetools.TLRUCache(float("inf"), _ttu, timer=clock),
            lambda c: c.__setitem__,
        )
    )
    return out


def bench_set(loops: int, make: Any, setter: Any) -> float:
    keys = list(range(N))
    total = 0.0
    for _ in range(loops):
        cache = make(time.monotonic)
        put = setter(cache)
        t0 = time.perf_counter()
        for k in keys:
            put(k, k)
        total += time.perf_counter() - t0
    return total


def _filled(make: Any, setter: Any) -> tuple[Any, list[int]]:
    """A cache holding the N keys (on the real clock), and the keys."""
    keys = list(range(N))
    cache = make(time.monotonic)
    put = setter(cache)
    for k in keys:
        put(k, k)
    return cache, keys


def bench_get_hit(loops: int, make: Any, setter: Any) -> float:
    cache, keys = _filled(make, setter)
    get = cache.__getitem__
    t0 = time.perf_counter()
    for _ in range(loops):
        for k in keys:
            get(k)
    return time.perf_counter() - t0


def bench_subscript_hit(loops: int, make: Any, setter: Any) -> float:
    cache, keys = _filled(make, setter)
    t0 = time.perf_counter()
    for _ in range(loops):
        for k in keys:
            cache[k]
    return time.perf_counter() - t0


def bench_expire_due(loops: int, label: str, make: Any, setter: Any, method: str = "expire") -> float:
    keys = list(range(DUE))
    total = 0.0
    for _ in range(loops):
        if label.startswith("cachebox"):  # real time only: a short ttl, slept out
            if "VTTL" in label:
                cache = cachebox.VTTLCache(0)
                put = functools.partial(cache.insert, ttl=0.2)
            else:
                cache = cachebox.TTLCache(0, 0.2)
                put = cache.__setitem__
            for k in keys:
                put(k, k)
            time.sleep(0.25)
        else:
            clock = FakeTimer()
            cache = make(clock)
            put = setter(cache)
            for k in keys:
                put(k, k)
            clock.now = TTL + 1.0
        gc.collect()
        remove = getattr(cache, method)
        t0 = time.perf_counter()
        remove()
        total += time.perf_counter() - t0
        assert len(cache) == 0, label
    return total


# -- decorators ---------------------------------------------------------------


def _decorated() -> list[tuple[str, Callable[[int], int]]]:
    def f(x: int) -> int:
        return x

    out: list[tuple[str, Any]] = []
    for label, impl in IMPLS:
        out.append((label, impl.cached(ttl=TTL, maxsize=1024)(f)))
    out.append(("cachebox.cached", cachebox.cached(cachebox.TTLCache(1024, TTL))(f)))
    out.append(
        (
            "cachetools.cached+lock",
            cachetools.cached(cachetools.TLRUCache(1024, _ttu), lock=threading.Lock())(f),
        )
    )
    out.append(("cachetools.cached", cachetools.cached(cachetools.TLRUCache(1024, _ttu))(f)))
    out.append(("functools.lru_cache", functools.lru_cache(maxsize=1024)(f)))
    return out


def bench_call_hit(loops: int, fn: Callable[[int], int]) -> float:
    fn(7)
    t0 = time.perf_counter()
    for _ in range(loops):
        fn(7)
    return time.perf_counter() - t0


# -- memory ---------------------------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_of(label: str, n: int = 200_000) -> float:
    """Bytes per entry of ``label``'s cache holding n int keys and values (RSS growth)."""
    keys = [i + 10**9 for i in range(n)]  # made before: only the cache's own memory counts
    makers = {name: (make, setter) for name, make, setter in _contenders()}
    make, setter = makers[label]
    gc.collect()
    before = _rss()
    cache = make(time.monotonic)
    put = setter(cache)
    for k in keys:
        put(k, k)
    gc.collect()
    return (_rss() - before) / n


def traced_of(label: str, n: int = 100_000) -> float:
    """Bytes per entry of ``label``'s cache holding n int keys and values (tracemalloc).

    Exact for what allocates through Python's allocators (dq_core, cachetools);
    cachebox allocates in Rust, out of tracemalloc's sight (0: see ``--memory``).
    """
    keys = [i + 10**9 for i in range(n)]
    make, setter = {name: (m, st) for name, m, st in _contenders()}[label]
    gc.collect()
    tracemalloc.start()
    try:
        cache = make(time.monotonic)
        put = setter(cache)
        for k in keys:
            put(k, k)
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return held / n


def traced_table() -> None:
    for label, _, _ in _contenders():
        held = traced_of(label)
        shown = f"{held:8.1f} bytes/entry" if held >= 1 else "  unseen (not Python's allocator: --memory)"
        print(f"{label:<24} {shown}", flush=True)


def memory_table() -> None:
    for label, _, _ in _contenders():
        out = subprocess.run(
            [sys.executable, __file__, "--memory-of", label], capture_output=True, text=True, check=True
        )
        print(f"{label:<24} {float(out.stdout):8.1f} bytes/entry")


# -- instruction counts -----------------------------------------------------------

CG_N = 10_000


def _consume(ops: Any) -> None:
    # callgrind counts only inside collections' consume_iterator: the operations,
    # not the start-up, the imports or the filling before them
    collections.deque(ops, maxlen=0)


def callgrind_target(workload: str, label: str) -> None:
    """Run ``workload`` of ``label`` once (under callgrind, by ``callgrind_table``)."""
    keys = list(range(CG_N))
    if workload == "call_hit":
        fn = dict(_decorated())[label]
        fn(7)
        _consume(fn(7) for _ in keys)
        return
    make, setter = {name: (m, st) for name, m, st in _contenders()}[label]
    real = label.startswith("cachebox")
    clock = FakeTimer()
    if workload not in ("expire", "purge"):
        cache = make(time.monotonic)  # the real clock, as cachebox's: a C call
        put = setter(cache)
    elif real:  # real time only: a short ttl, slept out
        cache = cachebox.VTTLCache(0) if "VTTL" in label else cachebox.TTLCache(0, 1.0)
        put = functools.partial(cache.insert, ttl=1.0) if "VTTL" in label else cache.__setitem__
    else:
        cache = make(clock)
        put = setter(cache)
    if workload == "set":
        _consume(put(k, k) for k in keys)
        return
    for k in keys:
        put(k, k)
    if workload == "get":
        get = cache.__getitem__
        _consume(get(k) for k in keys)
    elif workload == "subscript":  # cache[k], the slot itself
        _consume(cache[k] for k in keys)
    elif workload in ("expire", "purge"):
        if real:
            time.sleep(1.1)
        clock.now = TTL + 1.0
        remove = getattr(cache, workload)
        _consume(remove() for _ in (0,))
        assert len(cache) == 0, label


def _instructions(args: list[str]) -> int:
    out = "/tmp/bench_cache.cg"
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--toggle-collect=consume_iterator",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--callgrind-target",
            *args,
        ],
        capture_output=True,
        check=True,
    )
    with open(out) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("no totals in the callgrind output")


def callgrind_table() -> None:
    """Instructions per operation (set, get hit, expired entry, cached call hit).

    Workload names after ``--callgrind`` keep only their rows.
    """
    rows = [(w, label) for w in ("set", "get", "subscript", "expire") for label, _, _ in _contenders()]
    rows += [("purge", label) for label, _ in IMPLS]
    rows += [("call_hit", label) for label, _ in _decorated()]
    only = set(sys.argv[sys.argv.index("--callgrind") + 1 :])
    for workload, label in rows:
        if only and workload not in only:
            continue
        n = _instructions([workload, label]) / CG_N
        print(f"{workload:<9} {label:<24} {n:10.0f} instructions per operation", flush=True)


def main() -> None:
    if "--callgrind" in sys.argv:
        callgrind_table()
        return
    if "--callgrind-target" in sys.argv:
        i = sys.argv.index("--callgrind-target")
        callgrind_target(sys.argv[i + 1], sys.argv[i + 2])
        return
    if "--memory" in sys.argv:
        memory_table()
        return
    if "--tracemalloc" in sys.argv:
        traced_table()
        return
    if "--memory-of" in sys.argv:
        print(memory_of(sys.argv[sys.argv.index("--memory-of") + 1]))
        return
    runner = pyperf.Runner()
    runner.metadata["description"] = "dq_core WheelTTLDict/@cached vs cachebox and cachetools"
    for label, make, setter in _contenders():
        runner.bench_time_func(f"set new key N={N} {label}", bench_set, make, setter, inner_loops=N)
        runner.bench_time_func(f"get hit N={N} {label}", bench_get_hit, make, setter, inner_loops=N)
        runner.bench_time_func(
            f"subscript hit N={N} {label}", bench_subscript_hit, make, setter, inner_loops=N
        )
        # dq_core's purge() and the peers' expire() return no list: the same work
        method = "purge" if label.startswith("dq_core") else "expire"
        runner.bench_time_func(
            f"expire {DUE} due {label}", bench_expire_due, label, make, setter, method, inner_loops=DUE
        )
        if method == "purge":  # and its expire(), which returns the pairs
            runner.bench_time_func(
                f"expire() with its list {DUE} due {label}",
                bench_expire_due,
                label,
                make,
                setter,
                inner_loops=DUE,
            )
    for label, fn in _decorated():
        runner.bench_time_func(f"cached call hit {label}", bench_call_hit, fn)


if __name__ == "__main__":
    main()
