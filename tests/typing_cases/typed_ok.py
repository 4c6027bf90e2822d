"""A typed user program that must pass ``mypy --strict`` (see tests/test_typing.py).

Each ``check_*`` function is one case: an error inside it fails that case
only.  ``assert_type`` fails on ``Any``, so a leak shows here.
"""

from __future__ import annotations

import queue
from concurrent.futures import Future
from dataclasses import dataclass, field

from typing_extensions import assert_type

from dq_core import DelayQueue, Heap, PriorityExecutor, PriorityQueue, Timer, TTLDict


@dataclass(order=True)
class Job:
    priority: int
    name: str = field(compare=False)


def uses_stdlib_queue(q: queue.PriorityQueue[Job]) -> Job:
    return q.get()


def first(q: PriorityQueue[tuple[int, str]]) -> tuple[int, str]:
    return q.get()


def check_priority_queue() -> None:
    q: PriorityQueue[Job] = PriorityQueue(maxsize=10)
    q.put(Job(2, "b"))
    q.put(Job(4, "d"), block=True, timeout=1.0)
    q.put_nowait(Job(1, "a"))
    q.put_many([Job(3, "c")])
    assert_type(q.peek(), Job)
    assert_type(q.queue[0], Job)
    assert_type(q.queue[1:], list[Job])
    assert_type(len(q.queue), int)
    for job in q.queue:
        assert_type(job, Job)
    assert_type(q.get(), Job)
    assert_type(q.get(timeout=1.0), Job)
    assert_type(q.get_nowait(), Job)
    assert_type(q.get_many(), list[Job])
    assert_type(q.get_many(2), list[Job])
    assert_type(uses_stdlib_queue(q), Job)
    assert_type(q.qsize(), int)
    q.task_done()
    q.queue.clear()
    q.clear()
    q.shutdown(immediate=True)


def check_priority_queue_of_tuples() -> None:
    q = PriorityQueue[tuple[int, str]]()
    q.put((1, "a"))
    assert_type(first(q), tuple[int, str])
    assert_type(q.get_many(), list[tuple[int, str]])


def check_heap() -> None:
    h: Heap[str] = Heap()
    handle = h.push(1.0, "x")
    assert_type(handle, int)
    assert_type(h.peek(), str)
    assert_type(h.pop(), str)


def check_delay_queue() -> None:
    dq: DelayQueue[str] = DelayQueue()
    dq.put("x", 0.5)
    assert_type(dq.get_nowait(), str)
    assert_type(dq.get_many(), list[str])


def check_ttl_dict() -> None:
    d: TTLDict[str, int] = TTLDict(10.0)
    d["a"] = 1
    assert_type(d["a"], int)
    for key in d:
        assert_type(key, str)
    assert_type(d.expire(), list[tuple[str, int]])


def takes_str(s: str) -> None:
    pass


def check_timer() -> None:
    with Timer() as t:
        t.call_later(1.0, takes_str, "x")


def work(n: int) -> str:
    return str(n)


def check_executor() -> None:
    with PriorityExecutor(max_workers=1) as ex:
        fut = ex.submit(work, 1)
        assert_type(fut, Future[str])
        assert_type(fut.result(), str)
