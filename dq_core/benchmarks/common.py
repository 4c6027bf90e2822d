"""What the workloads of several areas share: the implementations, a fake clock, percentiles."""

from __future__ import annotations

import statistics
from time import perf_counter
from typing import Any, Callable, Sequence

__all__ = [
    "FakeTimer",
    "HEAD_START",
    "calls",
    "fill_then_drain",
    "implementations",
    "percentiles_us",
    "put_all_at",
]

#: Lateness runs put their deadlines this long after "now", so filling the
#: queue first makes no early item late before the consumer begins.
HEAD_START = 0.05


class FakeTimer:
    """A clock the benchmarks move by hand."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def implementations() -> list[tuple[str, Any]]:
    """``(label, classes)`` for each implementation built here, compiled first.

    ``classes`` holds the public classes (``.Heap``, ``.PriorityQueue``, ...)
    exactly as ``dq_core`` exports them for that implementation.
    """
    from dq_core._assemble import classes

    out = []
    for label, implementation in (("dq_core-c", "cython"), ("dq_core-py", "python")):
        try:
            out.append((label, classes(implementation)))
        except ImportError:  # pure-only build: compare what exists
            pass
    return out


def percentiles_us(xs: Sequence[float]) -> tuple[float, float, float]:
    """p50, p99 and the largest of ``xs`` (seconds), in microseconds."""
    ordered = sorted(xs)
    q = statistics.quantiles(ordered, n=100)
    return q[49] * 1e6, q[98] * 1e6, ordered[-1] * 1e6


def put_all_at(
    put_at: Callable[[int, float], Any], start: float, delays: Sequence[float]
) -> dict[int, float]:
    """``put_at(i, start + delays[i])`` for every i, in order; returns each item's deadline."""
    deadlines = {}
    for i, d in enumerate(delays):
        deadlines[i] = start + d
        put_at(i, start + d)
    return deadlines


def fill_then_drain(
    loops: int, new: Callable[[], Any], fill: Callable[[Any], None], drain: Callable[[Any], None]
) -> float:
    """Seconds for ``loops`` rounds of: a new structure, ``fill(it)``, ``drain(it)``.

    The loops over the elements are ``fill``'s and ``drain``'s own: what this
    adds to the time is two calls a round, nothing per element.
    """
    t0 = perf_counter()
    for _ in range(loops):
        it = new()
        fill(it)
        drain(it)
    return perf_counter() - t0


def calls(method: str, times: Sequence[Any]) -> Callable[[Any], None]:
    """A ``drain``: ``it.<method>()`` once for each element of ``times``."""

    def drain(it: Any) -> None:
        take = getattr(it, method)
        for _ in times:
            take()

    return drain
