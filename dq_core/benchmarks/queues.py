"""Queue workloads: ``PriorityQueue`` and ``DelayQueue`` against the standard library.

The baselines are ``queue.PriorityQueue`` and ``HeapqDelayQueue``, the usual
hand-made delay queue (heapq under a ``threading.Condition``).  The
lateness runs are not timed workloads: they return how late each blocking
``get`` returned, and a bare timed lock wait to the same deadlines is the
floor they are held against.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import random
import threading
from time import monotonic, perf_counter
from typing import Any, Callable, Sequence

from .common import HEAD_START, calls, fill_then_drain, put_all_at

__all__ = [
    "pq_items",
    "pq_fill_drain",
    "pq_alternating",
    "pq_threads",
    "HeapqDelayBase",
    "HeapqDelayQueue",
    "delay_fill_drain",
    "delay_lateness",
    "lock_lateness",
]


def pq_items(n: int, levels: int = 100, seed: int = 3) -> list[tuple[int, str]]:
    """``(int, str)`` tuples; with few priority ``levels`` many tie on the int."""
    rng = random.Random(seed)
    return [(rng.randrange(levels), f"job-{i}") for i in range(n)]


def pq_fill_drain(loops: int, queue_cls: Any, items: Sequence[Any]) -> float:
    """put_nowait everything, then get_nowait everything."""

    def fill(q: Any) -> None:
        put = q.put_nowait
        for x in items:
            put(x)

    return fill_then_drain(loops, queue_cls, fill, calls("get_nowait", items))


def pq_alternating(
    loops: int, queue_cls: Any, items: Sequence[Any], clock: Callable[[], float] = perf_counter
) -> float:
    """One put_nowait and one get_nowait in turn, 100 items held (aio's runs it in a loop)."""
    q = queue_cls()
    for x in items[:100]:
        q.put_nowait(x)
    put = q.put_nowait
    get = q.get_nowait
    t0 = clock()
    for _ in range(loops):
        for x in items:
            put(x)
            get()
    return clock() - t0


def pq_threads(loops: int, queue_cls: Any, items: Sequence[Any]) -> float:
    """One producer and one consumer thread, blocking put/get, maxsize 1000."""
    total = 0.0
    for _ in range(loops):
        q = queue_cls(1000)

        def produce() -> None:
            put = q.put
            for x in items:
                put(x)

        def consume() -> None:
            get = q.get
            for _ in items:
                get()

        threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
        t0 = perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total += perf_counter() - t0
    return total


class HeapqDelayBase:
    """What the hand-made delay queues (threads here, asyncio in ``aio``) hold."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Any]] = []  # (deadline, seq, item)
        self._count = itertools.count()


class HeapqDelayQueue(HeapqDelayBase):
    """The usual hand-made delay queue: heapq under a threading.Condition."""

    def __init__(self) -> None:
        super().__init__()
        self._cond = threading.Condition()

    def put(self, item: Any, delay: float = 0.0) -> None:
        with self._cond:
            entry = (monotonic() + delay, next(self._count), item)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify()

    def get(self) -> Any:
        with self._cond:
            while True:
                if self._heap:
                    wait = self._heap[0][0] - monotonic()
                    if wait <= 0:
                        return heapq.heappop(self._heap)[2]
                else:
                    wait = None
                self._cond.wait(wait)

    def get_nowait(self) -> Any:
        with self._cond:
            if self._heap and self._heap[0][0] <= monotonic():
                return heapq.heappop(self._heap)[2]
            raise queue.Empty


def delay_fill_drain(loops: int, queue_cls: Any, delays: Sequence[float]) -> float:
    """put everything with (past) delays, then take everything."""

    def fill(q: Any) -> None:
        put = q.put
        for i, d in enumerate(delays):
            put(i, d)

    return fill_then_drain(loops, queue_cls, fill, calls("get_nowait", delays))


def delay_lateness(queue_cls: Any, delays: Sequence[float]) -> list[float]:
    """How late a blocking ``get`` returns, in seconds: its return time minus the item's deadline."""
    q = queue_cls()
    deadlines = put_all_at(q.put_at, monotonic() + HEAD_START, delays)
    late = []
    for _ in delays:
        i = q.get()
        late.append(monotonic() - deadlines[i])
    return late


def lock_lateness(delays: Sequence[float]) -> list[float]:
    """The floor: how late ``Lock.acquire(timeout=...)`` to the same deadlines, in order, returns."""
    lock = threading.Lock()
    lock.acquire()
    start = monotonic() + HEAD_START
    late = []
    for deadline in sorted(start + d for d in delays):
        remaining = deadline - monotonic()
        if remaining > 0:
            lock.acquire(timeout=remaining)
        while monotonic() < deadline:  # acquire may return a hair early
            pass
        late.append(monotonic() - deadline)
    return late
