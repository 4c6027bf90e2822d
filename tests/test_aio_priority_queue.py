"""aio.PriorityQueue: every blocking path, cancellation, shutdown, join and the extras.

Each test runs on both implementations (``impl``: c/py) and both loops
(``run``: asyncio/uvloop).  The lockstep comparison with
asyncio.PriorityQueue itself is in test_aio_lockstep.py.
"""

from __future__ import annotations

import asyncio
import copy
import pickle
import sys
import warnings
from decimal import Decimal
from fractions import Fraction

import pytest

import dq_core
from dq_core import aio
from test_aio_loops import run, settle, until_waiting  # noqa: F401 -- the loop fixture

QueueShutDown = aio.QueueShutDown


# -- the surface ----------------------------------------------------------------------


def test_is_an_asyncio_priority_queue_and_generic(impl):
    PQ = impl.aio.PriorityQueue
    q = PQ()
    assert isinstance(q, asyncio.PriorityQueue) and isinstance(q, asyncio.Queue)
    assert PQ[int].__origin__ is PQ
    assert PQ.__module__ == "dq_core.aio"
    assert q.maxsize == 0 and q.qsize() == 0 and q.empty() and not q.full()


def test_the_matrix_tests_the_aio_classes_that_ship(impl):
    from dq_core._assemble import assemble_aio, cores

    in_use = {"c": "cython", "py": "python"}[impl.name] == dq_core.implementation
    for name in ("PriorityQueue", "DelayQueue"):
        assert (getattr(impl.aio, name) is getattr(aio, name)) == in_use, name
        assert getattr(impl.aio, name).__name__ == name
    fresh = assemble_aio(cores({"c": "cython", "py": "python"}[impl.name]))
    assert fresh.PriorityQueue is not impl.aio.PriorityQueue  # built once, by aio_classes
    assert type(impl.aio.PriorityQueue()._heap) is getattr(impl, "ItemHeap")
    assert type(impl.aio.DelayQueue()._heap) is impl.Heap


def test_public_names():
    assert "PriorityQueue" in dir(aio)
    with pytest.raises(AttributeError):
        aio.NoSuchThing  # noqa: B018


def test_exceptions_are_asyncios():
    assert aio.QueueEmpty is asyncio.QueueEmpty and aio.QueueFull is asyncio.QueueFull
    if sys.version_info >= (3, 13):
        assert aio.QueueShutDown is asyncio.QueueShutDown
    else:
        assert issubclass(aio.QueueShutDown, Exception)
        assert aio.QueueShutDown.__module__ == "dq_core.aio"


@pytest.mark.parametrize(
    "name",
    sorted(
        name
        for cls in (asyncio.Queue, asyncio.PriorityQueue)
        for name, v in vars(cls).items()
        if callable(v) and name not in ("__class_getitem__", "__init__")
    ),
)
def test_every_asyncio_method_is_overridden(impl, name):
    owner = next(k for k in impl.aio.PriorityQueue.__mro__ if name in vars(k))
    assert owner not in (asyncio.Queue, asyncio.PriorityQueue), f"{name} is asyncio's"


def test_storage_hooks_are_refused(impl):
    q = impl.aio.PriorityQueue()
    for name, args in (("_init", (0,)), ("_put", (1,)), ("_get", ())):
        with pytest.raises(TypeError, match=name):
            getattr(q, name)(*args)
    with pytest.raises(TypeError, match="_put"):
        type("Sub", (impl.aio.PriorityQueue,), {"_put": lambda self, item: None})


MAXSIZES = [1.3, 2.0, 0.5, -1.5, 0.0, float("nan"), float("inf"), Fraction(5, 2), Decimal("1.5"), True, 3]


@pytest.mark.parametrize("maxsize", MAXSIZES, ids=repr)
def test_any_number_is_a_maxsize_as_in_asyncio(impl, maxsize):
    # asyncio's full() is qsize() >= maxsize > 0: a float 1.3 holds two items
    async def fill(q, limit=6):
        # how many put_nowait calls succeed, and full() before each
        trace = []
        for i in range(limit):
            trace.append(q.full())
            try:
                q.put_nowait(i)
            except asyncio.QueueFull:
                break
        return len([x for x in trace if not x]), trace

    async def main():
        ours, theirs = impl.aio.PriorityQueue(maxsize), asyncio.PriorityQueue(maxsize)
        assert ours.maxsize == theirs.maxsize or maxsize != maxsize
        assert await fill(ours) == await fill(theirs)
        # put_many puts all or nothing: all exactly when put_nowait would take each
        for room in range(4):
            q, ref = impl.aio.PriorityQueue(maxsize), asyncio.PriorityQueue(maxsize)
            want = (await fill(ref, room + 1))[0] == room + 1
            try:
                q.put_many(range(room + 1))
                took = True
            except asyncio.QueueFull:
                took = False
            assert took is want, room
            assert q.qsize() == (room + 1 if took else 0)

    asyncio.run(main())


def test_bad_maxsize_names_it(impl):
    with pytest.raises(TypeError, match="^maxsize must be an int, not 'str'$"):
        impl.aio.PriorityQueue("3")
    with pytest.raises(TypeError, match="^maxsize must be an int, not 'complex'$"):
        impl.aio.PriorityQueue(1j)
    with pytest.raises(TypeError, match="^maxsize must be an int, not 'NoneType'$"):
        impl.aio.PriorityQueue(None)
    with pytest.raises(TypeError, match="max_items must be an int"):
        impl.aio.PriorityQueue().get_many("2")
    with pytest.raises(ValueError, match="max_items must be non-negative"):
        impl.aio.PriorityQueue().get_many(-1)


def test_repr_and_str_follow_asyncio(impl):
    q = impl.aio.PriorityQueue(maxsize=5)
    q.put_nowait((2, "b"))
    q.put_nowait((1, "a"))
    ref = asyncio.PriorityQueue(maxsize=5)
    ref.put_nowait((2, "b"))
    ref.put_nowait((1, "a"))
    assert str(q) == str(ref).replace("PriorityQueue", "PriorityQueue", 1)
    assert repr(q).startswith("<PriorityQueue at 0x") and "_queue=[(1, 'a'), (2, 'b')]" in repr(q)
    q.shutdown()
    assert str(q).endswith(" shutdown>")


def test_copy_and_pickle_are_refused(impl):
    q = impl.aio.PriorityQueue()
    for fn in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot pickle or copy"):
            fn(q)


# -- nowait paths ----------------------------------------------------------------------


def test_order_is_heapq_order_with_ties(impl):
    import heapq

    items = [(p % 4, -p) for p in range(40)] + [(1, -1)] * 3
    q, ref = impl.aio.PriorityQueue(), []
    for x in items:
        q.put_nowait(x)
        heapq.heappush(ref, x)
    assert [q.get_nowait() for _ in items] == [heapq.heappop(ref) for _ in items]


def test_nowait_raise_asyncios_empty_and_full(impl):
    q = impl.aio.PriorityQueue(maxsize=1)
    with pytest.raises(asyncio.QueueEmpty):
        q.get_nowait()
    q.put_nowait(1)
    assert q.full()
    with pytest.raises(asyncio.QueueFull):
        q.put_nowait(2)
    assert q.qsize() == 1 and q.get_nowait() == 1


def test_put_many_and_get_many(impl):
    q = impl.aio.PriorityQueue(maxsize=4)
    q.put_many([3, 1, 2])
    with pytest.raises(asyncio.QueueFull):
        q.put_many([5, 6])  # no room for both: none put
    assert q.qsize() == 3
    assert q.get_many(2) == [1, 2]
    assert q.get_many() == [3] and q.get_many() == []
    q.put_many(iter([9]))
    q.shutdown()
    with pytest.raises(QueueShutDown):
        q.put_many([1])
    assert q.get_many(0) == [] and q.get_many() == [9]
    with pytest.raises(QueueShutDown):
        q.get_many()


@pytest.mark.parametrize("kind", ["PriorityQueue", "DelayQueue"])
def test_shut_down_says_so(impl, run, kind):
    # asyncio raises QueueShutDown with no message at all.
    refused = "^the queue is shut down: it takes no more items$"
    drained = "^the queue is shut down and holds no more items$"

    async def main():
        q = getattr(impl.aio, kind)(maxsize=1)
        q.put_nowait(1)
        blocked_put = asyncio.ensure_future(q.put(2))
        await until_waiting(q, putters=1)
        q.shutdown()
        with pytest.raises(QueueShutDown, match=refused):
            await asyncio.wait_for(blocked_put, 5)
        with pytest.raises(QueueShutDown, match=refused):
            q.put_nowait(3)
        with pytest.raises(QueueShutDown, match=refused):
            await asyncio.wait_for(q.put(3), 5)
        if kind == "PriorityQueue":
            with pytest.raises(QueueShutDown, match=refused):
                q.put_many([3])
        else:
            with pytest.raises(QueueShutDown, match=refused):
                q.put_at_nowait(3, 0.0)
        assert q.get_nowait() == 1
        with pytest.raises(QueueShutDown, match=drained):
            q.get_nowait()
        with pytest.raises(QueueShutDown, match=drained):
            q.get_many()
        with pytest.raises(QueueShutDown, match=drained):
            await asyncio.wait_for(q.get(), 5)
        q = getattr(impl.aio, kind)()
        blocked_get = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)
        q.shutdown(immediate=True)
        with pytest.raises(QueueShutDown, match=drained):
            await asyncio.wait_for(blocked_get, 5)

    run(main())


def test_get_many_and_put_many_wake_waiters(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=2)
        getters = [asyncio.ensure_future(q.get()) for _ in range(3)]
        await until_waiting(q, getters=3)
        q.put_many([(2, "b"), (1, "a")])
        await settle()
        assert sorted(g.result() for g in getters if g.done()) == [(1, "a"), (2, "b")]
        q.put_nowait((0, "z"))
        assert await getters[2] == (0, "z")
        q.put_many([1, 2])
        putters = [asyncio.ensure_future(q.put(x)) for x in (3, 4, 5)]
        await until_waiting(q, putters=3)
        assert q.get_many() == [1, 2]
        await settle()
        assert [p.done() for p in putters] == [True, True, False]
        assert q.get_many() == [3, 4]
        await putters[2]
        assert q.get_many() == [5]

    run(main())


class Hostile:
    """Compares by ``key`` and raises when compared with ``boom`` set."""

    boom = False

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        if Hostile.boom:
            raise ZeroDivisionError("boom")
        return self.key < other.key

    def __repr__(self):
        return f"H({self.key})"


def test_raising_comparison_leaves_the_queue_as_it_was(impl):
    q = impl.aio.PriorityQueue()
    for k in (5, 3, 8):
        q.put_nowait(Hostile(k))
    before = [h.key for h in q._heap.snapshot()]
    Hostile.boom = True
    try:
        with pytest.raises(ZeroDivisionError):
            q.put_nowait(Hostile(1))
        with pytest.raises(ZeroDivisionError):
            q.get_nowait()
        with pytest.raises(ZeroDivisionError):
            q.get_many()
    finally:
        Hostile.boom = False
    assert [h.key for h in q._heap.snapshot()] == before and q._unfinished_tasks == 3
    q._check()
    assert [q.get_nowait().key for _ in range(3)] == [3, 5, 8]


def test_comparison_that_reenters_gets_runtime_error(impl):
    q = impl.aio.PriorityQueue()

    class Reenter:
        def __lt__(self, other):
            q.put_nowait(Reenter())
            return True

    q.put_nowait(Reenter())
    with pytest.raises(RuntimeError, match="re-entered"):
        q.put_nowait(Reenter())
    assert q.qsize() == 1


# -- waiting ---------------------------------------------------------------------------


def test_get_waits_for_put_and_put_waits_for_room(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=1)
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)
        assert not getter.done()
        await q.put((1, "x"))
        assert await getter == (1, "x")
        await q.put(1)
        putter = asyncio.ensure_future(q.put(0))
        await until_waiting(q, putters=1)
        assert not putter.done() and q.qsize() == 1
        assert await q.get() == 1
        await putter
        assert q.get_nowait() == 0

    run(main())


def test_waiters_are_served_in_arrival_order(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        getters = [asyncio.ensure_future(q.get()) for _ in range(3)]
        await until_waiting(q, getters=3)
        for x in (30, 10, 20):
            q.put_nowait(x)
        return await asyncio.gather(*getters)

    # each put wakes the next getter in line; they run after the three puts
    # and each takes the lowest item left
    assert run(main()) == [10, 20, 30]


def test_wait_for_timeouts_lose_and_insert_nothing(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(q.get(), 0.01)
        assert not q._getters
        q.put_nowait(1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(q.put(2), 0.01)
        assert not q._putters and q.get_many() == [1]

    run(main())


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is new in 3.11")
def test_asyncio_timeout_context(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.01):
                await q.get()
        q.put_nowait(1)
        async with asyncio.timeout(1.0):
            assert await q.get() == 1

    run(main())


def test_cancelled_get_swallows_nothing(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)
        getter.cancel()
        await settle()
        assert getter.cancelled() and not q._getters
        q.put_nowait(1)
        assert q.get_nowait() == 1

    run(main())


def test_woken_getter_cancelled_passes_the_item_on(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        g1 = asyncio.ensure_future(q.get())
        g2 = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=2)
        q.put_nowait("item")  # wakes g1 ...
        g1.cancel()  # ... which is cancelled before it runs
        assert await g2 == "item"
        assert g1.cancelled() and q.empty()

    run(main())


def test_cancelled_put_inserts_nothing(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=1)
        q.put_nowait(1)
        putter = asyncio.ensure_future(q.put(0))
        await until_waiting(q, putters=1)
        putter.cancel()
        await settle()
        assert putter.cancelled() and not q._putters
        assert q.get_nowait() == 1 and q.empty()

    run(main())


def test_woken_putter_cancelled_passes_the_slot_on(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=1)
        q.put_nowait(9)
        p1 = asyncio.ensure_future(q.put(1))
        p2 = asyncio.ensure_future(q.put(2))
        await until_waiting(q, putters=2)
        assert q.get_nowait() == 9  # wakes p1 ...
        p1.cancel()  # ... which is cancelled before it runs
        await p2
        assert p1.cancelled() and q.get_many() == [2]

    run(main())


# -- tasks and shutdown ----------------------------------------------------------------


def test_join_waits_for_task_done(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        await q.join()  # nothing put: returns at once
        q.put_many([1, 2])
        joiner = asyncio.ensure_future(q.join())
        await settle()
        q.get_nowait()
        q.task_done()
        await settle()
        assert not joiner.done()
        q.get_nowait()
        q.task_done()
        await joiner
        with pytest.raises(ValueError, match="task_done\\(\\) called too many times"):
            q.task_done()
        q.put_nowait(3)
        cancelled = asyncio.ensure_future(q.join())
        await settle()
        cancelled.cancel()
        await settle()
        assert cancelled.cancelled() and not q._joiners

    run(main())


def test_shutdown_wakes_getters_after_the_items(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        waiting = [asyncio.ensure_future(q.get()) for _ in range(2)]
        await until_waiting(q, getters=2)
        q.shutdown()
        for w in waiting:
            with pytest.raises(QueueShutDown):
                await w
        with pytest.raises(QueueShutDown):
            q.put_nowait(1)
        with pytest.raises(QueueShutDown):
            await q.put(1)
        q2 = impl.aio.PriorityQueue()
        q2.put_many([2, 1])
        q2.shutdown()
        assert [await q2.get(), q2.get_nowait()] == [1, 2]
        with pytest.raises(QueueShutDown):
            q2.get_nowait()
        with pytest.raises(QueueShutDown):
            await q2.get()
        assert q2._unfinished_tasks == 2  # not immediate: nothing counted done

    run(main())


def test_immediate_shutdown_drops_items_and_ends_join(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=2)
        q.put_many([1, 2])
        putter = asyncio.ensure_future(q.put(3))
        joiner = asyncio.ensure_future(q.join())
        await until_waiting(q, putters=1)
        q.shutdown(immediate=True)
        with pytest.raises(QueueShutDown):
            await putter
        await joiner
        assert q.empty() and q._unfinished_tasks == 0
        with pytest.raises(QueueShutDown):
            q.get_nowait()

    run(main())


def test_shutdown_immediate_counts_only_queued_items(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        q.put_many([1, 2, 3])
        q.get_nowait()  # taken, not done
        joiner = asyncio.ensure_future(q.join())
        q.shutdown(immediate=True)
        await settle()
        assert not joiner.done() and q._unfinished_tasks == 1
        q.task_done()
        await joiner

    run(main())


def test_bound_to_one_loop(impl):
    from test_aio_loops import run_on

    q = impl.aio.PriorityQueue()

    async def wait_once():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(q.get(), 0.001)

    async def elsewhere_meanwhile():
        await wait_once()  # binds q to this loop, which still runs below
        with pytest.raises(RuntimeError, match="bound to a different event loop"):
            await asyncio.to_thread(run_on, "asyncio", q.get())

    run_on("asyncio", elsewhere_meanwhile())
    run_on("asyncio", wait_once())  # the first loop is closed: bound to this one now


def test_async_with_items_that_are_not_comparable_to_each_other(impl, run):
    # as asyncio's: the first push never compares, the second raises TypeError
    async def main():
        q = impl.aio.PriorityQueue()
        await q.put({"a": 1})
        with pytest.raises(TypeError):
            await q.put({"b": 2})
        assert q.qsize() == 1 and q._unfinished_tasks == 1

    run(main())


@pytest.mark.parametrize(
    "module", ["_priorityqueue", "_delayqueue", "_prioritytaskpool", "_ratelimiter", "_timer"]
)
def test_doctests_of_the_aio_faces(impl, module):
    # each runs on the implementation's public aio classes
    import doctest
    import importlib

    mod = importlib.import_module(f"dq_core.aio.{module}")
    result = doctest.testmod(mod, extraglobs=impl.aio._asdict(), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_core_twins_agree_on_docs_parameters_and_coroutine_kinds(both):
    # the compiled core (dq_core._aioqueuecore) and its pure twin give the public
    # classes the same methods: docstrings, parameter names, and whether each is
    # a coroutine function (put/get are, in both)
    import inspect

    c, py = both
    for name in ("PriorityQueue", "DelayQueue"):
        C, P = getattr(c.aio, name), getattr(py.aio, name)
        public = sorted(n for n in dir(P) if not n.startswith("_") and callable(getattr(P, n)))
        assert public == sorted(n for n in dir(C) if not n.startswith("_") and callable(getattr(C, n)))
        for attr in public:
            cm, pm = getattr(C, attr), getattr(P, attr)
            assert inspect.getdoc(cm) == inspect.getdoc(pm), (name, attr)
            assert inspect.iscoroutinefunction(cm) == inspect.iscoroutinefunction(pm), (name, attr)
            with warnings.catch_warnings():
                # deprecated from 3.14, but what older callers still ask
                warnings.simplefilter("ignore", DeprecationWarning)
                assert asyncio.iscoroutinefunction(cm) == asyncio.iscoroutinefunction(pm), (name, attr)
            names = [p for p in inspect.signature(pm).parameters if p != "self"]
            assert [p for p in inspect.signature(cm).parameters if p != "self"] == names, (name, attr)
        assert inspect.iscoroutinefunction(C.get) and inspect.iscoroutinefunction(C().get)


def test_put_and_get_make_coroutines_that_tasks_accept(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=1)
        dq = impl.aio.DelayQueue()
        put = asyncio.create_task(q.put((1, "a")))
        await put
        blocked = asyncio.create_task(q.put((2, "b")))  # full: waits
        await settle()
        assert not blocked.done()
        assert await asyncio.create_task(q.get()) == (1, "a")
        await blocked
        assert await asyncio.create_task(q.get()) == (2, "b")
        dq.put_nowait("due")
        assert await asyncio.create_task(dq.get()) == "due"
        coro = q.get()
        assert asyncio.iscoroutine(coro)
        coro.close()  # never started: nothing taken, nothing waits
        assert q.empty() and not q._getters

    run(main())


@pytest.mark.parametrize("no_extensions", ["", "1"])
def test_import_dq_core_imports_neither_asyncio_nor_the_aio_cores(no_extensions):
    # the aio cores (dq_core._aioqueuecore, _aiotimercore and their twins) and what they share
    # (dq_core._aiowaiting) import asyncio: only dq_core.aio's first use imports them
    import os
    import subprocess

    code = (
        "import sys, dq_core; "
        "print(sorted(m for m in sys.modules if m == 'asyncio' or m.startswith('dq_core._aio'))); "
        "from dq_core import aio; aio.PriorityQueue; "
        "print(sorted(m for m in sys.modules if m.startswith('dq_core._aio')))"
    )
    env = {**os.environ, "DQ_CORE_NO_EXTENSIONS": no_extensions}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.splitlines()
    assert out[0] == "[]"
    assert out[1] == (
        "['dq_core._aioqueuecore_py', 'dq_core._aiotimercore_py', 'dq_core._aiowaiting']"
        if no_extensions
        else "['dq_core._aioqueuecore', 'dq_core._aiotimercore', 'dq_core._aiowaiting']"
    )
