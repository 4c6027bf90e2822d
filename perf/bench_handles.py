"""update, remove and cancel by handle, on both implementations (pyperf).

Each row times only the operation named, N times, on a structure of
N = 10,000 items built (untimed) before it; the time is per operation.
``update all + remove all`` times a structure's whole life after its pushes,
so that the dead entries an update leaves behind are paid for too.  Only
public methods are called: the same script measures an older checkout,
for ratios such as::

    python perf/bench_handles.py --fast -o now.json
    /path/to/old/venv/bin/python perf/bench_handles.py --fast -o old.json
    python -m pyperf compare_to old.json now.json --table

``perf/callgrind_handles.py`` counts the instructions of the same operations.
"""

from __future__ import annotations

import random
from collections import deque
from time import perf_counter
from typing import Any, Callable

import pyperf

from dq_core._assemble import classes

N = 10_000


def _data(n: int) -> tuple[list[float], list[float], list[int]]:
    rng = random.Random(1)
    prios = [rng.random() for _ in range(n)]
    new = [rng.random() for _ in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    return prios, new, order


def _timed(loops: int, build: Callable[[], tuple[Callable[..., Any], list[Any]]]) -> float:
    # build() -> (bound method, argument lists); only the calls are timed
    total = 0.0
    for _ in range(loops):
        method, args = build()
        t0 = perf_counter()
        deque(map(method, *args), maxlen=0)
        total += perf_counter() - t0
    return total


def rows(impl: str, n: int = N) -> dict[str, Callable[[int], float]]:
    c = classes(impl)
    prios, new, order = _data(n)

    def heap() -> tuple[Any, list[int]]:
        h = c.Heap()
        push = h.push
        return h, [push(p, i) for i, p in enumerate(prios)]

    def heap_update() -> tuple[Callable[..., Any], list[Any]]:
        h, hs = heap()
        return h.update, [hs, new]

    def heap_remove() -> tuple[Callable[..., Any], list[Any]]:
        h, hs = heap()
        return h.remove, [[hs[i] for i in order]]

    def heap_life(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            h, hs = heap()
            gone = [hs[i] for i in order]
            t0 = perf_counter()
            deque(map(h.update, hs, new), maxlen=0)
            deque(map(h.remove, gone), maxlen=0)
            total += perf_counter() - t0
        return total

    def delay_cancel() -> tuple[Callable[..., Any], list[Any]]:
        q = c.DelayQueue()
        put_at = q.put_at
        hs = [put_at(i, 1e9 + p) for i, p in enumerate(prios)]
        return q.cancel, [[hs[i] for i in order]]

    def wheel_cancel() -> tuple[Callable[..., Any], list[Any]]:
        w = c.TimingWheel(tick=0.001, wheel_size=256, clock=lambda: 0.0)
        at = w.schedule_at
        hs = [at(i, p * 100) for i, p in enumerate(prios)]
        return w.cancel, [[hs[i] for i in order]]

    return {
        "Heap.update": lambda loops: _timed(loops, heap_update),
        "Heap.remove": lambda loops: _timed(loops, heap_remove),
        "Heap update all + remove all": heap_life,
        "DelayQueue.cancel": lambda loops: _timed(loops, delay_cancel),
        "TimingWheel.cancel": lambda loops: _timed(loops, wheel_cancel),
    }


def main() -> None:
    runner = pyperf.Runner()
    for impl, label in (("cython", "compiled"), ("python", "pure")):
        try:
            table = rows(impl)
        except ImportError:  # compiled cores not built
            continue
        for name, func in table.items():
            per = 2 * N if name.startswith("Heap update all") else N
            runner.bench_time_func(f"{name} ({label})", func, inner_loops=per)


if __name__ == "__main__":
    main()
