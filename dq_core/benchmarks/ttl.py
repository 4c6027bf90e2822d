"""TTL workloads: ``TTLRing`` and ``TTLDict`` against cachetools and cachebox.

Against cachetools.TTLCache the workloads share one fake timer; against
cachebox.TTLCache (Rust, which reads the system clock itself) they run on
the real clock.  The peers are baselines only (``pip install cachetools
cachebox``), never dependencies: each is imported where it is used.
"""

from __future__ import annotations

from time import perf_counter, sleep
from typing import Any, Callable, Sequence

from .common import FakeTimer

__all__ = [
    "ring_with_backlog",
    "ttlcache_with_backlog",
    "ring_expire_nothing_due",
    "cachetools_expire_nothing_due",
    "ttl_set_get_expire",
    "make_ttldict",
    "make_ttlcache",
    "ttldict_contenders",
    "PEER_TTL",
    "make_cachebox",
    "real_clock_contenders",
    "filled",
    "set_get",
    "get_hits",
    "nothing_due",
    "purge_expired",
    "sliding_window",
]


def ring_with_backlog(ring_cls: Any, n: int) -> Any:
    ring = ring_cls(60.0)
    for i in range(n):
        ring.push(i, 0.0)
    return ring


def ttlcache_with_backlog(n: int) -> Any:
    """A cachetools.TTLCache holding ``n`` keys that never expire (its timer stays at 0)."""
    import cachetools

    cache: Any = cachetools.TTLCache(maxsize=float("inf"), ttl=60.0, timer=lambda: 0.0)
    for i in range(n):
        cache[i] = i
    return cache


def ring_expire_nothing_due(loops: int, ring: Any, calls: int = 1000) -> float:
    """``calls`` x expire() when the head is still live: the check a service makes each tick."""
    expire = ring.expire
    t0 = perf_counter()
    for _ in range(loops * calls):
        expire(1.0)
    return perf_counter() - t0


def cachetools_expire_nothing_due(loops: int, cache: Any, calls: int = 1000) -> float:
    """``calls`` x cachetools.TTLCache.expire() when nothing is due."""
    expire = cache.expire
    t0 = perf_counter()
    for _ in range(loops * calls):
        expire(1.0)
    return perf_counter() - t0


def ttl_set_get_expire(loops: int, make: Callable[[FakeTimer], Any], n: int) -> float:
    """Set n keys over time, read each back, then expire them all."""
    total = 0.0
    for _ in range(loops):
        timer = FakeTimer()
        d = make(timer)
        t0 = perf_counter()
        for i in range(n):
            timer.now = i * 1e-4
            d[i] = i
            d[i]
        timer.now = 1e6
        d.expire()
        total += perf_counter() - t0
    return total


def make_ttldict(ttl_dict_cls: Any) -> Callable[[FakeTimer], Any]:
    return lambda timer: ttl_dict_cls(60.0, clock=timer)


def make_ttlcache(timer: FakeTimer) -> Any:
    import cachetools

    return cachetools.TTLCache(maxsize=float("inf"), ttl=60.0, timer=timer)


def ttldict_contenders(impls: Sequence[tuple[str, Any]]) -> list[tuple[str, Callable[[FakeTimer], Any]]]:
    """``(label, make)`` for ``ttl_set_get_expire``: each implementation's TTLDict, then cachetools."""
    return [(label, make_ttldict(impl.TTLDict)) for label, impl in impls] + [("cachetools", make_ttlcache)]


# -- against cachebox.TTLCache, on the real clock ------------------------------
#
# cachebox (Rust) reads the system clock itself and takes no timer, so these
# workloads run every contender on the real clock: dq_core's default
# (time.monotonic), cachebox's own.  ``new(ttl)`` makes an empty mapping.

PEER_TTL = 60.0  # long enough that nothing expires while a workload runs


def make_cachebox(ttl: float) -> Any:
    """An empty cachebox.TTLCache (no size limit) whose entries live ``ttl`` seconds."""
    import cachebox

    return cachebox.TTLCache(0, global_ttl=ttl)


def real_clock_contenders(
    impls: Sequence[tuple[str, Any]],
    cls: str = "TTLDict",
) -> list[tuple[str, Callable[[float], Any]]]:
    """``(label, new)``: each implementation's ``cls`` on its default clock, then cachebox."""
    return [(label, getattr(impl, cls)) for label, impl in impls] + [("cachebox", make_cachebox)]


def filled(new: Callable[[float], Any], keys: Sequence[Any], ttl: float = PEER_TTL) -> Any:
    """``new(ttl)`` holding every key of ``keys`` (mapped to itself)."""
    d = new(ttl)
    for k in keys:
        d[k] = k
    return d


def set_get(loops: int, new: Callable[[float], Any], keys: Sequence[Any]) -> float:
    """Into a new mapping: set each key, then read it back (2 operations a key)."""
    total = 0.0
    for _ in range(loops):
        d = new(PEER_TTL)
        t0 = perf_counter()
        for k in keys:
            d[k] = k
            d[k]
        total += perf_counter() - t0
    return total


def get_hits(loops: int, d: Any, keys: Sequence[Any]) -> float:
    """``d[k]`` for every key of ``keys``, all held and live."""
    t0 = perf_counter()
    for _ in range(loops):
        for k in keys:
            d[k]
    return perf_counter() - t0


def nothing_due(loops: int, purge: Callable[[], Any], calls: int = 1000) -> float:
    """``calls`` x ``purge()`` (an ``expire``) when nothing is due, the clock read each time."""
    t0 = perf_counter()
    for _ in range(loops * calls):
        purge()
    return perf_counter() - t0


def purge_expired(loops: int, new: Callable[[float], Any], n: int, method: str, ring: bool = False) -> float:
    """``method()`` on a mapping (or a TTLRing: ``ring``) holding ``n`` entries, all expired.

    Only the purge is timed, and the release of what it returns.  The TTL
    is a few times what filling one takes, so no entry expires (and no set
    sweeps one) before its fill is complete; up to 8 are filled, then one
    sleep until all are due, then each is purged.  A purge that returns a
    count or a list must account for all ``n``.
    """
    ttl = 0.02
    total = 0.0
    while loops > 0:
        filled: list[Any] = []
        while len(filled) < min(loops, 8):
            d = new(ttl)
            t0 = perf_counter()
            if ring:
                for k in range(n):
                    d.push(k)
            else:
                for k in range(n):
                    d[k] = k
            took = perf_counter() - t0
            if took < ttl / 2:
                filled.append(d)
            else:
                ttl = 4 * took  # filling was too slow for this TTL: again, longer
                filled.clear()
        sleep(ttl)
        for d in filled:
            purge = getattr(d, method)
            t0 = perf_counter()
            got = purge()
            count = len(got) if isinstance(got, list) else got
            del got  # what expire() returned is let go of within the timing, as the others' is
            total += perf_counter() - t0
            if count is not None and count != n:
                raise AssertionError(f"{method}() removed {count} of {n} entries")
        loops -= len(filled)
    return total


def sliding_window(loops: int, new: Callable[[float], Any], n: int = 1_000_000, ttl: float = 0.2) -> float:
    """``n`` times: set a new key and read it back, in a mapping whose entries live ``ttl``.

    The read is ``get``: on a loaded machine a pause between the set and the
    read (a collection in a pure-Python mapping) may outlast the TTL.
    """
    total = 0.0
    for _ in range(loops):
        d = new(ttl)
        get = d.get
        t0 = perf_counter()
        for k in range(n):
            d[k] = k
            get(k)
        total += perf_counter() - t0
    return total
