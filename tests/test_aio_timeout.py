"""aio.timeout / aio.timeout_at side by side with asyncio.timeout / asyncio.timeout_at.

Every scenario is a coroutine that takes the pair ``(timeout, timeout_at)``
under test and returns what it saw; the test runs it with asyncio's pair and
with aio's (on a Timer of each implementation, and on the loop's default
Timer) and asserts the same observations.  Both loops.  Where asyncio has no
``timeout`` (Python 3.10), the scenarios run against the expected outcomes
written out instead.
"""

from __future__ import annotations

import asyncio
import functools
import math
import sys

import pytest

from dq_core import aio
from test_aio_loops import LOOPS, new_loop, run, run_on, settle  # noqa: F401 -- the loop fixture

HAS_STDLIB = sys.version_info >= (3, 11)


@pytest.fixture(params=LOOPS)
def kind(request):
    new_loop(request.param).close()  # skip where the loop is missing
    return request.param


def ours(timer_cls=None):
    """aio's pair, on a fresh Timer of ``timer_cls`` (None: the loop's default Timer)."""
    if timer_cls is None:
        return aio.timeout, aio.timeout_at
    state = {}

    def timer():
        loop = asyncio.get_running_loop()
        if state.get("loop") is not loop:
            state.update(loop=loop, timer=timer_cls())
        return state["timer"]

    return (lambda d: aio.timeout(d, timer=timer()), lambda w: aio.timeout_at(w, timer=timer()))


def side_by_side(run, impl, scenario, expected=None):
    """Run ``scenario`` with asyncio's pair and aio's; the observations must agree."""
    got = run(scenario(*ours(impl.aio.Timer)))
    assert run(scenario(*ours())) == got
    if HAS_STDLIB:
        assert got == run(scenario(asyncio.timeout, asyncio.timeout_at))
    if expected is not None:
        assert got == expected
    return got


def outcome(coro_fn):
    """Run coro_fn() as a task: ("ok", value) or (exception class name, cause class name)."""

    @functools.wraps(coro_fn)
    async def wrapper(*a):
        try:
            return ("ok", await coro_fn(*a))
        except BaseException as exc:  # noqa: B902 -- CancelledError too
            return (
                type(exc).__name__ if not isinstance(exc, TimeoutError) else "TimeoutError",
                type(exc.__cause__).__name__ if exc.__cause__ else None,
            )

    return wrapper


def test_expiry_raises_timeout_error_and_uncancels(impl, run):
    async def scenario(timeout, timeout_at):
        task = asyncio.current_task()
        cm = timeout(0.01)
        r = await outcome(_sleep_in)(cm, 10)
        return r, cm.expired(), task.cancelling() if HAS_STDLIB else 0

    assert side_by_side(run, impl, scenario) == (("TimeoutError", "CancelledError"), True, 0)


async def _sleep_in(cm, seconds):
    async with cm:
        await asyncio.sleep(seconds)
    return "finished"


def test_no_expiry(impl, run):
    async def scenario(timeout, timeout_at):
        loop = asyncio.get_running_loop()
        cm = timeout(5)
        r = await outcome(_sleep_in)(cm, 0.001)
        cm2 = timeout(None)
        r2 = await outcome(_sleep_in)(cm2, 0.001)
        return r, cm.expired(), r2, cm2.when(), loop.time() < cm.when() <= loop.time() + 5

    assert side_by_side(run, impl, scenario) == (("ok", "finished"), False, ("ok", "finished"), None, True)


def test_timeout_at_and_reschedule(impl, run):
    async def scenario(timeout, timeout_at):
        loop = asyncio.get_running_loop()
        seen = []

        async def body():
            async with timeout_at(loop.time() + 10) as cm:
                seen.append(cm.when() > loop.time() + 9)
                cm.reschedule(loop.time() + 0.01)  # earlier: expires
                await asyncio.sleep(5)

        async def later():
            async with timeout(0.01) as cm:
                cm.reschedule(None)  # never
                await asyncio.sleep(0.03)
                cm.reschedule(loop.time() + 10)
                seen.append(cm.expired())
            return "finished"

        async def past():
            async with timeout(10) as cm:
                cm.reschedule(loop.time() - 1)  # in the past: at once
                await asyncio.sleep(5)

        return await outcome(body)(), await outcome(later)(), await outcome(past)(), seen

    assert side_by_side(run, impl, scenario) == (
        ("TimeoutError", "CancelledError"),
        ("ok", "finished"),
        ("TimeoutError", "CancelledError"),
        [True, False],
    )


def test_state_errors(impl, run):
    async def scenario(timeout, timeout_at):
        out = []
        cm = timeout(1)
        try:
            cm.reschedule(2)
        except RuntimeError as exc:
            out.append(str(exc))
        async with cm:
            pass
        for call in (lambda: cm.reschedule(3), cm.__aenter__):
            try:
                r = call()
                if asyncio.iscoroutine(r):
                    await r
            except RuntimeError as exc:
                out.append(str(exc))
        return out

    assert side_by_side(run, impl, scenario) == [
        "Timeout has not been entered",
        "Cannot change state of finished Timeout",
        "Timeout has already been entered",
    ]


def test_nested_timeouts(impl, run):
    async def scenario(timeout, timeout_at):
        async def outer_first():
            async with timeout(0.01) as outer:
                try:
                    async with timeout(10) as inner:
                        await asyncio.sleep(5)
                finally:
                    states.append((outer.expired(), inner.expired()))

        async def inner_first():
            async with timeout(10) as outer:
                try:
                    async with timeout(0.01) as inner:
                        await asyncio.sleep(5)
                except TimeoutError:
                    states.append("inner timed out")
                await asyncio.sleep(0.001)
            states.append((outer.expired(), inner.expired()))
            return "finished"

        states = []
        return await outcome(outer_first)(), await outcome(inner_first)(), states

    assert side_by_side(run, impl, scenario) == (
        ("TimeoutError", "CancelledError"),
        ("ok", "finished"),
        [(True, False), "inner timed out", (False, True)],
    )


def test_cancellation_from_outside_stays_cancellation(impl, run):
    async def scenario(timeout, timeout_at):
        entered = asyncio.Event()
        cms = []

        async def body():
            async with timeout(10) as cm:
                cms.append(cm)
                entered.set()
                await asyncio.sleep(5)

        task = asyncio.ensure_future(outcome(body)())
        await entered.wait()
        task.cancel()
        return await task, cms[0].expired()

    assert side_by_side(run, impl, scenario) == (("CancelledError", None), False)


@pytest.mark.skipif(
    not HAS_STDLIB, reason="Task.uncancel is Python >= 3.11: 3.10 turns this race into TimeoutError"
)
def test_cancellation_racing_the_expiry_stays_cancellation(impl, run):
    # the timeout fires and, before the task runs again, someone else cancels it
    async def scenario(timeout, timeout_at):
        async def body():
            task = asyncio.current_task()
            async with timeout(10) as cm:
                expire = cm._on_timeout

                def expire_then_cancel():
                    expire()
                    task.cancel()

                cm._on_timeout = expire_then_cancel
                cm.reschedule(asyncio.get_running_loop().time() + 0.01)
                await asyncio.sleep(5)

        task = asyncio.ensure_future(outcome(body)())
        r = await task
        return r, task.cancelling()

    # the outside cancel is still counted: the timeout took back only its own
    assert side_by_side(run, impl, scenario) == (("CancelledError", None), 1)


def test_error_raised_in_the_block_after_expiry_passes(impl, run):
    async def scenario(timeout, timeout_at):
        async def body():
            async with timeout(0.01):
                try:
                    await asyncio.sleep(5)
                finally:
                    raise KeyError("cleanup failed")

        r = await outcome(body)()
        return r[0]

    assert side_by_side(run, impl, scenario) == "KeyError"


def test_one_loop_timer_for_many_timeouts(impl, run):
    async def main():
        timer = aio.default_timer()
        assert aio.default_timer() is timer
        done = []

        async def guarded(i):
            async with aio.timeout(10):
                await asyncio.sleep(0.001 * (i % 3))
            done.append(i)

        await asyncio.gather(*(guarded(i) for i in range(300)))
        assert len(done) == 300 and len(timer) == 0
        assert timer._handle is not None  # one loop timer, lazily left armed for a cancelled head
        timer._check()

    run(main())


def test_default_timer_is_per_loop_and_lets_closed_loops_go(impl, kind):
    import gc
    import weakref

    from dq_core.aio import _timer

    async def get():
        async with aio.timeout(10):
            pass
        return aio.default_timer(), weakref.ref(asyncio.get_running_loop())

    timers, loops = zip(*(run_on(kind, get()) for _ in range(3)))
    assert len(set(map(id, timers))) == 3 and timers[0].tick == 0.001
    del timers
    gc.collect()
    assert all(ref() is None for ref in loops)  # closed loops are not held
    assert not _timer._slotted_loops
    with pytest.raises(RuntimeError):
        aio.default_timer()


def test_default_timer_lets_loops_dropped_without_close_go(impl, kind):
    # As asyncio.timeout does: a loop dropped without close() is collected
    # (and closed then, its file descriptors with it) whenever a loop that
    # only ran asyncio.timeout is.  uvloop never collects an unclosed loop.
    import gc
    import warnings
    import weakref

    def survivors(timeout):
        async def guarded():
            async with timeout(10):
                await asyncio.sleep(0)

        refs = []
        for _ in range(5):
            loop = new_loop(kind)
            loop.run_until_complete(guarded())
            refs.append(weakref.ref(loop))
            del loop
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # "unclosed event loop", as meant
            gc.collect()
        return sum(ref() is not None for ref in refs)

    baseline = survivors(asyncio.timeout) if hasattr(asyncio, "timeout") else 0
    assert survivors(aio.timeout) == baseline
    if kind == "asyncio":
        assert baseline == 0


def test_default_timer_is_safe_with_loops_in_many_threads(impl, kind, switch_often):
    from helpers import run_together

    async def guarded():
        for _ in range(3):
            async with aio.timeout(10):
                await asyncio.sleep(0)
        return aio.default_timer()

    def one_thread():
        for _ in range(40):
            loop = new_loop(kind)
            try:
                timer = loop.run_until_complete(guarded())
                assert timer._loop is loop
            finally:
                loop.close()

    run_together([one_thread] * 8, timeout=120)


def test_bad_arguments(impl, run):
    async def main():
        for call, name in (
            (lambda: aio.timeout(math.nan), "delay"),
            (lambda: aio.timeout("1"), "delay"),
            (lambda: aio.timeout_at(math.nan), "when"),
        ):
            with pytest.raises((TypeError, ValueError), match=name):
                call()
        async with aio.timeout(10) as cm:
            with pytest.raises(ValueError, match="when"):
                cm.reschedule(math.nan)
            assert cm.when() is not None and not math.isnan(cm.when())
            assert not cm.expired()

    run(main())


def test_many_tasks_on_a_virtual_clock(impl):
    # 2000 tasks, each a timeout around a sleep, deadlines at least 3 ticks apart
    # from the sleeps' ends: timed out exactly when the timeout is the shorter
    from clocks import VirtualClockLoop

    rng = __import__("random").Random(7)
    cases = [(rng.randrange(1, 5000) * 0.001, rng.randrange(1, 5000) * 0.001) for _ in range(2000)]
    cases = [(a, b) for a, b in cases if abs(a - b) >= 0.003]

    async def main(timeout):
        async def one(limit, work):
            try:
                async with timeout(limit) as cm:
                    await asyncio.sleep(work)
                    return "done", cm.expired()
            except TimeoutError:
                return "timed out", cm.expired()

        return await asyncio.gather(*(one(a, b) for a, b in cases))

    loop = VirtualClockLoop()
    try:
        got = loop.run_until_complete(main(ours(impl.aio.Timer)[0]))
    finally:
        loop.close()
    assert got == [("timed out", True) if a < b else ("done", False) for a, b in cases]


def test_default_timer_of_a_loop_that_takes_no_attribute(impl):
    from dq_core.aio import _timer

    class Strict(asyncio.SelectorEventLoop):
        def __setattr__(self, name, value):
            if name == _timer._ATTRIBUTE:
                raise AttributeError(name)
            super().__setattr__(name, value)

    async def get():
        async with aio.timeout(10):
            await asyncio.sleep(0)
        return aio.default_timer(), aio.default_timer()

    loops = [Strict(), Strict()]
    try:
        first, second = loops[0].run_until_complete(get())
        assert first is second and first._loop is loops[0]
        assert _timer._slotted_loops == {loops[0]: first}
        loops[0].close()
        third, _ = loops[1].run_until_complete(get())  # another such loop asks: the closed one goes
        assert _timer._slotted_loops == {loops[1]: third}
    finally:
        for loop in loops:
            loop.close()
        _timer._slotted_loops.clear()
