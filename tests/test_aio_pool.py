"""aio.PriorityTaskPool: start order, concurrency, rate, cancellation, exceptions, close, async with.

Tests that take ``run`` run on both loops in real time, with one-sided
timing asserts only; exact start times are checked on the virtual clock
of test_aio_ratelimit.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import inspect
import math
import pickle
import random
import warnings

import pytest

from clocks import VirtualClockLoop
from dq_core import PriorityExecutor
from test_aio_loops import run, settle  # noqa: F401 -- the loop fixture
from test_aio_ratelimit import LoopLag, run_virtual, within_rate


class Recorder:
    """Jobs that record when they start and how many run at once."""

    def __init__(self):
        self.started = []  # (name, loop.time())
        self.running = 0
        self.most = 0
        self.gate = asyncio.Event()

    async def job(self, name, hold=0.0, wait_gate=False, fail=False):
        self.started.append((name, asyncio.get_running_loop().time()))
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            if wait_gate:
                await self.gate.wait()
            await asyncio.sleep(hold)
            if fail:
                raise KeyError(name)
            return name
        finally:
            self.running -= 1

    def names(self):
        return [n for n, _ in self.started]


# -- the surface -----------------------------------------------------------------------------


def test_surface(impl, run):
    Pool = impl.aio.PriorityTaskPool
    assert Pool.__module__ == "dq_core.aio" and Pool.__name__ == "PriorityTaskPool"

    async def main():
        rec = Recorder()
        pool = Pool(2, rate=1000, burst=3)
        assert pool.max_concurrency == 2
        assert repr(pool) == "<PriorityTaskPool max_concurrency=2 running=0 pending=0>"
        task = pool.submit(rec.job("a"), priority=1.5)
        assert isinstance(task, asyncio.Future) and not task.done()
        assert repr(pool) == "<PriorityTaskPool max_concurrency=2 running=0 pending=1>"
        assert len(pool) == 1  # submitted, not started
        assert await task == "a"
        assert len(pool) == 0
        for fn in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="^cannot pickle or copy 'PriorityTaskPool' object"):
                fn(pool)
        async with pool as entered:
            assert entered is pool

    run(main())


def _outcome(fn):
    try:
        fn()
    except Exception as exc:
        return type(exc), str(exc).replace("max_workers", "max_concurrency")
    return None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0},
        {"rate": math.nan},
        {"rate": "5"},
        {"rate": math.inf},
        {"burst": 0.5},
        {"burst": 0},
        {"burst": math.nan},
        {"burst": "1"},
    ],
)
def test_bad_rate_and_burst_as_the_priority_executor(impl, kwargs):
    expected = _outcome(lambda: PriorityExecutor(1, **kwargs))
    assert expected is not None
    assert _outcome(lambda: impl.aio.PriorityTaskPool(1, **kwargs)) == expected


def test_bad_max_concurrency_priority_and_coroutine(impl, run):
    Pool = impl.aio.PriorityTaskPool
    for bad, exc, msg in [
        (0, ValueError, "^max_concurrency must be greater than 0, got 0$"),
        (-3, ValueError, "^max_concurrency must be greater than 0, got -3$"),
        (1.5, TypeError, "^max_concurrency must be an int, not 'float'$"),
        ("2", TypeError, "^max_concurrency must be an int, not 'str'$"),
    ]:
        with pytest.raises(exc, match=msg):
            Pool(bad)

    async def main():
        rec = Recorder()
        pool = Pool(1)
        ex = PriorityExecutor(1)
        try:
            for bad in ("1", None, math.nan, 2**60, 1j):
                expected = _outcome(lambda: ex.submit_with_priority(bad, print))
                assert expected is not None
                coro = rec.job("x")
                assert _outcome(lambda: pool.submit(coro, bad)) == expected
                coro.close()  # still the caller's: the pool took nothing
            with pytest.raises(TypeError, match="^coro must be a coroutine, not 'method'$"):
                pool.submit(rec.job)
            assert repr(pool) == "<PriorityTaskPool max_concurrency=1 running=0 pending=0>"
        finally:
            ex.shutdown()

    run(main())


# -- order, concurrency and rate -------------------------------------------------------------------


def test_pending_tasks_start_lowest_priority_first_fifo_among_equal(impl, run):
    rng = random.Random(2)
    priorities = [rng.choice([0, 1, 2, 3, -1.5, math.inf]) for _ in range(60)]

    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1)
        blocker = pool.submit(rec.job("blocker", wait_gate=True), priority=100)
        await settle()
        tasks = [pool.submit(rec.job(i), p) for i, p in enumerate(priorities)]
        await settle()
        assert rec.names() == ["blocker"]
        rec.gate.set()
        await asyncio.gather(blocker, *tasks)
        expected = sorted(range(len(priorities)), key=lambda i: (priorities[i], i))
        assert rec.names() == ["blocker"] + expected

    run(main())


def test_tasks_submitted_in_one_step_start_by_priority(impl, run):
    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(2)
        for p in (5, 3, 4, 1, 2):
            pool.submit(rec.job(p), p)
        async with pool:
            pass
        assert rec.names() == [1, 2, 3, 4, 5]

    run(main())


def test_at_most_max_concurrency_run_at_once(impl, run):
    async def main():
        rec = Recorder()
        async with impl.aio.PriorityTaskPool(3) as pool:
            tasks = [pool.submit(rec.job(i, hold=0.002 * (i % 4))) for i in range(40)]
            await asyncio.sleep(0)
            pool._check()
        assert rec.most == 3 and sorted(t.result() for t in tasks) == list(range(40))
        pool._check()

    run(main())


def test_the_start_rate_is_never_exceeded(impl, run):
    rate, burst = 300.0, 3

    async def main():
        rec = Recorder()
        lag = LoopLag()
        async with impl.aio.PriorityTaskPool(8, rate=rate, burst=burst) as pool:
            for i in range(90):
                pool.submit(rec.job(i, hold=0.001), priority=i % 5)
        assert len(rec.started) == 90
        return [t for _, t in rec.started], lag.stop()

    times, lag = run(main())
    # margin: skew of a task reading the clock, one tick of uvloop's
    # millisecond clock, and the loop's worst lateness in the run (a loaded
    # machine delays a task's reading: seen as 9.0 > 8.9999)
    within_rate(times, [1] * len(times), rate, burst, 2 + rate * (0.001 + lag))


def test_the_start_rate_exactly_on_the_virtual_clock(impl):
    async def main():
        loop = asyncio.get_running_loop()
        rec = Recorder()
        t0 = loop.time()
        async with impl.aio.PriorityTaskPool(4, rate=10, burst=2) as pool:
            tasks = [pool.submit(rec.job(i, hold=0.05)) for i in range(12)]
            await asyncio.sleep(0.25)
            tasks[5].cancel()  # pending: its turn goes to the next
            later = pool.submit(rec.job("urgent"), priority=-1)  # goes first when a token comes
        assert tasks[5].cancelled() and await later == "urgent"
        names = rec.names()
        times = [round(t - t0, 9) for _, t in rec.started]
        assert names == [0, 1, 2, 3, "urgent", 4, 6, 7, 8, 9, 10, 11]
        assert times == [0, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
        within_rate(times, [1] * len(times), 10, 2, 1e-9)

    run_virtual(main())


# -- cancellation, exceptions ----------------------------------------------------------------------------


def test_cancelling_before_start_removes_it_and_closes_the_coroutine(impl, run):
    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1)
        blocker = pool.submit(rec.job("blocker", wait_gate=True))
        coros = [rec.job(i) for i in range(4)]
        tasks = [pool.submit(c, priority=i) for i, c in enumerate(coros)]
        tasks[0].cancel()  # in the step of its submit
        await settle()
        tasks[2].cancel()  # waiting for its start
        assert not tasks[2].cancel()  # once
        await settle()
        assert repr(pool).endswith("running=1 pending=2>")
        for i in (0, 2):
            assert tasks[i].cancelled()
            assert inspect.getcoroutinestate(coros[i]) == inspect.CORO_CLOSED
        rec.gate.set()
        await asyncio.gather(blocker, tasks[1], tasks[3])
        assert rec.names() == ["blocker", 1, 3]
        pool._check()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a 'never awaited' RuntimeWarning would fail here
        run(main())
        gc.collect()


def test_cancelling_after_start_cancels_the_running_coroutine(impl, run):
    async def main():
        seen = []
        rec = Recorder()

        async def long():
            try:
                await asyncio.sleep(100)
            except asyncio.CancelledError:
                seen.append("cancelled inside")
                raise

        pool = impl.aio.PriorityTaskPool(1)
        task = pool.submit(long())
        after = pool.submit(rec.job("next"))
        await settle()
        assert repr(pool).endswith("running=1 pending=1>")
        task.cancel()
        assert await after == "next"  # its slot went to the next
        assert task.cancelled() and seen == ["cancelled inside"]

    run(main())


def test_an_exception_stays_in_its_task(impl, run):
    async def main():
        loop = asyncio.get_running_loop()
        handled = []
        loop.set_exception_handler(lambda loop, ctx: handled.append(ctx))
        rec = Recorder()
        async with impl.aio.PriorityTaskPool(2, rate=1000, burst=2) as pool:
            tasks = [pool.submit(rec.job(i, fail=i % 3 == 0)) for i in range(12)]
        for i, t in enumerate(tasks):
            if i % 3 == 0:
                assert isinstance(t.exception(), KeyError)
            else:
                assert t.result() == i
        assert handled == [] and len(rec.started) == 12

    run(main())


def test_a_start_granted_then_cancelled_frees_the_slot(impl, run):
    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1)
        first = pool.submit(rec.job("first"))
        second = pool.submit(rec.job("second"))
        await asyncio.sleep(0)  # first is started: a task made, its coroutine not begun
        assert first.cancel()  # the task is cancelled before it ever ran: the slot is freed
        assert await second == "second"
        assert first.cancelled() and rec.names() == ["second"]

    run(main())


@pytest.mark.parametrize(
    "priority, error, message",
    [
        (math.nan, ValueError, "^priority must not be NaN$"),
        ("1", TypeError, "^priority must be a real number, not 'str'$"),
        (2**60, OverflowError, "priority"),
    ],
)
def test_a_refused_coroutine_is_closed(impl, run, priority, error, message):
    # Refused, it will never run: closed now, or Python would warn later that
    # it was never awaited.  The pool is left as it was.
    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1)
        coro = rec.job("refused")
        with pytest.raises(error, match=message):
            pool.submit(coro, priority=priority)
        assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
        assert len(pool) == 0
        assert await pool.submit(rec.job("next")) == "next"
        assert rec.names() == ["next"]

    run(main())


def test_a_coroutine_submitted_outside_its_loop_is_closed(impl):
    async def job():
        return 1

    pool = impl.aio.PriorityTaskPool(1)
    coro = job()
    with pytest.raises(RuntimeError):
        pool.submit(coro)  # no running loop
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


# -- close and async with -------------------------------------------------------------------------


def test_close_refuses_new_tasks_and_can_cancel_the_pending(impl, run):
    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1, rate=1000)
        running = pool.submit(rec.job("running", wait_gate=True))
        await settle()
        coros = [rec.job(i) for i in range(3)]
        pending = [pool.submit(c) for c in coros]
        pool.close()
        late = rec.job("late")
        with pytest.raises(RuntimeError, match="^cannot submit to a closed PriorityTaskPool$"):
            pool.submit(late)
        assert inspect.getcoroutinestate(late) == inspect.CORO_CLOSED
        pool.close(cancel_pending=True)
        await settle()
        assert all(t.cancelled() for t in pending) and not running.done()
        assert all(inspect.getcoroutinestate(c) == inspect.CORO_CLOSED for c in coros)
        rec.gate.set()
        assert await running == "running"
        assert rec.names() == ["running"] and pool._permit_task is None

    run(main())


def test_close_without_cancel_runs_the_pending(impl, run):
    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1)
        tasks = [pool.submit(rec.job(i)) for i in range(3)]
        pool.close()
        assert await asyncio.gather(*tasks) == [0, 1, 2]

    run(main())


def test_async_with_waits_for_tasks_submitted_while_it_waits(impl, run):
    async def main():
        polls = []
        pool = impl.aio.PriorityTaskPool(2, rate=2000, burst=2)

        async def poll(job, left):
            polls.append(job)
            await asyncio.sleep(0)
            if left > 1:
                pool.submit(poll(job, left - 1), priority=job)  # the same place in line

        async with pool:
            for job in range(10):
                pool.submit(poll(job, 3), priority=job)
        assert sorted(polls) == sorted(list(range(10)) * 3)
        with pytest.raises(RuntimeError, match="closed"):
            pool.submit(poll(0, 1))

    run(main())


def test_cancelling_the_async_with_cancels_the_tasks(impl, run):
    async def main():
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1)

        async def body():
            async with pool:
                tasks.extend(pool.submit(rec.job(i, wait_gate=True)) for i in range(3))

        tasks = []
        outer = asyncio.ensure_future(body())
        await settle()
        outer.cancel()
        await asyncio.gather(outer, return_exceptions=True)
        await settle()
        assert outer.cancelled() and all(t.cancelled() for t in tasks)
        assert rec.names() == [0]

    run(main())


def test_a_token_left_unused_goes_back_to_the_limiter(impl):
    async def main():
        loop = asyncio.get_running_loop()
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(2, rate=1, burst=1)
        t0 = loop.time()
        first = pool.submit(rec.job("first"))
        await first
        waiting = pool.submit(rec.job("waiting"))
        await asyncio.sleep(0.5)
        waiting.cancel()  # the pool's wait for a token is given up
        await settle()
        assert pool._permit_task is None
        await asyncio.sleep(2)
        again = [pool.submit(rec.job(i)) for i in range(2)]
        await asyncio.gather(*again)
        times = [round(t - t0, 9) for _, t in rec.started]
        assert rec.names() == ["first", 0, 1] and times == [0, 2.5, 3.5]

    run_virtual(main())


def test_stress_submits_cancels_and_failures_lose_nothing(impl, run):
    rng = random.Random(9)

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, ctx: pytest.fail(str(ctx)))
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(6, rate=20000, burst=4)
        tasks = []
        for step in range(40):
            for _ in range(20):
                i = len(tasks)
                tasks.append(
                    pool.submit(rec.job(i, hold=rng.random() * 0.002, fail=i % 7 == 0), rng.randrange(5))
                )
            for t in rng.sample(tasks, 8):
                t.cancel()
            await asyncio.sleep(rng.choice([0, 0, 0.001]))
            pool._check()
        async with pool:
            pass
        outcomes = {"ok": 0, "failed": 0, "cancelled": 0}
        for i, t in enumerate(tasks):
            if t.cancelled():
                outcomes["cancelled"] += 1
            elif t.exception() is not None:
                assert i % 7 == 0
                outcomes["failed"] += 1
            else:
                assert t.result() == i
                outcomes["ok"] += 1
        assert sum(outcomes.values()) == 800 and outcomes["ok"] > 100
        assert rec.most <= 6 and rec.running == 0 and pool._running == 0
        assert not pool._pending and not pool._tasks

    run(main())


# -- task factories ----------------------------------------------------------------------------


FACTORIES = [
    pytest.param(None, id="default-factory"),
    pytest.param(
        getattr(asyncio, "eager_task_factory", None),
        id="eager-factory",
        marks=pytest.mark.skipif(
            not hasattr(asyncio, "eager_task_factory"), reason="asyncio.eager_task_factory: 3.12+"
        ),
    ),
]


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("rate", [2000.0, 1500.0, 1000.0, 20000.0])
def test_a_rate_limited_pool_starts_every_job_under_any_task_factory(impl, factory, rate):
    async def job(i):  # reads no clock: the pool's reads alone move it
        return i

    async def main():
        pool = impl.aio.PriorityTaskPool(2, rate=rate, burst=1)
        futures = [pool.submit(job(i)) for i in range(20)]
        try:
            # a hang fails (the virtual clock jumps to the bound)
            _, stuck = await asyncio.wait(futures, timeout=5)
            assert not stuck, f"{len(stuck)} of 20 jobs never started"
        finally:
            pool.close(cancel_pending=True)
        assert [f.result() for f in futures] == list(range(20))
        pool._check()

    # the clock also moves 0.5 ms at every reading: a token can appear
    # between the pool's try_acquire() and its acquire()
    loop = VirtualClockLoop(1000.0, step=0.0005)
    loop.set_task_factory(factory)
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


def test_the_wait_for_a_token_is_no_task_of_the_loop_s_factory(impl, run):
    # The pool's own wait for a token is a plain Task: a custom factory (on
    # every Python, not only 3.12's eager one) sees the submitted coroutines only.
    seen = []

    def factory(loop, coro, **kwargs):
        seen.append(coro.__name__)
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def main():
        asyncio.get_running_loop().set_task_factory(factory)
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1, rate=100, burst=1)
        futures = [pool.submit(rec.job(i)) for i in range(3)]  # two wait for tokens
        try:
            _, stuck = await asyncio.wait(futures, timeout=5)
            assert not stuck
        finally:
            pool.close(cancel_pending=True)
        assert rec.names() == [0, 1, 2]
        assert seen == ["job"] * 3

    run(main())


# With one token an hour, the refused coroutine took the only one there is:
# given back, the next job starts at once; kept, it would wait an hour.
@pytest.mark.parametrize("rate, jobs", [(1000.0, 3), (1 / 3600, 1)])
def test_a_coroutine_the_loop_cannot_make_a_task_of_fails_alone(impl, run, rate, jobs):
    def factory(loop, coro, **kwargs):
        if coro.__name__ == "refused":
            raise RuntimeError("no task for this one")
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def refused():
        raise AssertionError("never runs")

    async def main():
        asyncio.get_running_loop().set_task_factory(factory)
        rec = Recorder()
        pool = impl.aio.PriorityTaskPool(1, rate=rate, burst=1)
        bad = pool.submit(refused(), priority=0)
        good = [pool.submit(rec.job(i), priority=1) for i in range(jobs)]
        try:
            _, stuck = await asyncio.wait([bad, *good], timeout=5)  # a hang fails
            assert not stuck, "the one slot, or the token, was lost"
        finally:
            pool.close(cancel_pending=True)
        with pytest.raises(RuntimeError, match="no task for this one"):
            bad.result()
        assert rec.names() == list(range(jobs))
        assert pool._running == 0
        pool._check()

    run(main())
