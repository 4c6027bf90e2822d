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

from test_aio_loops import run  # noqa: F401 -- the loop fixture

from dq_core.aio import QueueShutDown

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
