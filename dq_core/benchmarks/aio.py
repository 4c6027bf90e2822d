"""Asyncio workloads: ``dq_core.aio``'s queues against asyncio's and a hand-made delay queue.

Each has pyperf's time-function signature, ``f(loops, *args) -> seconds``,
and runs on a fresh event loop made by its ``new_loop`` argument
(``asyncio.new_event_loop`` or ``uvloop.new_event_loop``); only the work
inside the loop is timed, in CPU seconds of the process
(``time.process_time``): these workloads never sleep, and so other
processes on a loaded machine do not enter the numbers.
``AsyncHeapqDelayQueue`` is the baseline DelayQueue: the usual hand-made
one, heapq with an ``asyncio.Event`` that wakes getters and
``asyncio.wait_for`` to sleep until the head is due.
"""

from __future__ import annotations

import asyncio
import heapq
import threading
import time
from time import process_time as perf_counter  # CPU time: see above
from typing import Any, Callable, Coroutine, Optional, Sequence, TypeVar

from . import queues
from .common import HEAD_START, put_all_at
from .queues import HeapqDelayBase

__all__ = [
    "NewLoop",
    "run_on",
    "AsyncHeapqDelayQueue",
    "pq_alternating",
    "pq_producers_consumers",
    "delay_put_get",
    "delay_waiting_consumers",
    "delay_lateness",
    "sleep_lateness",
    "Feeder",
    "feed_put_threadsafe",
    "feed_call_soon_threadsafe",
    "feed_janus",
    "feed_culsans",
    "thread_feed",
]

NewLoop = Callable[[], asyncio.AbstractEventLoop]


R = TypeVar("R")


def run_on(new_loop: NewLoop, coro: Coroutine[Any, Any, R]) -> R:
    """Run ``coro`` to its end on a fresh loop of ``new_loop``, then close the loop."""
    loop = new_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def pq_alternating(
    loops: int, queue_cls: Any, items: Sequence[Any], new_loop: NewLoop = asyncio.new_event_loop
) -> float:
    """One put_nowait and one get_nowait in turn, 100 items held."""

    async def main() -> float:
        return queues.pq_alternating(loops, queue_cls, items, clock=perf_counter)

    return run_on(new_loop, main())


def pq_producers_consumers(
    loops: int,
    queue_cls: Any,
    items: Sequence[Any],
    new_loop: NewLoop = asyncio.new_event_loop,
    tasks: int = 4,
    maxsize: int = 64,
) -> float:
    """``tasks`` producer and ``tasks`` consumer tasks, ``await put``/``await get``, bounded."""

    async def main() -> float:
        total = 0.0
        for _ in range(loops):
            q = queue_cls(maxsize)
            share = len(items) // tasks

            async def produce(part: Sequence[Any]) -> None:
                put = q.put
                for x in part:
                    await put(x)

            async def consume(n: int) -> None:
                get = q.get
                for _ in range(n):
                    await get()

            t0 = perf_counter()
            await asyncio.gather(
                *(produce(items[k * share : (k + 1) * share]) for k in range(tasks)),
                *(consume(share) for _ in range(tasks)),
            )
            total += perf_counter() - t0
        return total

    return run_on(new_loop, main())


class AsyncHeapqDelayQueue(HeapqDelayBase):
    """The usual hand-made asyncio delay queue: heapq, an Event, and wait_for."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = asyncio.Event()

    def put_nowait(self, item: Any, delay: float = 0.0) -> None:
        entry = (asyncio.get_running_loop().time() + delay, next(self._count), item)
        heapq.heappush(self._heap, entry)
        if self._heap[0] is entry:
            self._changed.set()

    async def get(self) -> Any:
        loop = asyncio.get_running_loop()
        heap = self._heap
        while True:
            wait: Optional[float] = None
            if heap:
                wait = heap[0][0] - loop.time()
                if wait <= 0:
                    return heapq.heappop(heap)[2]
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), wait)
            except asyncio.TimeoutError:
                pass


def delay_put_get(
    loops: int, queue_cls: Any, delays: Sequence[float], new_loop: NewLoop = asyncio.new_event_loop
) -> float:
    """put_nowait every item (already due), then ``await get()`` every one."""

    async def main() -> float:
        t0 = perf_counter()
        for _ in range(loops):
            q = queue_cls()
            put, get = q.put_nowait, q.get
            for i, d in enumerate(delays):
                put(i, d)
            for _ in delays:
                await get()
        return perf_counter() - t0

    return run_on(new_loop, main())


def delay_waiting_consumers(
    loops: int, queue_cls: Any, n: int, new_loop: NewLoop = asyncio.new_event_loop, consumers: int = 4
) -> float:
    """``consumers`` tasks wait in ``get``; a producer puts items due now, one per loop step."""

    async def main() -> float:
        total = 0.0
        for _ in range(loops):
            q = queue_cls()
            per = n // consumers

            async def consume() -> None:
                get = q.get
                for _ in range(per):
                    await get()

            tasks = [asyncio.ensure_future(consume()) for _ in range(consumers)]
            await asyncio.sleep(0)
            t0 = perf_counter()
            put = q.put_nowait
            for i in range(per * consumers):
                put(i, 0.0)
                await asyncio.sleep(0)
            await asyncio.gather(*tasks)
            total += perf_counter() - t0
        return total

    return run_on(new_loop, main())


def delay_lateness(
    queue_cls: Any, delays: Sequence[float], new_loop: NewLoop = asyncio.new_event_loop
) -> list[float]:
    """How late ``await get()`` returns, in seconds: loop.time() at return minus the deadline."""

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        q = queue_cls()
        deadlines = put_all_at(q.put_at_nowait, loop.time() + HEAD_START, delays)
        late = []
        for _ in delays:
            i = await q.get()
            late.append(loop.time() - deadlines[i])
        return late

    return run_on(new_loop, main())


def sleep_lateness(delays: Sequence[float], new_loop: NewLoop = asyncio.new_event_loop) -> list[float]:
    """The floor: how late ``asyncio.sleep`` to the same deadlines, in order, returns."""

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        start = loop.time() + HEAD_START
        late = []
        for d in sorted(delays):
            deadline = start + d
            while loop.time() < deadline:
                await asyncio.sleep(deadline - loop.time())
            late.append(loop.time() - deadline)
        return late

    return run_on(new_loop, main())


# -- a producer thread feeding a consumer task -----------------------------------------

#: ``feeder()``, called in the running loop, makes a queue and returns
#: ``(put, get, close)``: ``put(item)`` for the producer thread, ``get()`` the
#: consumer's coroutine function, ``close()`` a coroutine function run at the end.
Feeder = Callable[[], tuple[Callable[[Any], Any], Callable[[], Any], Callable[[], Any]]]


async def _nothing() -> None:
    pass


def feed_put_threadsafe(queue_cls: Any) -> Feeder:
    """``queue_cls().put_threadsafe`` (an aio.PriorityQueue of either implementation)."""

    def feeder() -> tuple[Any, Any, Any]:
        q = queue_cls()
        return q.put_threadsafe, q.get, _nothing

    return feeder


def feed_call_soon_threadsafe(queue_cls: Any) -> Feeder:
    """``loop.call_soon_threadsafe(q.put_nowait, item)``: the stdlib's way in, one loop wake-up an item."""

    def feeder() -> tuple[Any, Any, Any]:
        q = queue_cls()
        call = asyncio.get_running_loop().call_soon_threadsafe
        put_nowait = q.put_nowait
        return (lambda item: call(put_nowait, item)), q.get, _nothing

    return feeder


def feed_janus() -> tuple[Any, Any, Any]:
    """janus.PriorityQueue: ``sync_q.put`` in the thread, ``async_q.get`` in the task."""
    import janus

    q: Any = janus.PriorityQueue()

    async def close() -> None:
        await q.aclose()

    return q.sync_q.put, q.async_q.get, close


def feed_culsans() -> tuple[Any, Any, Any]:
    """culsans.PriorityQueue: ``sync_q.put`` in the thread, ``async_q.get`` in the task."""
    import culsans

    q: Any = culsans.PriorityQueue()
    return q.sync_q.put, q.async_q.get, _nothing


def thread_feed(
    loops: int, feeder: Feeder, items: Sequence[Any], new_loop: NewLoop = asyncio.new_event_loop
) -> float:
    """A thread puts every item of ``items``; one task awaits ``get()`` for each.

    Wall-clock seconds (``time.perf_counter``) from the thread's start to the
    last item taken: two threads take turns, so CPU time would leave out
    the hand-over's waits.
    """

    async def main() -> float:
        total = 0.0
        for _ in range(loops):
            put, get, close = feeder()

            def produce() -> None:
                for x in items:
                    put(x)

            worker = threading.Thread(target=produce)
            t0 = time.perf_counter()
            worker.start()
            for _ in items:
                await get()
            total += time.perf_counter() - t0
            worker.join()
            await close()
        return total

    return run_on(new_loop, main())
