"""aio.RateLimiter: the threaded bucket's arithmetic on the loop's clock, FIFO, give-back.

Tests that take ``run`` run on both loops (asyncio/uvloop) in real time,
with one-sided timing asserts: a grant is never early on ``loop.time()``
(exact), and a wait that should be short is asserted only against a bound
seconds away.  Where exact times matter, the tests run on ``VirtualClockLoop``:
asyncio's loop whose clock jumps to the next timer instead of sleeping, so
every time is exact and nothing depends on how loaded the machine is.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import math
import pickle
import random
import re

import pytest

from clocks import VirtualClockLoop
from dq_core import RateLimiter as ThreadedRateLimiter
from dq_core._tokenbucket import TokenBucket
from test_aio_loops import run, settle  # noqa: F401 -- the loop fixture


def run_virtual(coro, start=1000.0):
    loop = VirtualClockLoop(start)
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def within_rate(times, tokens, rate, burst, margin):
    """Every window [t_i, t_j] of grants holds at most rate * (t_j - t_i) + burst + margin tokens."""
    pairs = sorted(zip(times, tokens))
    for i in range(len(pairs)):
        total = 0.0
        for j in range(i, len(pairs)):
            total += pairs[j][1]
            allowed = rate * (pairs[j][0] - pairs[i][0]) + burst + margin
            assert total <= allowed, (i, j, total, allowed)


class LoopLag:
    """The running loop's worst lateness from now until stop(): a bound on how
    late a task reads the clock after its grant (a loaded machine preempts
    the process, and delays a 1 ms sleep as much as any other callback)."""

    def __init__(self):
        self.worst = 0.0
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self):
        loop = asyncio.get_running_loop()
        while True:
            t = loop.time()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, loop.time() - t - 0.001)

    def stop(self):
        self._task.cancel()
        return self.worst


# -- the surface ----------------------------------------------------------------------------


def test_surface(impl, run):
    RL = impl.aio.RateLimiter
    assert RL.__module__ == "dq_core.aio" and RL.__name__ == "RateLimiter"
    assert issubclass(RL, TokenBucket) and issubclass(ThreadedRateLimiter, TokenBucket)

    async def main():
        lim = RL(2, burst=4)
        assert (lim.rate, lim.burst) == (2.0, 4.0)
        assert repr(lim) == "<RateLimiter rate=2.0 burst=4.0 available=4 waiting=0>"
        assert lim.try_acquire(3)
        assert repr(lim) == "<RateLimiter rate=2.0 burst=4.0 available=1 waiting=0>"
        assert await lim.acquire(0.5) is True
        async with lim:
            pass
        for fn in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="^cannot pickle or copy 'RateLimiter' object"):
                fn(lim)

    run(main())


def _outcome(fn):
    try:
        fn()
    except Exception as exc:
        return type(exc), str(exc)
    return None


BAD_PARAMETERS = [
    {"rate": 0},
    {"rate": -1},
    {"rate": math.nan},
    {"rate": math.inf},
    {"rate": "1"},
    {"rate": None},
    {"rate": 1, "burst": 0},
    {"rate": 1, "burst": math.nan},
    {"rate": 1, "burst": -2},
    {"rate": 1, "burst": "2"},
    {"rate": 1, "burst": 2**60},
]


@pytest.mark.parametrize("kwargs", BAD_PARAMETERS)
def test_bad_parameters_as_the_threaded_limiter(impl, kwargs):
    expected = _outcome(lambda: ThreadedRateLimiter(**kwargs))
    assert expected is not None
    assert _outcome(lambda: impl.aio.RateLimiter(**kwargs)) == expected


def test_bad_tokens_and_setters_as_the_threaded_limiter_and_nothing_taken(impl, run):
    async def main():
        lim = impl.aio.RateLimiter(1, burst=2)
        ref = ThreadedRateLimiter(1, burst=2)
        for bad in (3, 0, -1, math.nan, math.inf, "1", None, 2**60):
            expected = _outcome(lambda: ref.try_acquire(bad))
            assert expected is not None
            assert _outcome(lambda: lim.try_acquire(bad)) == expected
            with pytest.raises(expected[0], match=f"^{re.escape(expected[1])}$"):
                await lim.acquire(bad)
        for name in ("rate", "burst"):
            for bad in (0, -1, math.nan, math.inf, "2"):
                expected = _outcome(lambda: setattr(ref, name, bad))
                assert expected is not None
                assert _outcome(lambda: setattr(lim, name, bad)) == expected
        assert (lim.rate, lim.burst) == (1.0, 2.0)
        assert lim.try_acquire(2) and not lim.try_acquire(0.01)  # nothing was taken

    run(main())


def test_needs_a_running_loop_and_binds_to_one(impl, run):
    lim = impl.aio.RateLimiter(10)
    with pytest.raises(RuntimeError, match="no running event loop"):
        lim.try_acquire()

    async def use():
        return lim.try_acquire()

    assert run(use()) is True
    with pytest.raises(RuntimeError, match="bound to a different event loop"):
        run(use())


# -- the bucket, exact on the virtual clock -------------------------------------------------


def test_refills_exactly_as_the_threaded_bucket(impl):
    async def main():
        loop = asyncio.get_running_loop()
        clock = [loop.now]
        lim = impl.aio.RateLimiter(3, burst=2)
        ref = ThreadedRateLimiter(3, burst=2, clock=lambda: clock[0])
        rng = random.Random(7)
        for _ in range(3000):
            step = rng.choice([0.0, 0.0, 1e-7, 0.1, 1 / 3, 0.5, 2.0])
            loop.now += step
            clock[0] = loop.now
            k = rng.choice([0.25, 0.5, 1, 1, 2])
            assert lim.try_acquire(k) == ref.try_acquire(k)
            assert len(lim) == len(ref)
        assert repr(lim) == repr(ref)[:-1] + " waiting=0>"

    run_virtual(main())


def test_acquire_waits_exactly_until_its_tokens_exist(impl):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(4, burst=2)
        t0 = loop.time()
        got = []
        for k in (2, 1, 2, 0.5, 1):
            await lim.acquire(k)
            got.append(loop.time() - t0)
        assert got == pytest.approx([0.0, 0.25, 0.75, 0.875, 1.125], abs=1e-9)
        assert not lim.try_acquire(0.001)

    run_virtual(main())


# -- the line: FIFO, one timer, give-back ---------------------------------------------------------


def test_waiters_are_served_first_come_first_served_whatever_they_ask(impl, run):
    # aiolimiter serves the smallest request first; here a large one is never overtaken.
    async def main():
        lim = impl.aio.RateLimiter(200, burst=3)
        assert lim.try_acquire(3)
        order = []
        sizes = [3, 0.5, 2, 0.25, 3, 1, 0.5]

        async def taker(i, k):
            await lim.acquire(k)
            order.append(i)

        tasks = []
        for i, k in enumerate(sizes):
            tasks.append(asyncio.ensure_future(taker(i, k)))
            await settle(2)  # arrive in this order
        assert not lim.try_acquire(0.001)  # nobody jumps the line
        await asyncio.gather(*tasks)
        assert order == list(range(len(sizes)))

    run(main())


def test_one_timer_for_the_whole_line_and_never_early(impl):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(10, burst=1)
        assert lim.try_acquire()
        t0 = loop.time()
        times = {}
        arms = []  # the callbacks given to loop.call_at
        call_at = loop.call_at

        def recording_call_at(when, callback, *args, **kwargs):
            arms.append(callback)
            return call_at(when, callback, *args, **kwargs)

        loop.call_at = recording_call_at

        async def taker(i):
            await lim.acquire()
            times[i] = loop.time() - t0

        tasks = [asyncio.ensure_future(taker(i)) for i in range(50)]
        while not all(t.done() for t in tasks):
            await asyncio.sleep(0.03)  # the virtual clock moves by timers only
            assert len(loop.armed()) <= 2  # ours (sleep), and one for the whole line
            lim._check()
        assert arms.count(lim._on_timer) == 50  # one arm per head, no polling
        assert [times[i] for i in range(50)] == pytest.approx([(i + 1) / 10 for i in range(50)])
        assert not loop.armed()

    run_virtual(main())


def test_a_cancelled_head_gives_its_place_back(impl, run):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(10, burst=100)
        t0 = loop.time()  # read before the bucket empties: a later read can be a tick late
        assert lim.try_acquire(100)
        big = asyncio.ensure_future(lim.acquire(100))  # due in 10 s
        await settle(2)
        small = asyncio.ensure_future(lim.acquire(1))  # due in 10.1 s behind it
        await settle(2)
        big.cancel()
        await asyncio.wait_for(small, 5)  # now due 0.1 s after t0
        assert loop.time() >= t0 + 0.1 - 1e-9  # never early
        assert big.cancelled()

    run(main())


def test_cancelled_waiters_move_later_ones_earlier_exactly(impl):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(1, burst=10)
        assert lim.try_acquire(10)
        t0 = loop.time()
        done = {}

        async def taker(name, k):
            await lim.acquire(k)
            done[name] = loop.time() - t0

        a = asyncio.ensure_future(taker("a", 4))  # due at 4
        b = asyncio.ensure_future(taker("b", 5))  # due at 9
        c = asyncio.ensure_future(taker("c", 1))  # due at 10
        await settle()
        loop.now = t0 + 2
        b.cancel()  # behind the head: c now due at 5
        await settle()
        lim._check()
        loop.now = t0 + 3
        a.cancel()  # the head: c now due at 1, so at once
        await asyncio.gather(a, b, c, return_exceptions=True)
        assert done == {"c": 3.0}
        loop.now = t0 + 3.5
        assert not lim.try_acquire(2.6) and lim.try_acquire(2.5)  # 3.5 refilled, 1 taken by c

    run_virtual(main())


def test_granted_then_cancelled_before_resuming_gives_the_tokens_back(impl):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(1, burst=5)
        assert lim.try_acquire(5)
        t0 = loop.time()
        head = asyncio.ensure_future(lim.acquire(3))  # due at 3
        after = asyncio.ensure_future(lim.acquire(2))  # due at 5
        await settle()
        loop.now = t0 + 3
        lim.rate = 1  # a re-plan at t0 + 3: the head is granted its 3 tokens
        assert lim._waiters[0][1] == 2  # granted: out of the line, its task not resumed yet
        head.cancel()  # ... and cancelled before it resumes: the 3 tokens go back
        await asyncio.gather(head, return_exceptions=True)
        await after
        assert head.cancelled() and loop.time() == t0 + 3  # 'after' did not wait for 5

    run_virtual(main())


def test_many_cancelled_waiters_do_not_pile_up(impl, run):
    async def main():
        lim = impl.aio.RateLimiter(1e-3, burst=1)
        assert lim.try_acquire()
        head = asyncio.ensure_future(lim.acquire())  # waits ~1000 s
        await settle(2)
        for _ in range(20):
            tasks = [asyncio.ensure_future(lim.acquire()) for _ in range(50)]
            await settle(2)
            for t in tasks:
                t.cancel()
            await settle(2)
            assert len(lim._waiters) <= 3 + 50  # swept once the cancelled outnumber the live
        assert repr(lim).endswith("waiting=1>")
        head.cancel()
        await settle(2)
        assert not lim._waiters and lim._timer is None

    run(main())


def test_async_with_takes_one_token(impl, run):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(20, burst=1)
        t0 = loop.time()
        for _ in range(3):
            async with lim as value:
                assert value is None
        assert loop.time() >= t0 + 2 / 20 - 1e-9  # the 2nd and 3rd waited, never early
        assert not lim.try_acquire()

    run(main())


def test_setting_rate_and_burst_replans_the_line(impl):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(1, burst=4)
        assert lim.try_acquire(4)
        t0 = loop.time()
        w = asyncio.ensure_future(lim.acquire(3))  # due at 3
        await settle()
        loop.now = t0 + 1  # 1 token there
        lim.rate = 4  # the other 2 in 0.5 s
        lim._check()
        with pytest.raises(
            ValueError,
            match=r"^burst \(2\.0\) must not be less than the tokens "
            r"a waiting acquire asks for \(3\.0\)$",
        ):
            lim.burst = 2
        assert lim.burst == 4.0
        await w
        assert loop.time() == t0 + 1.5
        lim.burst = 1  # nothing waits: fine; caps what is there
        loop.now += 100
        assert lim.try_acquire(1) and not lim.try_acquire(0.01)

    run_virtual(main())


def test_a_tiny_rate_waits_for_ever_without_overflow(impl, run):
    async def main():
        lim = impl.aio.RateLimiter(5e-324)
        assert lim.try_acquire()
        w = asyncio.ensure_future(lim.acquire())
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(w), 0.05)
        assert lim._timer is not None and not w.done()
        w.cancel()
        await settle()
        assert lim._timer is None and not lim._waiters

    run(main())


# -- the rate, under contention ----------------------------------------------------------------


def test_the_rate_is_never_exceeded(impl, run):
    rate, burst = 400.0, 4.0
    rng = random.Random(3)
    sizes = [rng.choice([0.5, 1, 1, 2]) for _ in range(120)]

    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(rate, burst)
        grants = []

        async def taker(k):
            await asyncio.sleep(rng.random() * 0.05)
            await lim.acquire(k)
            grants.append((loop.time(), k))

        lag = LoopLag()
        await asyncio.gather(*(taker(k) for k in sizes))
        return grants, lag.stop()

    grants, lag = run(main())
    times, tokens = zip(*grants)
    # margin: 2 tokens of skew between a grant and its task reading the clock,
    # one tick of uvloop's clock, which counts whole milliseconds (a window
    # 5.4 ms long can read as 5 ms: seen as 8.0 > 7.99999999895), and the
    # loop's worst lateness in the run (a loaded machine delays a reading)
    within_rate(times, tokens, rate, burst, 2 + rate * (0.001 + lag))


def test_the_rate_is_never_exceeded_exactly_on_the_virtual_clock(impl):
    rate, burst = 50.0, 3.0
    rng = random.Random(11)

    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(rate, burst)
        grants = []

        async def taker(k, delay):
            await asyncio.sleep(delay)
            if rng.random() < 0.3:
                try:
                    await asyncio.wait_for(lim.acquire(k), rng.random() * 0.2)
                except asyncio.TimeoutError:
                    return
            elif not lim.try_acquire(k):
                await lim.acquire(k)
            grants.append((loop.time(), k))

        await asyncio.gather(*(taker(rng.choice([0.5, 1, 3]), rng.random() * 2) for _ in range(300)))
        assert len(grants) > 100
        times, tokens = zip(*grants)
        within_rate(times, tokens, rate, burst, 1e-6)
        assert not lim._waiters and not loop.armed()

    run_virtual(main())


def test_stress_cancellations_lose_nobody(impl, run):
    rng = random.Random(5)

    async def main():
        lim = impl.aio.RateLimiter(5000, burst=5)
        results = []

        async def taker(i):
            await lim.acquire(rng.choice([1, 2, 5]))
            results.append(i)

        tasks = [asyncio.ensure_future(taker(i)) for i in range(1500)]
        cancelled = set()
        for _ in range(40):
            await asyncio.sleep(0.002)
            for i in rng.sample(range(len(tasks)), 20):
                if tasks[i].cancel():
                    cancelled.add(i)
        await asyncio.gather(*tasks, return_exceptions=True)
        really = {i for i in cancelled if tasks[i].cancelled()}
        assert sorted(results + sorted(really)) == list(range(1500))
        assert not lim._waiters and lim._timer is None

    run(main())
    gc.collect()


def test_a_late_resume_takes_the_tokens_when_it_resumes(impl):
    # The timer wakes the head at 1, but the loop is busy and its task
    # resumes at 5: it must take its token at 5, leaving an empty bucket
    # (burst 1), not spend a token granted at 1 and let a second start at 5.
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(1, burst=1)
        assert lim.try_acquire()
        t0 = loop.time()
        resumed = []

        async def taker():
            await lim.acquire()
            resumed.append(loop.time())

        def busy():  # runs after the limiter's timer, before the woken task
            loop.now = t0 + 5

        task = asyncio.ensure_future(taker())
        await settle()
        loop.call_at(t0 + 1 + 1e-10, busy)
        assert not lim.try_acquire()
        await task
        assert resumed == [t0 + 5]
        assert not lim.try_acquire()  # one start at 5, not two
        lim._check()
        await lim.acquire()
        assert loop.time() == t0 + 6

    run_virtual(main())


def test_nobody_jumps_a_woken_waiter_that_has_not_resumed(impl):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(1, burst=2)
        assert lim.try_acquire(2)
        t0 = loop.time()
        order = []

        async def taker(name, k):
            await lim.acquire(k)
            order.append((name, loop.time()))

        first = asyncio.ensure_future(taker("first", 1))
        await settle()
        seen = []

        def between():  # the head is woken, its task not resumed: the token is still there
            loop.now = t0 + 3  # ... and by now 2 more exist (capped at burst 2)
            seen.append(lim.try_acquire())
            lim._check()

        loop.call_at(t0 + 1 + 1e-10, between)
        await first
        assert seen == [False]
        assert order == [("first", t0 + 3)]
        assert lim.try_acquire() and not lim.try_acquire()  # 2 at 3, one taken by 'first'

    run_virtual(main())


def test_burst_cannot_drop_below_what_a_woken_waiter_asks_for(impl):
    async def main():
        loop = asyncio.get_running_loop()
        lim = impl.aio.RateLimiter(1, burst=4)
        assert lim.try_acquire(4)
        t0 = loop.time()
        w = asyncio.ensure_future(lim.acquire(3))
        await settle()
        refused = []

        def between():  # woken at 3, its task not resumed yet
            try:
                lim.burst = 2
            except ValueError as exc:
                refused.append(str(exc))

        loop.call_at(t0 + 3 + 1e-10, between)
        await asyncio.wait_for(w, 10)  # a waiter stranded by a lowered burst fails
        assert refused == ["burst (2.0) must not be less than the tokens a waiting acquire asks for (3.0)"]
        assert lim.burst == 4.0 and loop.time() == t0 + 3

    run_virtual(main())
