"""Heap workloads: ``dq_core.Heap`` against heapq."""

from __future__ import annotations

import heapq
import itertools
import random
from time import perf_counter
from typing import Any, Sequence

from .common import calls, fill_then_drain

__all__ = [
    "random_priorities",
    "heap_push_pop",
    "heapq_push_pop",
    "heap_bulk",
    "heapq_bulk",
    "heap_update_remove",
    "heapq_update_remove",
]


def random_priorities(n: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(n)]


def heap_push_pop(loops: int, heap_cls: Any, prios: Sequence[float]) -> float:
    """Push every priority, then pop everything."""

    def fill(h: Any) -> None:
        push = h.push
        for p in prios:
            push(p, None)

    return fill_then_drain(loops, heap_cls, fill, calls("pop", prios))


def heapq_push_pop(loops: int, prios: Sequence[float]) -> float:
    """The heapq way: ``(priority, seq, item)`` tuples, so ties never compare items."""
    push = heapq.heappush
    pop = heapq.heappop
    t0 = perf_counter()
    for _ in range(loops):
        h: list[tuple[float, int, None]] = []
        count = itertools.count()
        for p in prios:
            push(h, (p, next(count), None))
        for _ in prios:
            pop(h)
    return perf_counter() - t0


def heap_bulk(loops: int, heap_cls: Any, prios: Sequence[float], items: Sequence[Any]) -> float:
    """push_many everything, then pop_many everything."""
    n = len(items)
    t0 = perf_counter()
    for _ in range(loops):
        h = heap_cls()
        h.push_many(prios, items)
        h.pop_many(n)
    return perf_counter() - t0


def heapq_bulk(loops: int, prios: Sequence[float], items: Sequence[Any]) -> float:
    """Build the tuples, heapify, and drain to a list of items."""
    pop = heapq.heappop
    n = len(items)
    t0 = perf_counter()
    for _ in range(loops):
        h = [(p, i, it) for i, (p, it) in enumerate(zip(prios, items))]
        heapq.heapify(h)
        [pop(h)[2] for _ in range(n)]
    return perf_counter() - t0


def heap_update_remove(
    loops: int, heap_cls: Any, prios: Sequence[float], new_prios: Sequence[float]
) -> float:
    """Push all, re-prioritise all, remove every other one, drain."""
    t0 = perf_counter()
    for _ in range(loops):
        h = heap_cls()
        push = h.push
        handles = [push(p, i) for i, p in enumerate(prios)]
        update = h.update
        for hd, q in zip(handles, new_prios):
            update(hd, q)
        remove = h.remove
        for hd in handles[::2]:
            remove(hd)
        pop = h.pop
        while h:
            pop()
    return perf_counter() - t0


def heapq_update_remove(loops: int, prios: Sequence[float], new_prios: Sequence[float]) -> float:
    """The heapq documentation's recipe: an entry map and lazy deletion."""
    push = heapq.heappush
    pop = heapq.heappop
    removed = object()
    t0 = perf_counter()
    for _ in range(loops):
        h: list[list[Any]] = []
        finder: dict[int, list[Any]] = {}
        count = itertools.count()
        for i, p in enumerate(prios):
            entry = [p, next(count), i]
            finder[i] = entry
            push(h, entry)
        for i, q in enumerate(new_prios):
            finder.pop(i)[-1] = removed
            entry = [q, next(count), i]
            finder[i] = entry
            push(h, entry)
        for i in range(0, len(prios), 2):
            finder.pop(i)[-1] = removed
        while h:
            task = pop(h)[-1]
            if task is not removed:
                del finder[task]
    return perf_counter() - t0
