"""aio.PriorityQueue in lockstep with asyncio.PriorityQueue itself.

Hypothesis draws a maxsize and a sequence of operations: the ``_nowait``
forms, ``task_done``, ``shutdown`` (where asyncio has it, 3.13+), and
coroutines started as tasks (``put``, ``get``, ``join``) that are cancelled
at random points while the loop steps.  Both queues get every operation in
the same loop; after each one the results, the exception types, the sizes
and the state of every task pair must agree, and at the end so must the
order in which the items come out.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_aio_loops import LOOPS, run_on

HAS_SHUTDOWN = hasattr(asyncio.Queue, "shutdown")

items = st.tuples(st.integers(0, 4), st.integers(0, 2))
op = st.one_of(
    st.tuples(st.just("put_nowait"), items),
    st.tuples(st.just("put"), items),
    st.just(("get_nowait",)),
    st.just(("get",)),
    st.just(("join",)),
    st.just(("task_done",)),
    st.tuples(st.just("cancel"), st.integers(0, 7)),
    st.tuples(st.just("step"), st.integers(1, 3)),
    *([st.tuples(st.just("shutdown"), st.booleans())] if HAS_SHUTDOWN else []),
)


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except Exception as exc:  # compared by type: the classes are asyncio's own
        return ("raised", type(exc))


def task_state(task):
    if not task.done():
        return "pending"
    if task.cancelled():
        return "cancelled"
    exc = task.exception()
    return ("raised", type(exc)) if exc else ("ok", task.result())


def exc_kind(exc_type):
    # dq_core's own QueueShutDown before 3.13 has asyncio's name
    return exc_type.__name__ if exc_type.__module__ in ("dq_core.aio", "asyncio.queues") else exc_type


async def lockstep(PQ, maxsize, ops):
    ours, ref = PQ(maxsize), asyncio.PriorityQueue(maxsize)
    tasks = []  # pairs (ours, ref)
    for o in ops:
        name = o[0]
        if name in ("put_nowait", "get_nowait", "task_done") + (("shutdown",) if HAS_SHUTDOWN else ()):
            args = o[1:]
            a = outcome(getattr(ours, name), *args)
            b = outcome(getattr(ref, name), *args)
            if a[0] == "raised":
                a, b = (a[0], exc_kind(a[1])), (b[0], exc_kind(b[1]))
            assert a == b, (o, a, b)
        elif name in ("put", "get", "join"):
            args = o[1:]
            tasks.append(
                (
                    asyncio.ensure_future(getattr(ours, name)(*args)),
                    asyncio.ensure_future(getattr(ref, name)(*args)),
                )
            )
        elif name == "cancel":
            pending = [t for t in tasks if not t[0].done() or not t[1].done()]
            if pending:
                for t in pending[o[1] % len(pending)]:
                    t.cancel()
        else:
            for _ in range(o[1]):
                await asyncio.sleep(0)
        assert (ours.qsize(), ours.empty(), ours.full()) == (ref.qsize(), ref.empty(), ref.full()), o
        for a, b in tasks:
            sa, sb = task_state(a), task_state(b)
            if isinstance(sa, tuple) and sa[0] == "raised":
                sa, sb = (sa[0], exc_kind(sa[1])), (sb[0], exc_kind(sb[1]))
            assert sa == sb, (o, sa, sb)
    ours._check()
    assert ours._unfinished_tasks == ref._unfinished_tasks
    drained = [ours.get_nowait() for _ in range(ours.qsize())]
    assert drained == [ref.get_nowait() for _ in range(ref.qsize())]
    for pair in tasks:
        for t in pair:
            t.cancel()
    await asyncio.gather(*(t for pair in tasks for t in pair), return_exceptions=True)


@pytest.mark.parametrize("loop", LOOPS)
def test_lockstep_with_asyncio_priority_queue(impl, loop):
    @settings(max_examples=150)
    @given(maxsize=st.integers(0, 3), ops=st.lists(op, max_size=40))
    def check(maxsize, ops):
        run_on(loop, lockstep(impl.aio.PriorityQueue, maxsize, ops))

    check()


def test_lockstep_runs_the_waiting_paths(impl):
    # a fixed script through every waiting path, so the comparison above is
    # known to reach them whatever hypothesis draws
    script = [
        ("get",),
        ("get",),
        ("step", 2),
        ("put_nowait", (1, 0)),
        ("cancel", 0),
        ("step", 3),
        ("put_nowait", (0, 0)),
        ("put", (2, 0)),
        ("put", (3, 0)),
        ("step", 2),
        ("get_nowait",),
        ("cancel", 0),
        ("step", 3),
        ("join",),
        ("task_done",),
        ("step", 2),
    ]
    run_on("asyncio", lockstep(impl.aio.PriorityQueue, 1, script))


@pytest.mark.skipif(not HAS_SHUTDOWN, reason="asyncio.Queue.shutdown is new in 3.13")
@pytest.mark.parametrize("immediate", [False, True])
def test_lockstep_runs_shutdown_with_waiters(impl, immediate):
    script = [
        ("put_nowait", (1, 0)),
        ("put", (2, 0)),
        ("put", (0, 0)),
        ("join",),
        ("step", 2),
        ("shutdown", immediate),
        ("step", 3),
        ("get",),
        ("get",),
        ("step", 3),
        ("put_nowait", (3, 0)),
        ("task_done",),
        ("step", 2),
        ("get_nowait",),
    ]
    run_on("asyncio", lockstep(impl.aio.PriorityQueue, 1, script))
