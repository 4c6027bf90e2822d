"""TTL workloads: ``TTLRing`` and ``TTLDict`` against cachetools.TTLCache, on one fake timer.

cachetools is the baseline only (``pip install cachetools``), never a
dependency: it is imported where it is used.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Callable, Sequence

from .common import FakeTimer

__all__ = [
    "ring_with_backlog", "ttlcache_with_backlog", "ring_expire_nothing_due",
    "cachetools_expire_nothing_due", "ttl_set_get_expire", "make_ttldict", "make_ttlcache",
    "ttldict_contenders",
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
    return [(label, make_ttldict(impl.TTLDict)) for label, impl in impls] + [
        ("cachetools", make_ttlcache)]
