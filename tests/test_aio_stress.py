"""Stress: 4 producer and 4 consumer tasks through a bounded aio.PriorityQueue / aio.DelayQueue.

Nothing lost, nothing duplicated, ``join`` ends, and the consumers see
every item exactly once, with random cancellations of waiting consumers
thrown in.  Each producer puts 50k items into the PriorityQueue (200k per
run); the DelayQueue run moves 50k items (12.5k per producer, to keep the
suite fast), with deadlines up to 2 ms out, none of which may come out early.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from dq_core.aio import QueueShutDown
from helpers import traced_growth
from test_aio_loops import run  # noqa: F401 -- the loop fixture

N = 4 * 50_000
N_DELAY = 50_000
PRODUCERS = CONSUMERS = 4


def test_priority_queue_four_by_four(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=64)
        got: list[int] = []

        async def produce(p):
            for i in range(p, N, PRODUCERS):
                await q.put((i % 97, i))

        async def consume():
            while True:
                try:
                    _, i = await q.get()
                except QueueShutDown:
                    return
                got.append(i)
                q.task_done()

        consumers = [asyncio.ensure_future(consume()) for _ in range(CONSUMERS)]
        await asyncio.gather(*(produce(p) for p in range(PRODUCERS)))
        await asyncio.wait_for(q.join(), 60)
        q.shutdown()
        await asyncio.gather(*consumers)
        return got

    got = run(main())
    assert len(got) == N and set(got) == set(range(N))


def test_priority_queue_with_cancelled_consumers(impl, run):
    # consumers are cancelled at random while waiting; each is replaced, and
    # every item is still taken exactly once (by someone)
    async def main():
        q = impl.aio.PriorityQueue(maxsize=8)
        got: list[int] = []
        rng = random.Random(7)
        n = 10_000

        async def consume():
            while True:
                got.append((await q.get())[1])

        consumers = [asyncio.ensure_future(consume()) for _ in range(CONSUMERS)]
        for i in range(n):
            await q.put((rng.random(), i))
            if i % 50 == 0:
                k = rng.randrange(CONSUMERS)
                consumers[k].cancel()
                consumers[k] = asyncio.ensure_future(consume())
        while q.qsize():
            await asyncio.sleep(0)
        for _ in range(10):
            await asyncio.sleep(0)
        for c in consumers:
            c.cancel()
        await asyncio.gather(*consumers, return_exceptions=True)
        return got, q.get_many()

    got, left = run(main())
    assert left == []
    assert sorted(got) == list(range(10_000)), Counter(got).most_common(3)


def test_delay_queue_four_by_four(impl, run):
    async def main():
        n = N_DELAY
        dq = impl.aio.DelayQueue(maxsize=256)
        got: list[tuple[int, float]] = []
        loop = asyncio.get_running_loop()
        rng = random.Random(3)

        async def produce(p):
            for i in range(p, n, PRODUCERS):
                deadline[i] = d = loop.time() + rng.random() * 0.002
                await dq.put_at(i, d)

        async def consume():
            async for i in dq:
                got.append((i, loop.time()))

        deadline: dict[int, float] = {}
        consumers = [asyncio.ensure_future(consume()) for _ in range(CONSUMERS)]
        await asyncio.gather(*(produce(p) for p in range(PRODUCERS)))
        dq.shutdown()
        await asyncio.wait_for(asyncio.gather(*consumers), 60)
        with_deadline = [(i, t, deadline[i]) for i, t in got]
        return with_deadline

    got = run(main())
    assert sorted(i for i, _, _ in got) == list(range(N_DELAY))
    early = [(i, t, d) for i, t, d in got if t < d]
    assert not early, early[:3]


# -- the compiled core (dq_core._aioqueuecore): no leak, no crash under hostile code -------------

LEAK_OPS = 1_000_000


def test_compiled_core_leaks_nothing_over_a_million_operations(both, run):
    # put_nowait/get_nowait/qsize/full/task_done (PriorityQueue) and
    # put_nowait/get_nowait (DelayQueue), ~1e6 operations in all, plus the
    # waking paths (futures of waiting tasks); the items' reference counts
    # and the traced memory come back to where they were.
    import sys

    c, _ = both
    item = (1, "held")
    due = object()
    item_refs, due_refs = sys.getrefcount(item), sys.getrefcount(due)

    async def nowait_paths():
        q = c.aio.PriorityQueue(maxsize=1000)
        dq = c.aio.DelayQueue()
        for _ in range(LEAK_OPS // 16):
            q.put_nowait(item)
            q.put_nowait((0, "x"))
            q.get_nowait()
            q.get_nowait()
            q.qsize()
            q.full()
            q.empty()
            q.task_done()
            q.task_done()
            dq.put_nowait(due, -1.0)
            dq.get_nowait()
            dq.qsize()
        for exc, call in ((asyncio.QueueEmpty, q.get_nowait), (asyncio.QueueEmpty, dq.get_nowait)):
            for _ in range(1000):
                try:
                    call()
                except exc:
                    pass

    async def waking_paths():
        q = c.aio.PriorityQueue(maxsize=2)
        dq = c.aio.DelayQueue(maxsize=2)

        async def produce():
            for _ in range(5_000):
                await q.put(item)
                await dq.put(due)

        async def consume():
            for _ in range(5_000):
                await q.get()
                await dq.get()

        await asyncio.gather(produce(), consume())

    def work():
        run(nowait_paths())
        run(waking_paths())

    growth = traced_growth(work, 3)
    assert sys.getrefcount(item) == item_refs and sys.getrefcount(due) == due_refs
    assert growth < 64 * 1024, f"{growth} bytes still allocated"


def test_hostile_comparisons_and_clocks_never_crash_nor_lose(impl, run):
    # __lt__ that raises, re-enters the queue (every method that can) or shuts
    # it down; a loop whose time() re-enters the DelayQueue or raises.  Every
    # item put is taken exactly once or still queued; the invariants hold.
    rng = random.Random(11)

    async def main():
        q = impl.aio.PriorityQueue(maxsize=50)
        taken: list[int] = []
        put: list[int] = []

        class Evil:
            mode = "calm"

            def __init__(self, k):
                self.k = k

            def __lt__(self, other):
                mode = Evil.mode
                if mode == "raise" and rng.random() < 0.3:
                    raise ZeroDivisionError("evil")
                if mode == "reenter" and rng.random() < 0.3:
                    op = rng.choice(("put", "get", "size", "many", "done", "shutdown"))
                    try:
                        if op == "put":
                            q.put_nowait(Evil(-1))
                        elif op == "get":
                            taken.append(q.get_nowait().k)
                        elif op == "size":
                            q.qsize(), q.full(), q.empty()
                        elif op == "many":
                            taken.extend(e.k for e in q.get_many(2))
                        elif op == "done":
                            q.task_done()
                        elif not q._is_shutdown and rng.random() < 0.05:
                            q.shutdown(immediate=rng.random() < 0.5)
                    except (RuntimeError, ValueError, asyncio.QueueEmpty, asyncio.QueueFull, QueueShutDown):
                        pass
                return self.k < other.k

        for step in range(3000):
            Evil.mode = rng.choice(("calm", "raise", "reenter"))
            try:
                if rng.random() < 0.55:
                    k = step
                    q.put_nowait(Evil(k))
                    put.append(k)
                else:
                    taken.append(q.get_nowait().k)
            except (ZeroDivisionError, asyncio.QueueEmpty, asyncio.QueueFull, QueueShutDown):
                pass
            if q._is_shutdown:
                break
        Evil.mode = "calm"
        q._check()
        left = [e.k for e in q._heap.snapshot()]
        # immediate shutdowns drop items: those are neither taken nor left
        assert Counter(taken + left) <= Counter(put)
        if not q._is_shutdown:
            assert Counter(taken + left) == Counter(put)
        assert len(set(taken)) == len(taken)

    run(main())


def test_hostile_loop_clock_never_crashes_the_delay_queue(impl):
    # the loop's time() re-enters the queue (put_nowait, get_nowait, cancel,
    # reschedule); nothing crashes, each item put is
    # taken once or still held, and the invariants hold between steps
    rng = random.Random(5)

    class HostileClockLoop(asyncio.SelectorEventLoop):
        dq = None
        armed = False

        def time(self):
            now = super().time()
            dq = self.dq
            if dq is None or not self.armed or rng.random() > 0.2:
                return now
            self.armed = False  # one re-entry at a time: no runaway recursion
            try:
                op = rng.choice(("put", "get", "cancel", "resched"))
                try:
                    if op == "put":
                        k = next(counter)
                        handles[k] = dq.put_nowait(k, rng.choice((-1.0, 0.0, 0.001)))
                        put.append(k)
                    elif op == "get":
                        taken.append(dq.get_nowait())
                    elif op == "cancel" and handles:
                        k = rng.choice(list(handles))
                        if dq.cancel(handles.pop(k)):
                            cancelled.append(k)
                    elif op == "resched" and handles:
                        dq.reschedule(rng.choice(list(handles.values())), 0.0)
                except (RuntimeError, asyncio.QueueEmpty, IndexError, KeyError):
                    pass
            finally:
                self.armed = True
            return now

    import itertools

    counter = itertools.count()
    put: list[int] = []
    taken: list[int] = []
    cancelled: list[int] = []
    handles: dict[int, int] = {}

    async def main():
        loop = asyncio.get_running_loop()
        dq = impl.aio.DelayQueue()
        loop.dq, loop.armed = dq, True

        async def consume():
            while True:
                try:
                    taken.append(await dq.get())
                except IndexError:  # the clock took the head between the peek and the pop
                    continue
                except QueueShutDown:
                    return

        consumers = [asyncio.ensure_future(consume()) for _ in range(3)]
        try:
            await produce(loop, dq)
        except BaseException:  # no consumer left pending when the loop closes
            for task in consumers:
                task.cancel()
            await asyncio.gather(*consumers, return_exceptions=True)
            raise
        await asyncio.wait_for(asyncio.gather(*consumers), 30)
        assert len(dq) == 0

    async def produce(loop, dq):
        for _ in range(1500):
            k = next(counter)
            handles[k] = dq.put_nowait(k, rng.choice((-1.0, 0.0, 0.0005)))
            put.append(k)
            try:
                taken.append(dq.get_nowait())
            except (asyncio.QueueEmpty, IndexError):  # IndexError: the clock took the head
                pass
            if rng.random() < 0.3:
                await asyncio.sleep(0)
        loop.armed = False
        dq._check()
        dq.shutdown()

    loop = HostileClockLoop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert len(set(taken)) == len(taken)
    assert Counter(taken) + Counter(cancelled) == Counter(put)
