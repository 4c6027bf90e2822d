"""pyperf: Heap (compiled and pure) against heapq and iheap, in one run.

    python perf/bench_heap.py -o heap.json          # full run
    python perf/bench_heap.py --fast -o heap.json   # quicker, noisier
    python perf/compare.py heap.json                # medians and ratios

Times are per element (one push or one pop).  The heapq workloads live in
dq_core.benchmarks.heap, shared with ``python -m dq_core.bench``.  The peer,
iheap (``pip install -e ".[bench]"``; skipped when missing), is a Rust
indexed 8-ary heap of float priorities and int handles: ``iheap`` runs it
bare (no payloads, no FIFO among ties), ``iheap+list`` carries the same
payloads as dq_core in a list indexed by its handles, the way its
documentation suggests.  ``--only iheap`` keeps just the rows against it
(compiled dq_core and iheap).
"""

from __future__ import annotations

import math
import random
from time import perf_counter
from typing import Any, Sequence

import pyperf

from dq_core.benchmarks import heap as w
from dq_core.benchmarks.common import implementations

try:
    import iheap
except ImportError:  # the bench extra is optional
    iheap = None

IMPLS = implementations()


# -- iheap, bare and with a payload list -------------------------------------------


def iheap_push_pop(loops: int, prios: Sequence[float]) -> float:
    """Push every priority, then pop everything: no payloads."""
    t0 = perf_counter()
    for _ in range(loops):
        h = iheap.IndexedHeap()
        push = h.push
        for p in prios:
            push(p)
        pop = h.pop
        for _ in prios:
            pop()
    return perf_counter() - t0


def iheap_list_push_pop(loops: int, prios: Sequence[float]) -> float:
    """As dq_core's: every push carries a payload (None), every pop returns it."""
    t0 = perf_counter()
    for _ in range(loops):
        h = iheap.IndexedHeap()
        items: list[Any] = []
        push = h.push
        for p in prios:
            hd = push(p)
            if hd < len(items):
                items[hd] = None
            else:
                items.append(None)
        pop = h.pop
        for _ in prios:
            hd = pop()[0]
            items[hd], _ = None, items[hd]
    return perf_counter() - t0


def iheap_update_remove(loops: int, prios: Sequence[float], new_prios: Sequence[float]) -> float:
    """dq_core's heap_update_remove on iheap, payloads (ints) in a list by handle."""
    t0 = perf_counter()
    for _ in range(loops):
        h = iheap.IndexedHeap()
        push = h.push
        items: list[Any] = []
        handles = []
        for i, p in enumerate(prios):
            hd = push(p)
            handles.append(hd)
            if hd < len(items):
                items[hd] = i
            else:
                items.append(i)
        update = h.update
        for hd, q in zip(handles, new_prios):
            update(hd, q)
        remove = h.remove
        for hd in handles[::2]:
            remove(hd)
            items[hd] = None
        pop = h.pop
        while h:
            hd = pop()[0]
            items[hd], _ = None, items[hd]
    return perf_counter() - t0


# -- Dijkstra with decrease-key ------------------------------------------------------


def random_graph(n: int, degree: int = 4, seed: int = 3) -> list[list[tuple[int, float]]]:
    """n nodes, each with ``degree`` out-edges of random weight, and a path through all."""
    rng = random.Random(seed)
    adj: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for u in range(n):
        adj[u].append(((u + 1) % n, rng.random() * 10))
        for _ in range(degree - 1):
            adj[u].append((rng.randrange(n), rng.random() * 10))
    return adj


def heap_dijkstra(loops: int, heap_cls: Any, adj: list[list[tuple[int, float]]]) -> float:
    """Shortest distances from node 0: push on discovery, update on a shorter path."""
    n = len(adj)
    t0 = perf_counter()
    for _ in range(loops):
        dist = [math.inf] * n
        handle: list[Any] = [None] * n
        h = heap_cls()
        dist[0] = 0.0
        handle[0] = h.push(0.0, 0)
        popitem, push, update = h.popitem, h.push, h.update
        while h:
            d, u = popitem()
            for v, wt in adj[u]:
                nd = d + wt
                if nd < dist[v]:
                    dist[v] = nd
                    if handle[v] is None:
                        handle[v] = push(nd, v)
                    else:
                        update(handle[v], nd)
    return perf_counter() - t0


def iheap_dijkstra(loops: int, adj: list[list[tuple[int, float]]]) -> float:
    """The same on iheap: its handles are recycled, so a list maps handle to node."""
    n = len(adj)
    t0 = perf_counter()
    for _ in range(loops):
        dist = [math.inf] * n
        handle: list[Any] = [None] * n
        node: list[int] = []
        h = iheap.IndexedHeap()
        dist[0] = 0.0
        handle[0] = h.push(0.0)
        node.append(0)
        pop, push, update = h.pop, h.push, h.update
        while h:
            hd, d = pop()
            u = node[hd]
            for v, wt in adj[u]:
                nd = d + wt
                if nd < dist[v]:
                    dist[v] = nd
                    if handle[v] is None:
                        hv = handle[v] = push(nd)
                        if hv < len(node):
                            node[hv] = v
                        else:
                            node.append(v)
                    else:
                        update(handle[v], nd)
    return perf_counter() - t0


def dijkstra_ops(adj: list[list[tuple[int, float]]]) -> int:
    """Heap operations (pushes, updates and pops) one Dijkstra run makes."""
    n = len(adj)
    dist = [math.inf] * n
    seen = [False] * n
    import heapq

    dist[0] = 0.0
    seen[0] = True
    q = [(0.0, 0)]
    ops = 1
    while q:
        d, u = heapq.heappop(q)
        if d > dist[u]:
            continue
        ops += 1
        for v, wt in adj[u]:
            nd = d + wt
            if nd < dist[v]:
                dist[v] = nd
                ops += 1
                heapq.heappush(q, (nd, v))
    return ops


def main() -> None:
    def forward(cmd: list[str], args: Any) -> None:  # the workers register the same rows
        if args.only:
            cmd.extend(("--only", args.only))

    runner = pyperf.Runner(add_cmdline_args=forward)
    runner.argparser.add_argument("--only", choices=["iheap"], help="just the rows against iheap")
    args = runner.parse_args()
    runner.metadata["description"] = "dq_core.Heap vs heapq and iheap"
    if iheap is not None:
        runner.metadata["iheap"] = iheap.__version__
    peers = iheap is not None
    every = args.only is None
    impls = IMPLS if every else IMPLS[:1]
    for n in (1_000, 100_000, 1_000_000):
        prios = w.random_priorities(n)
        for label, impl in impls:
            runner.bench_time_func(
                f"push+pop N={n} {label}", w.heap_push_pop, impl.Heap, prios, inner_loops=2 * n
            )
        if every:
            runner.bench_time_func(f"push+pop N={n} heapq", w.heapq_push_pop, prios, inner_loops=2 * n)
        if peers:
            runner.bench_time_func(f"push+pop N={n} iheap", iheap_push_pop, prios, inner_loops=2 * n)
            runner.bench_time_func(
                f"push+pop N={n} iheap+list", iheap_list_push_pop, prios, inner_loops=2 * n
            )

    n = 100_000
    prios = w.random_priorities(n)
    items = list(range(n))
    if every:
        for label, impl in impls:
            runner.bench_time_func(
                f"push_many+pop_many N={n} {label}", w.heap_bulk, impl.Heap, prios, items, inner_loops=2 * n
            )
        runner.bench_time_func(
            f"push_many+pop_many N={n} heapq", w.heapq_bulk, prios, items, inner_loops=2 * n
        )

    m = 10_000
    small, new = prios[:m], w.random_priorities(m, seed=2)
    ops = 3 * m + m // 2
    for label, impl in impls:
        runner.bench_time_func(
            f"update+remove N={m} {label}", w.heap_update_remove, impl.Heap, small, new, inner_loops=ops
        )
    if every:
        runner.bench_time_func(
            f"update+remove N={m} heapq-lazy", w.heapq_update_remove, small, new, inner_loops=ops
        )
    if peers:
        runner.bench_time_func(
            f"update+remove N={m} iheap+list", iheap_update_remove, small, new, inner_loops=ops
        )

    if peers:
        adj = random_graph(100_000)
        ops = dijkstra_ops(adj)
        for label, impl in impls:
            runner.bench_time_func(
                f"dijkstra N=100000 {label}", heap_dijkstra, impl.Heap, adj, inner_loops=ops
            )
        runner.bench_time_func("dijkstra N=100000 iheap+list", iheap_dijkstra, adj, inner_loops=ops)


if __name__ == "__main__":
    main()
