"""aio.DelayQueue: never early, one loop timer, wake-ups, cancellation, backpressure, shutdown.

Each test runs on both implementations (``impl``) and, where it takes
``run``, on both loops (asyncio/uvloop).  Timing asserts are one-sided and
generous: an item must never come out before its deadline (exact, on the
loop's clock) and must come out well before a deadline that was moved away.
The stateful model with a fake loop clock is in test_aio_delay_model.py.
"""

from __future__ import annotations

import asyncio
import copy
import math
import pickle
import sys
import threading

import pytest

from clocks import VirtualClockLoop
from dq_core.aio import QueueEmpty, QueueFull, QueueShutDown
from helpers import check_the_run_s_head, take_first_without_waiting
from test_aio_loops import run, run_on, settle, until_waiting  # noqa: F401 -- the loop fixture


async def timed_get(dq):
    item = await dq.get()
    return item, asyncio.get_running_loop().time()


# -- the surface ------------------------------------------------------------------------


def test_surface(impl, run):
    DQ = impl.aio.DelayQueue
    assert DQ[int].__origin__ is DQ and DQ.__module__ == "dq_core.aio"

    async def main():
        dq = DQ(maxsize=3)
        assert (dq.maxsize, dq.qsize(), len(dq), dq.empty(), dq.full()) == (3, 0, 0, True, False)
        assert repr(dq) == "<DelayQueue len=0>" and dq.next_deadline() is None
        now = asyncio.get_running_loop().time()
        h = dq.put_nowait("a", 10)
        assert isinstance(h, int) and len(dq) == 1
        assert now + 10 <= dq.next_deadline() <= asyncio.get_running_loop().time() + 10
        assert repr(dq).startswith("<DelayQueue len=1 next_deadline=")
        for fn in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="cannot pickle or copy"):
                fn(dq)

    run(main())


def test_bad_arguments_name_themselves_and_change_nothing(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        h = dq.put_nowait("a", 1)
        with pytest.raises(TypeError, match="delay must be a real number, not 'str'"):
            dq.put_nowait("b", "1")
        with pytest.raises(ValueError, match="delay must not be NaN"):
            await dq.put("b", math.nan)
        with pytest.raises(TypeError, match="deadline must be a real number"):
            dq.put_at_nowait("b", None)
        with pytest.raises(TypeError, match="delay must be a real number"):
            dq.reschedule(h, "x")
        with pytest.raises(TypeError, match="max_items must be an int"):
            dq.get_many(1.5)
        with pytest.raises(TypeError, match="maxsize must be an int"):
            impl.aio.DelayQueue(maxsize=None)
        assert len(dq) == 1 and dq.cancel(h) and not dq.cancel(h)
        assert not dq.reschedule(h, 0) and not dq.cancel(12345)
        dq._check()

    run(main())


# -- order and due-ness ---------------------------------------------------------------------


def test_due_items_in_deadline_order_fifo_among_equal(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        loop = asyncio.get_running_loop()
        t = loop.time() - 1
        for name, deadline in (("c", t + 0.5), ("a", t), ("b", t), ("d", t + 0.5)):
            dq.put_at_nowait(name, deadline)
        dq.put_nowait("later", 60)
        assert dq.get_many(3) == ["a", "b", "c"]
        assert dq.get_nowait() == "d"
        with pytest.raises(QueueEmpty):
            dq.get_nowait()  # "later" is not due
        assert dq.get_many() == [] and len(dq) == 1

    run(main())


def test_get_never_returns_early(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        loop = asyncio.get_running_loop()
        deadlines = {}
        for i, delay in enumerate((0.03, 0.01, 0.02, 0.0, 0.015)):
            h = dq.put_nowait(i, delay)
            deadlines[i] = dq._heap.priority(h)
        out = [await timed_get(dq) for _ in range(5)]
        assert [i for i, _ in out] == [3, 1, 4, 2, 0]
        for i, at in out:
            assert at >= deadlines[i]
        assert loop.time() >= max(deadlines.values())

    run(main())


class EarlyLoop(asyncio.SelectorEventLoop):
    """A loop whose timers fire 20 ms early, as a coarse clock might."""

    def call_at(self, when, callback, *args, context=None):
        return super().call_at(when - 0.02, callback, *args, context=context)


def test_never_early_even_when_the_loop_fires_timers_early(impl):
    async def main():
        dq = impl.aio.DelayQueue()
        loop = asyncio.get_running_loop()
        handles = [dq.put_nowait(i, 0.01 * (i + 1)) for i in range(4)]
        deadlines = [dq._heap.priority(h) for h in handles]
        out = await asyncio.gather(*(timed_get(dq) for _ in range(4)))
        for item, at in out:
            assert at >= deadlines[item]
        assert loop.time() >= deadlines[-1]

    loop = EarlyLoop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


def test_infinite_delay_is_never_due_and_arms_no_infinite_timer(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        h = dq.put_nowait("never", math.inf)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(dq.get(), 0.02)
        getter = asyncio.ensure_future(dq.get())
        await until_waiting(dq, getters=1)
        assert dq._timer is not None and math.isfinite(dq._timer_when)
        dq.reschedule(h, 0)
        assert await getter == "never"
        assert dq._timer is None

    run(main())


# -- one timer, re-armed when the head changes --------------------------------------------------


def test_one_timer_for_many_waiters_and_items(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        getters = [asyncio.ensure_future(dq.get()) for _ in range(10)]
        await until_waiting(dq, getters=10)
        assert dq._timer is None  # nothing to wait for
        for i in range(50):
            dq.put_nowait(i, 30 + i)
        first = dq._timer
        assert first is not None and dq._timer_when == dq.next_deadline()
        dq.put_nowait("late", 100)  # not a new head: the timer stays
        assert dq._timer is first
        dq._check()
        for g in getters:
            g.cancel()
        await settle()
        assert dq._timer is None and len(dq) == 51  # nobody waits: no timer, nothing lost

    run(main())


def test_earlier_put_wakes_the_waiting_getter(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        loop = asyncio.get_running_loop()
        dq.put_nowait("late", 30)
        getter = asyncio.ensure_future(timed_get(dq))
        await until_waiting(dq, getters=1)
        start = loop.time()
        h = dq.put_nowait("soon", 0.01)
        deadline = dq._heap.priority(h)
        item, at = await asyncio.wait_for(getter, 10)
        assert item == "soon" and deadline <= at < start + 5

    run(main())


def test_another_queue_s_handles_cancel_and_reschedule_nothing(impl, run):
    async def main():
        d1, d2 = impl.aio.DelayQueue(), impl.aio.DelayQueue()
        h1 = [d1.put_nowait(f"one{i}", 0.001 * i) for i in range(4)]
        h2 = [d2.put_nowait(f"two{i}", 0.001 * i) for i in range(4)]
        for h in h1:
            assert d2.cancel(h) is False and d2.reschedule(h, 60) is False
        for h in h2:
            assert d1.cancel(h) is False and d1.reschedule(h, 60) is False
        assert len(d1) == len(d2) == 4
        got = [await asyncio.wait_for(d2.get(), 10) for _ in range(4)]
        assert got == [f"two{i}" for i in range(4)]
        assert d1.cancel(h1[0]) is True and len(d1) == 3  # its own still work

    run(main())


def test_cancel_of_the_head_rearms_for_the_next(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        a = dq.put_nowait("a", 0.01)
        b = dq.put_nowait("b", 0.03)
        getter = asyncio.ensure_future(timed_get(dq))
        await until_waiting(dq, getters=1)
        assert dq._timer_when == dq._heap.priority(a)
        b_deadline = dq._heap.priority(b)
        assert dq.cancel(a)
        assert dq._timer_when == b_deadline
        item, at = await asyncio.wait_for(getter, 10)
        assert item == "b" and at >= b_deadline

    run(main())


def test_reschedule_of_the_head_rearms_both_ways(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        loop = asyncio.get_running_loop()
        h = dq.put_nowait("x", 30)
        getter = asyncio.ensure_future(timed_get(dq))
        await until_waiting(dq, getters=1)
        start = loop.time()
        assert dq.reschedule(h, 0.01)  # earlier: wakes
        item, at = await asyncio.wait_for(getter, 10)
        assert item == "x" and at < start + 5
        h = dq.put_nowait("y", 0.005)
        getter = asyncio.ensure_future(timed_get(dq))
        await until_waiting(dq, getters=1)
        assert dq.reschedule(h, 0.04)  # later: must not come out at the old deadline
        deadline = dq._heap.priority(h)
        item, at = await asyncio.wait_for(getter, 10)
        assert item == "y" and at >= deadline

    run(main())


# -- each item to exactly one waiter; cancellation loses nothing ---------------------------------


def test_each_due_item_to_exactly_one_waiter(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        getters = [asyncio.ensure_future(dq.get()) for _ in range(6)]
        await until_waiting(dq, getters=6)
        for i in range(4):
            dq.put_nowait(i, 0.005)
        for _ in range(5000):
            if sum(g.done() for g in getters) >= 4:
                break
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.02)  # and no more
        results = sorted(g.result() for g in getters if g.done())
        assert results == [0, 1, 2, 3] and sum(not g.done() for g in getters) == 2
        assert len(dq) == 0
        for g in getters:
            g.cancel()

    run(main())


def test_cancelled_waiting_get_loses_nothing(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        dq.put_nowait("x", 0.01)
        getter = asyncio.ensure_future(dq.get())
        await until_waiting(dq, getters=1)
        getter.cancel()
        await settle()
        assert getter.cancelled() and dq._timer is None and len(dq) == 1
        assert await dq.get() == "x"
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(dq.get(), 0.01)
        assert not dq._getters and dq._timer is None

    run(main())


def test_woken_getter_cancelled_passes_the_item_on(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        g1 = asyncio.ensure_future(dq.get())
        g2 = asyncio.ensure_future(dq.get())
        await until_waiting(dq, getters=2)
        dq.put_nowait("item")  # due now: wakes g1 ...
        g1.cancel()  # ... which is cancelled before it runs
        assert await asyncio.wait_for(g2, 5) == "item"
        assert g1.cancelled() and len(dq) == 0 and dq._pending == 0

    run(main())


def test_timeouts_lose_nothing(impl, run):
    async def main():
        dq = impl.aio.DelayQueue(maxsize=1)
        dq.put_nowait("x", 0.05)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(dq.get(), 0.001)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(dq.put("y"), 0.001)
        assert len(dq) == 1 and not dq._getters and not dq._putters
        assert await asyncio.wait_for(dq.get(), 5) == "x"

    run(main())


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is new in 3.11")
def test_asyncio_timeout_context(impl, run):
    async def main():
        dq = impl.aio.DelayQueue(maxsize=1)
        dq.put_nowait("x", 0.05)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.001):
                await dq.get()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.001):
                await dq.put("y")
        assert len(dq) == 1 and dq._timer is None and not dq._putters
        async with asyncio.timeout(5):
            assert await dq.get() == "x"

    run(main())


# -- backpressure ----------------------------------------------------------------------------


def test_maxsize_backpressure(impl, run):
    async def main():
        dq = impl.aio.DelayQueue(maxsize=2)
        dq.put_nowait("a")
        await dq.put("b", 0.01)
        assert dq.full()
        with pytest.raises(QueueFull):
            dq.put_nowait("c")
        putter = asyncio.ensure_future(dq.put("c"))
        cancelled = asyncio.ensure_future(dq.put("never"))
        await until_waiting(dq, putters=2)
        cancelled.cancel()
        await settle()
        assert not putter.done() and len(dq) == 2
        assert await dq.get() == "a"
        h = await putter
        assert isinstance(h, int)
        assert sorted([await dq.get(), await dq.get()]) == ["b", "c"]
        assert len(dq) == 0 and cancelled.cancelled()
        # cancel frees room too
        h1 = dq.put_nowait(1, 10)
        dq.put_nowait(2, 10)
        putter = asyncio.ensure_future(dq.put(3))
        await until_waiting(dq, putters=1)
        dq.cancel(h1)
        await putter
        assert len(dq) == 2

    run(main())


# -- shutdown and async for -------------------------------------------------------------------


def test_shutdown_lets_getters_drain_then_raises(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        dq.put_nowait("a", 0.01)
        dq.put_nowait("b", 0.02)
        getters = [asyncio.ensure_future(dq.get()) for _ in range(3)]
        await until_waiting(dq, getters=3)
        dq.shutdown()
        with pytest.raises(QueueShutDown):
            dq.put_nowait("c")
        with pytest.raises(QueueShutDown):
            await dq.put("c")
        results = await asyncio.gather(*getters, return_exceptions=True)
        assert results[:2] == ["a", "b"] and isinstance(results[2], QueueShutDown)
        with pytest.raises(QueueShutDown):
            dq.get_nowait()
        with pytest.raises(QueueShutDown):
            dq.get_many()

    run(main())


def test_immediate_shutdown_drops_and_wakes_everyone(impl, run):
    async def main():
        dq = impl.aio.DelayQueue(maxsize=1)
        dq.put_nowait("a", 30)
        getter = asyncio.ensure_future(dq.get())
        putter = asyncio.ensure_future(dq.put("b"))
        await until_waiting(dq, getters=1, putters=1)
        dq.shutdown(immediate=True)
        for t in (getter, putter):
            with pytest.raises(QueueShutDown):
                await t
        assert len(dq) == 0 and dq._timer is None

    run(main())


def test_async_for_until_shut_down(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        for i in range(5):
            dq.put_nowait(i, 0.002 * (5 - i))
        got = []

        async def consume():
            async for item in dq:
                got.append(item)
                if len(got) == 5:
                    dq.shutdown()

        await asyncio.wait_for(consume(), 10)
        return got

    assert run(main()) == [4, 3, 2, 1, 0]


# -- loops and threads ------------------------------------------------------------------------


def test_bound_to_one_loop_and_needs_one(impl):
    dq = impl.aio.DelayQueue()
    with pytest.raises(RuntimeError, match="no running event loop"):
        dq.put_nowait("x")
    with pytest.raises(RuntimeError, match="not bound to an event loop yet"):
        dq.put_threadsafe("x")

    async def put():
        dq.put_nowait("x")

    async def elsewhere_meanwhile():
        await put()  # binds dq to this loop, which still runs below
        with pytest.raises(RuntimeError, match="bound to a different event loop"):
            await asyncio.to_thread(run_on, "asyncio", put())
        assert len(dq) == 1

    run_on("asyncio", elsewhere_meanwhile())
    run_on("asyncio", put())  # the first loop is closed: bound to this one now
    assert len(dq) == 2


@pytest.mark.parametrize("debug", [False, True])
def test_cancel_and_shutdown_check_the_loop_first_and_change_nothing(impl, run, debug):
    async def main():
        loop = asyncio.get_running_loop()
        loop.set_debug(debug)  # asyncio's own thread checks would raise part-way
        dq = impl.aio.DelayQueue()
        head = dq.put_nowait("head", 0.2)
        dq.put_nowait("next", 0.3)
        getter = asyncio.ensure_future(dq.get())
        await settle()
        dq._check()

        def from_a_thread(call):
            try:
                call()
            except RuntimeError as exc:
                return str(exc)
            return "no error"

        for call in (lambda: dq.cancel(head), lambda: dq.shutdown(), lambda: dq.shutdown(immediate=True)):
            message = await loop.run_in_executor(None, from_a_thread, call)
            assert "no running event loop" in message
            assert len(dq) == 2 and not dq._is_shutdown and not getter.done()
            dq._check()

        async def elsewhere(call):
            call()

        for call in (lambda: dq.cancel(head), lambda: dq.shutdown()):
            message = await loop.run_in_executor(None, from_a_thread, lambda: asyncio.run(elsewhere(call)))
            assert "bound to a different event loop" in message
            assert len(dq) == 2 and not dq._is_shutdown
        assert dq.cancel(head)  # in its loop: fine, and the getter gets the next one
        assert await asyncio.wait_for(getter, 5) == "next"
        dq.shutdown()
        loop.set_debug(False)

    run(main())


def test_used_where_no_loop_runs_the_error_points_at_the_threadsafe_methods(impl, run):
    def attempts(dq):
        out = []
        for call in (
            lambda: dq.put_nowait("x"),
            lambda: dq.put_nowait("x", 1.0),
            lambda: dq.put_at_nowait("x", 1.0),
            dq.get_nowait,
            dq.get_many,
            lambda: dq.reschedule(0, 1.0),
        ):
            with pytest.raises(RuntimeError) as info:
                call()
            out.append(str(info.value))
        return out

    expected = (
        "no running event loop: a DelayQueue is used in its event loop; from another "
        "thread, call put_threadsafe, put_at_threadsafe, cancel_threadsafe or "
        "shutdown_threadsafe"
    )
    assert attempts(impl.aio.DelayQueue()) == [expected] * 6  # never bound

    async def main():
        dq = impl.aio.DelayQueue()
        dq.put_nowait("bound")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, attempts, dq), dq.qsize()

    assert run(main()) == ([expected] * 6, 1)  # bound, from a worker thread: nothing added


def test_put_threadsafe_and_cancel_threadsafe_from_worker_threads(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()  # binds the queue to this loop
        loop = asyncio.get_running_loop()
        handles = []

        def worker(k):
            for i in range(100):
                handles.append(dq.put_threadsafe((k, i), 0.001).result(5))
            with pytest.raises(RuntimeError):
                dq.put_nowait("not from a thread")
            far = dq.put_threadsafe("far", 60).result(5)
            assert dq.cancel_threadsafe(far).result(5) is True

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        got = []
        while len(got) < 400:
            got.append(await asyncio.wait_for(dq.get(), 10))
        await loop.run_in_executor(None, lambda: [t.join() for t in threads])
        assert sorted(got) == sorted((k, i) for k in range(4) for i in range(100))
        assert len(set(handles)) == 400 and len(dq) == 0
        fut = await loop.run_in_executor(None, dq.shutdown_threadsafe)
        await asyncio.wrap_future(fut)
        refused = await loop.run_in_executor(None, dq.put_threadsafe, "late")
        with pytest.raises(QueueShutDown):
            await asyncio.wrap_future(refused)

    run(main())


def test_a_zero_delay_item_is_due_at_once_on_a_frozen_loop_clock(impl):
    async def main():
        dq = impl.aio.DelayQueue()
        dq.put_nowait("zero", 0)
        dq.put_nowait("negative", -1)
        dq.put_at_nowait("now", 500.0)
        got = [dq.get_nowait(), dq.get_nowait(), await asyncio.wait_for(dq.get(), 5)]
        with pytest.raises(QueueEmpty):
            dq.get_nowait()
        return got

    loop = VirtualClockLoop(500.0, jump=False)  # its clock never moves
    try:
        assert loop.run_until_complete(main()) == ["negative", "zero", "now"]
    finally:
        loop.close()


def test_the_head_after_pops_from_a_sorted_run_is_the_run_s_start(impl):
    async def main():
        loop = asyncio.get_running_loop()
        dq = impl.aio.DelayQueue()
        check_the_run_s_head(dq, dq.put_nowait, lambda now: setattr(loop, "now", now), QueueEmpty)
        loop.now = 3.0
        assert dq.get_many() == [3] and dq.next_deadline() == 4.0

    loop = VirtualClockLoop(jump=False)
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


@pytest.mark.parametrize("how", ["get", "get_nowait", "get_many", "cancel"])
def test_taking_an_item_wakes_a_put_waiting_on_maxsize(impl, run, how):
    async def main():
        dq = impl.aio.DelayQueue(maxsize=1)
        handle = dq.put_nowait("first")
        putter = asyncio.ensure_future(dq.put("second"))
        await settle()
        assert not putter.done()
        if how == "get":
            assert await dq.get() == "first"
        else:
            take_first_without_waiting(dq, how, handle)
        await asyncio.wait_for(putter, 5)
        return await dq.get()

    assert run(main()) == "second"
