"""Quick comparison of dq_core against the standard library.

Run ``python -m dq_core.bench`` (or ``--quick`` for a run of a few seconds).
Each row times one workload on the implementation in use and on its stdlib
counterpart in the same process, and prints nanoseconds per element and the
speed ratio.  For careful numbers use the pyperf scripts in ``perf/``; they
call the same workload functions.

Every workload function has pyperf's time-function signature:
``f(loops, *args) -> seconds`` for ``loops`` repetitions.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import queue
import random
import statistics
import sys
import threading
from time import monotonic, perf_counter
from typing import Any, Callable, Sequence

__all__ = ["main", "rows"]

Workload = Callable[..., float]


def random_priorities(n: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(n)]


# -- Heap --------------------------------------------------------------------


def heap_push_pop(loops: int, heap_cls: Any, prios: Sequence[float]) -> float:
    """Push every priority, then pop everything."""
    t0 = perf_counter()
    for _ in range(loops):
        h = heap_cls()
        push = h.push
        pop = h.pop
        for p in prios:
            push(p, None)
        for _ in prios:
            pop()
    return perf_counter() - t0


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


# -- PriorityQueue -------------------------------------------------------------


def pq_items(n: int, levels: int = 100, seed: int = 3) -> list[tuple[int, str]]:
    """``(int, str)`` tuples; with few priority ``levels`` many tie on the int."""
    rng = random.Random(seed)
    return [(rng.randrange(levels), f"job-{i}") for i in range(n)]


def pq_fill_drain(loops: int, queue_cls: Any, items: Sequence[Any]) -> float:
    """put_nowait everything, then get_nowait everything."""
    t0 = perf_counter()
    for _ in range(loops):
        q = queue_cls()
        put = q.put_nowait
        get = q.get_nowait
        for x in items:
            put(x)
        for _ in items:
            get()
    return perf_counter() - t0


def pq_alternating(loops: int, queue_cls: Any, items: Sequence[Any],
                   clock: Callable[[], float] = perf_counter) -> float:
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


# -- DelayQueue --------------------------------------------------------------


class HeapqDelayBase:
    """What the hand-made delay queues (threads here, asyncio in aio/_bench) hold."""

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
    t0 = perf_counter()
    for _ in range(loops):
        q = queue_cls()
        put = q.put
        get = q.get_nowait
        for i, d in enumerate(delays):
            put(i, d)
        for _ in delays:
            get()
    return perf_counter() - t0


# -- TTLRing and TTLDict ------------------------------------------------------


class FakeTimer:
    """A clock that tests and benchmarks move by hand."""

    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def ring_with_backlog(ring_cls: Any, n: int) -> Any:
    ring = ring_cls(60.0)
    for i in range(n):
        ring.push(i, 0.0)
    return ring


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


# -- TimingWheel ----------------------------------------------------------------

#: The timer workload: tick 1 ms, delays uniform in 0-60 s, every other timer
#: cancelled, then the clock advanced tick by tick through 61 s (``steps``
#: equal steps: perf/sweep.py takes N steps for N timers).
WHEEL_TICK = 0.001
WHEEL_TICKS = 61_000  # 61 s of ticks
HORIZON = WHEEL_TICKS * WHEEL_TICK


def timer_delays(n: int, seed: int = 4) -> list[float]:
    rnd = random.Random(seed)
    return [rnd.uniform(0.0, 60.0) for _ in range(n)]


def wheel_timers(loops: int, wheel_cls: Any, delays: Sequence[float],
                 steps: int = WHEEL_TICKS) -> float:
    """Schedule every delay, cancel every other timer, advance in ``steps`` steps to the end."""
    total = 0.0
    for _ in range(loops):
        timer = FakeTimer()
        t0 = perf_counter()
        w = wheel_cls(WHEEL_TICK, 256, clock=timer)
        at = w.schedule_at
        handles = [at(i, d) for i, d in enumerate(delays)]
        cancel = w.cancel
        for h in handles[::2]:
            cancel(h)
        advance = w.advance
        fired = 0
        step = HORIZON / steps  # WHEEL_TICK itself for the default
        for k in range(1, steps + 1):
            fired += len(advance(k * step))
        total += perf_counter() - t0
        assert fired == len(delays) // 2
    return total


def heapq_timers(loops: int, delays: Sequence[float], steps: int = WHEEL_TICKS) -> float:
    """The same with heapq and lazy cancellation (the heapq docs' recipe)."""
    total = 0.0
    push, pop = heapq.heappush, heapq.heappop
    for _ in range(loops):
        t0 = perf_counter()
        q: list[list[Any]] = []
        entries: list[list[Any]] = []
        for i, d in enumerate(delays):
            entry: list[Any] = [d, i, i]
            push(q, entry)
            entries.append(entry)
        for entry in entries[::2]:
            entry[2] = None  # cancelled: skipped when it surfaces
        fired = 0
        step = HORIZON / steps
        for k in range(1, steps + 1):
            now = k * step
            out = []
            while q and q[0][0] <= now:
                item = pop(q)[2]
                if item is not None:
                    out.append(item)
            fired += len(out)
        total += perf_counter() - t0
        assert fired == len(delays) // 2
    return total


def sched_timers(loops: int, delays: Sequence[float], steps: int = WHEEL_TICKS) -> float:
    """The same with sched.scheduler (its cancel is O(n)) and no-op actions."""
    import sched

    total = 0.0
    for _ in range(loops):
        timer = FakeTimer()
        t0 = perf_counter()
        s = sched.scheduler(timer, lambda _: None)
        enter = s.enterabs
        events = [enter(d, 0, int) for d in delays]
        for ev in events[::2]:
            s.cancel(ev)
        run = s.run
        step = HORIZON / steps
        for k in range(1, steps + 1):
            timer.now = k * step
            run(blocking=False)
        total += perf_counter() - t0
        assert s.empty()
    return total


def wheel_schedule(loops: int, wheel_cls: Any, delays: Sequence[float],
                   method: str = "schedule_at") -> float:
    """One ``method`` call per delay, alone, into a wheel that grows to len(delays) timers.

    ``schedule_at`` runs on a fake clock at 0, so every deadline lies ahead;
    ``schedule`` runs on the default clock (time.monotonic) and pays for reading it.
    """
    total = 0.0
    for _ in range(loops):
        if method == "schedule_at":
            w = wheel_cls(WHEEL_TICK, 256, clock=FakeTimer())
        else:
            w = wheel_cls(WHEEL_TICK, 256)
        call = getattr(w, method)
        t0 = perf_counter()
        for d in delays:
            call(None, d)
        total += perf_counter() - t0
    return total


def wheel_cancel(loops: int, wheel_cls: Any, delays: Sequence[float]) -> float:
    """cancel() alone, of every timer of a full wheel, in scheduling order."""
    total = 0.0
    for _ in range(loops):
        w = wheel_cls(WHEEL_TICK, 256, clock=FakeTimer())
        at = w.schedule_at
        handles = [at(None, d) for d in delays]
        cancel = w.cancel
        t0 = perf_counter()
        for h in handles:
            cancel(h)
        total += perf_counter() - t0
    return total


def heapq_push(loops: int, delays: Sequence[float]) -> float:
    """heappush of a [deadline, seq, item] entry: heapq's schedule."""
    total = 0.0
    push = heapq.heappush
    for _ in range(loops):
        q: list[list[Any]] = []
        t0 = perf_counter()
        for i, d in enumerate(delays):
            push(q, [d, i, None])
        total += perf_counter() - t0
    return total


def wheel_bytes_per_timer(wheel_cls: Any, delays: Sequence[float]) -> tuple[float, float]:
    """Bytes per pending timer (payload and the caller's handles excluded): wheel, heapq."""
    import tracemalloc

    item = object()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        w = wheel_cls(WHEEL_TICK, 256, clock=FakeTimer())
        for d in delays:
            w.schedule_at(item, d)
        wheel = tracemalloc.get_traced_memory()[0] - base
        del w
        base = tracemalloc.get_traced_memory()[0]
        q: list[tuple[float, int, Any]] = []
        for i, d in enumerate(delays):
            heapq.heappush(q, (d, i + 2**40, item))  # a seq int beyond the small-int cache
        heap = tracemalloc.get_traced_memory()[0] - base
        del q
    finally:
        tracemalloc.stop()
    return wheel / len(delays), heap / len(delays)


# -- the implementations ----------------------------------------------------


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


# -- the table ---------------------------------------------------------------


def rows(quick: bool = False) -> list[tuple[str, Workload, tuple[Any, ...], Workload, tuple[Any, ...], int]]:
    """(label, dq_core workload, args, baseline workload, args, elements) per row."""
    from dq_core import DelayQueue, Heap, PriorityQueue, TimingWheel, TTLDict, TTLRing

    n = 20_000 if quick else 100_000
    prios = random_priorities(n)
    items = list(range(n))
    m = n // 10
    small, new = prios[:m], random_priorities(m, seed=2)
    jobs = pq_items(m)
    past = [-p for p in small]  # already due: measures the queue, not the clock
    return [
        (f"Heap push+pop, N={n:,}", heap_push_pop, (Heap, prios),
         heapq_push_pop, (prios,), 2 * n),
        (f"Heap push_many+pop_many, N={n:,}", heap_bulk, (Heap, prios, items),
         heapq_bulk, (prios, items), 2 * n),
        (f"Heap update+remove, N={m:,}", heap_update_remove, (Heap, small, new),
         heapq_update_remove, (small, new), 3 * m + m // 2),
        ("PriorityQueue put_nowait+get_nowait", pq_alternating, (PriorityQueue, jobs),
         pq_alternating, (queue.PriorityQueue, jobs), 2 * m),
        (f"PriorityQueue fill+drain, N={m:,}", pq_fill_drain, (PriorityQueue, jobs),
         pq_fill_drain, (queue.PriorityQueue, jobs), 2 * m),
        ("PriorityQueue 1 producer+1 consumer", pq_threads, (PriorityQueue, jobs),
         pq_threads, (queue.PriorityQueue, jobs), m),
        (f"DelayQueue put+get, N={m:,}", delay_fill_drain, (DelayQueue, past),
         delay_fill_drain, (HeapqDelayQueue, past), 2 * m),
    ] + _ttl_rows(TTLRing, TTLDict, m) + _wheel_rows(TimingWheel, n, m) + _aio_rows(quick)


def _aio_rows(quick: bool) -> list[Any]:
    from dq_core.aio._bench import rows as aio_rows  # the default loop; uvloop in perf/bench_aio.py

    return aio_rows(quick)


def _wheel_rows(wheel_cls: Any, n: int, m: int) -> list[Any]:
    timers, few = timer_delays(n), timer_delays(m // 5)
    return [
        (f"TimingWheel {n:,} timers, half cancelled", wheel_timers, (wheel_cls, timers),
         heapq_timers, (timers,), n),
        (f"TimingWheel vs sched, {m // 5:,} timers", wheel_timers, (wheel_cls, few),
         sched_timers, (few,), m // 5),
    ]


def _ttl_rows(ring_cls: Any, dict_cls: Any, m: int) -> list[Any]:
    try:
        import cachetools  # noqa: F401  (the baseline; not a dependency)
    except ImportError:
        return []
    backlog = 100_000
    ring = ring_with_backlog(ring_cls, backlog)
    import cachetools

    cache: Any = cachetools.TTLCache(maxsize=float("inf"), ttl=60.0, timer=lambda: 0.0)
    for i in range(backlog):
        cache[i] = i
    return [
        (f"TTLRing.expire(), nothing due, {backlog:,} held", ring_expire_nothing_due, (ring,),
         cachetools_expire_nothing_due, (cache,), 1000),
        (f"TTLDict set+get+expire, N={m:,}", ttl_set_get_expire, (make_ttldict(dict_cls), m),
         ttl_set_get_expire, (make_ttlcache, m), 3 * m),
    ]


def _ns_per_element(fn: Workload, args: tuple[Any, ...], elements: int, repeat: int) -> float:
    fn(1, *args)  # warm up
    samples = [fn(1, *args) for _ in range(repeat)]
    return statistics.median(samples) / elements * 1e9


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dq_core.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (a few seconds)")
    args = parser.parse_args(argv)

    import dq_core

    repeat = 3 if args.quick else 7
    print(f"dq_core {dq_core.__version__} ({dq_core.implementation}), Python {sys.version.split()[0]}")
    print(f"median of {repeat} runs; ns per element; ratio = stdlib time / dq_core time\n")
    header = f"{'operation':<46} {'dq_core':>10} {'stdlib':>10} {'ratio':>7}  baseline"
    print(header)
    print("-" * len(header))
    for label, fn, fargs, base, bargs, elements in rows(args.quick):
        ours = _ns_per_element(fn, fargs, elements, repeat)
        theirs = _ns_per_element(base, bargs, elements, repeat)
        print(f"{label:<46} {ours:>10.1f} {theirs:>10.1f} {theirs / ours:>6.2f}x  {base.__name__}")
        sys.stdout.flush()
    wheel, heap = wheel_bytes_per_timer(dq_core.TimingWheel, timer_delays(100_000 if args.quick else 1_000_000))
    print(f"\nTimingWheel memory per pending timer: {wheel:.1f} bytes "
          f"(heapq (deadline, seq, item) entry: {heap:.1f} bytes)")
    try:
        import cachetools  # noqa: F401
    except ImportError:
        print("\n(TTLRing/TTLDict rows compare with cachetools: pip install cachetools)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
