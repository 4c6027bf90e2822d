"""aio.Timer: never early, deadline order, one loop timer, cancel racing the firing, errors, close.

Each test runs on both implementations (``impl``) and, where it takes ``run``
or ``kind``, on both loops (asyncio/uvloop).  Loops that count (and may
shift) the ``call_at``/``call_later`` calls the Timer makes are subclasses of
the loop's own class (``counting_loop``).  Exact lateness and the randomized
model run on ``VirtualClockLoop`` (the default loop on a fake clock that jumps
to the next timer); on real clocks, timing asserts are one-sided or generous.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import gc
import math
import pickle
import random
import sys
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clocks import VirtualClockLoop
from test_aio_loops import LOOPS, new_loop, run, run_on, settle  # noqa: F401 -- the loop fixture
from test_heap import assert_no_leak


@pytest.fixture(params=LOOPS)
def kind(request):
    new_loop(request.param).close()  # skip where the loop is missing
    return request.param


def counting_loop(kind, early=0.0, virtual=False, late=0.0):
    """A loop of ``kind`` counting the Timer's ``call_at``/``call_later``; the first ``call_at``
    for a time fires ``early`` s early or ``late`` s late."""
    if virtual:
        base = VirtualClockLoop
    elif kind == "uvloop":
        import uvloop

        base = uvloop.Loop
    else:
        base = asyncio.SelectorEventLoop

    class Counting(base):
        def __init__(self):
            super().__init__()
            self.call_ats = []
            self.call_laters = 0
            self.inside = False  # uvloop's call_at calls call_later

        def call_at(self, when, callback, *args, context=None):
            if getattr(callback, "__self__", None) is not None and hasattr(callback.__self__, "_wheel"):
                first = when not in self.call_ats
                self.call_ats.append(when)  # the Timer's loop timer
                if first:
                    when += late - early  # the first time only: a real clock moves on, a virtual one not
            self.inside = True
            try:
                return super().call_at(when, callback, *args, context=context)
            finally:
                self.inside = False

        def call_later(self, delay, callback, *args, context=None):
            if (
                not self.inside
                and getattr(callback, "__self__", None) is not None
                and hasattr(callback.__self__, "_wheel")
            ):
                self.call_laters += 1
            return super().call_later(delay, callback, *args, context=context)

    return Counting()


def run_loop(loop, coro):
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def recorder(out):
    """A callback recording (name, loop.time()) into ``out``."""

    def cb(name):
        out.append((name, asyncio.get_running_loop().time()))

    return cb


# -- the surface ------------------------------------------------------------------------------


def test_surface(impl, run):
    async def main():
        t = impl.aio.Timer()
        assert type(t).__module__ == "dq_core.aio" and type(t).__name__ == "Timer"
        assert t.tick == 0.001 and len(t) == 0 and not t.closed
        loop = asyncio.get_running_loop()
        h = t.call_later(10, print)
        assert len(t) == 1 and not h.cancelled()
        assert loop.time() + 9 < h.when() <= loop.time() + 10
        h2 = t.call_at(loop.time() + 5, print, "x")
        assert h2.when() == pytest.approx(loop.time() + 5)
        assert "pending" in repr(h) and "print" in repr(h) and "pending=2" in repr(t)
        assert h.cancel() and h.cancelled() and not h.cancel()
        assert len(t) == 1
        t._check()
        assert t.close() == [h2] and t.closed and "closed" in repr(t)

    run(main())


def test_infinite_delay_never_runs_and_arms_a_finite_timer(impl, kind):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        h = t.call_later(math.inf, print)
        h2 = t.call_at(10**6, print)  # an int: taken as a float
        assert h.when() == math.inf and h2.when() == 1e6 and type(h2.when()) is float
        assert len(t) == 2 and all(at <= loop.time() + 86400 for at in loop.call_ats)
        await asyncio.sleep(0.01)
        assert t.close() == [h2, h]

    run_loop(counting_loop(kind), main())


def test_default_tick_and_bad_tick(impl):
    assert impl.aio.Timer(tick=0.5).tick == 0.5
    with pytest.raises(ValueError, match="tick"):
        impl.aio.Timer(tick=0)
    with pytest.raises(ValueError, match="wheel_size"):
        impl.aio.Timer(wheel_size=3)


def test_refuses_copy_and_pickle(impl, run):
    async def main():
        t = impl.aio.Timer()
        h = t.call_later(1, print)
        for obj, name in ((t, "Timer"), (h, "TimerHandle")):
            for fn in (copy.copy, copy.deepcopy, pickle.dumps):
                with pytest.raises(TypeError, match=name):
                    fn(obj)
        t.close()

    run(main())


def test_handles_are_instances_of_the_exported_timer_handle(impl, run):
    # aio.TimerHandle is the implementation's own class, as aio.Timer is
    import dq_core
    from conftest import IMPLEMENTATIONS
    from dq_core import aio

    async def main():
        t = impl.aio.Timer()
        h = t.call_later(1, print)
        assert isinstance(h, impl.aio.TimerHandle)
        if IMPLEMENTATIONS[impl.name] == dq_core.implementation:
            assert isinstance(h, aio.TimerHandle) and aio.TimerHandle is impl.aio.TimerHandle
        t.close()

    run(main())


# -- order and time ----------------------------------------------------------------------------


def test_deadline_order_fifo_on_ties_never_early(impl, run):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        out = []
        cb = recorder(out)
        now = loop.time()
        whens = {}
        for i, d in enumerate([0.03, 0.01, 0.02, 0.01, 0.0, -1.0, 0.02, 0.01]):
            whens[i] = t.call_at(now + d, cb, i).when()
        await asyncio.sleep(0.2)
        names = [n for n, _ in out]
        assert names == sorted(whens, key=lambda i: (whens[i], i))  # FIFO among equal
        for n, at in out:
            assert at >= whens[n]  # never early, on the loop's clock
        assert len(t) == 0
        t._check()

    run(main())


def test_never_early_when_the_loop_fires_early(impl, kind):
    # the loop fires the Timer's call_at 3 ms early: the Timer re-checks the clock
    async def main():
        t = impl.aio.Timer()
        out = []
        cb = recorder(out)
        hs = [t.call_later(d, cb, i) for i, d in enumerate((0.01, 0.02, 0.0305, 0.04))]
        await asyncio.sleep(0.15)
        assert [n for n, _ in out] == [0, 1, 2, 3]
        for (n, at), h in zip(out, hs):
            assert at >= h.when()

    run_loop(counting_loop(kind, early=0.003), main())


def test_rearmed_for_the_same_deadline_after_an_early_firing(impl):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer(tick=0.001)
        out = []
        cb = recorder(out)
        hs = [t.call_later(d, cb, i) for i, d in enumerate((0.01, 0.02, 0.0305))]
        await asyncio.sleep(0.1)
        assert [n for n, _ in out] == [0, 1, 2]
        for (n, at), h in zip(out, hs):
            assert h.when() <= at <= h.when() + t.tick
        # armed for the start of each timer's tick (its timers handed out), then for
        # its deadline; each fired 3 ms early (nothing done), armed again
        starts_and_deadlines = [0.009, 0.01, 0.019, 0.02, 0.03, 0.0305]
        assert loop.call_ats == pytest.approx([x for x in starts_and_deadlines for _ in (0, 1)])

    run_loop(counting_loop("asyncio", early=0.003, virtual=True), main())


def test_at_most_one_tick_late_on_a_virtual_clock(impl):
    async def main():
        t = impl.aio.Timer(tick=0.01)
        rng = random.Random(1)
        out = []
        cb = recorder(out)
        hs = {i: t.call_later(rng.random() * 30, cb, i) for i in range(2000)}
        await asyncio.sleep(31)
        assert len(out) == 2000
        for n, at in out:
            assert hs[n].when() <= at <= hs[n].when() + 0.01 + 1e-9
        assert [hs[n].when() for n, _ in out] == sorted(h.when() for h in hs.values())

    run_loop(VirtualClockLoop(), main())


def test_a_timer_runs_at_its_deadline_not_at_its_tick_s_end(impl):
    # On a virtual clock the loop timer fires exactly when armed: a timer alone
    # in its tick runs at its own deadline, not at the end of its 10 ms tick.
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer(tick=0.01)
        out = []
        cb = recorder(out)
        hs = [t.call_at(w, cb, i) for i, w in enumerate((0.0123, 0.0457, 0.3001, 7.5))]
        await asyncio.sleep(8)
        assert out == [(i, h.when()) for i, h in enumerate(hs)]
        # twice per timer: the start of its tick (handed out), then its deadline
        assert len(loop.call_ats) <= 2 * len(hs) + 2  # (+ the cascade of 7.5 s)
        t._check()

    run_loop(counting_loop("asyncio", virtual=True), main())


def test_a_dense_schedule_costs_one_loop_timer_per_tick(impl):
    # 2000 timers over 0.3 s (tick 1 ms): the loop timer is armed once a tick
    # or so (not once per deadline), and each timer runs within a tick
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer(tick=0.001)
        rng = random.Random(3)
        out = []
        cb = recorder(out)
        hs = [t.call_at(0.05 + rng.random() * 0.3, cb, i) for i in range(2000)]
        await asyncio.sleep(0.4)
        assert len(out) == 2000
        for n, at in out:
            assert hs[n].when() <= at <= hs[n].when() + 0.001 + 1e-9
        assert len(loop.call_ats) <= 1.1 * 300 + 10

    run_loop(counting_loop("asyncio", virtual=True), main())


def test_timers_scheduled_into_the_tick_under_way_keep_deadline_order(impl):
    # A, B, C share one 10 ms tick, handed out together at its start; A schedules
    # P (past), R (before C) and Q (B's deadline: after B, first-in first-out)
    async def main():
        t = impl.aio.Timer(tick=0.01)
        out = []

        def a():
            out.append("A")
            t.call_at(0.0, out.append, "P")
            t.call_at(0.0180, out.append, "Q")
            t.call_at(0.012, out.append, "R")

        t.call_at(0.0105, a)
        t.call_at(0.0180, out.append, "B")
        t.call_at(0.0150, out.append, "C")
        await asyncio.sleep(0.1)
        assert out == ["A", "P", "R", "C", "B", "Q"]
        t._check()

    run_loop(VirtualClockLoop(), main())


def test_not_far_late_on_a_real_clock(impl, run):
    # generous: a loaded machine may be slow, never 0.5 s slow for a 10 ms timer
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        done = loop.create_future()
        h = t.call_later(0.01, lambda: done.set_result(loop.time()))
        at = await asyncio.wait_for(done, 5)
        assert h.when() <= at < h.when() + 0.5

    run(main())


def test_past_deadline_from_a_late_firing_keeps_deadline_order(impl):
    # The loop fires 0.3 s late (at 5.3): the wheel's time is 5.3 while A (5.2) still
    # waits for its tick (6.0).  B = call_at(5.25), already past, must not run before A.
    async def main():
        t = impl.aio.Timer(tick=1.0)
        out = []
        t.call_at(4.5, lambda: out.append(t.call_at(5.25, out.append, "B") and "X"))
        t.call_at(5.2, out.append, "A")
        await asyncio.sleep(10)
        assert out == ["X", "A", "B"]

    run_loop(counting_loop("asyncio", late=0.3, virtual=True), main())


def test_callback_runs_in_its_context(impl, run):
    var = contextvars.ContextVar("var", default="unset")

    async def main():
        t = impl.aio.Timer()
        seen = []
        var.set("at schedule")
        t.call_later(0, lambda: seen.append(var.get()))
        var.set("later")
        ctx = contextvars.Context()
        t.call_later(0, lambda: seen.append(var.get()), context=ctx)
        t.call_later(0, var.set, "set in a callback")  # stays in that callback's copy
        t.call_later(0.001, lambda: seen.append(var.get()))
        await asyncio.sleep(0.05)
        assert seen == ["at schedule", "unset", "later"]

    run(main())


# -- one loop timer ----------------------------------------------------------------------------


def test_one_loop_timer_for_many_timers(impl, kind):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        now = loop.time()
        for i in range(1000):  # later and later: the first arms, none re-arms
            t.call_at(now + 0.05 + i * 1e-5, print)
        assert len(loop.call_ats) == 1 and loop.call_laters == 0
        t.call_at(now + 0.06, print)  # later than armed: no re-arm
        assert len(loop.call_ats) == 1
        t.call_at(now + 0.02, print)  # earlier: one re-arm
        assert len(loop.call_ats) == 2 and loop.call_ats[-1] <= now + 0.02 + t.tick
        t.call_at(now + 0.02, print)  # the same tick: no re-arm
        assert len(loop.call_ats) == 2
        t.close()

    run_loop(counting_loop(kind), main())


def test_rearmed_after_firing_for_the_next_deadline_only(impl):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer(tick=0.001)
        out = []
        for i in range(50):
            t.call_later(1.0 + i, out.append, i)
        for i in range(200):
            t.call_later(1.0 + i % 50, out.append, i)  # the same ticks
        await asyncio.sleep(60)
        assert len(out) == 250
        # one arm to start with, then one per firing (plus cascades of the wheel's
        # upper levels), never one per timer
        assert len(loop.call_ats) <= 1 + 50 + 60 // (0.001 * 256) + 2
        assert loop.call_laters == 0

    run_loop(counting_loop("asyncio", virtual=True), main())


def test_cancelled_timers_leave_the_wheel_at_once(impl, run):
    async def main():
        t = impl.aio.Timer()
        hs = [t.call_later(100 + i, print) for i in range(100)]
        for h in hs:
            assert h.cancel()
        assert len(t) == 0 and len(t._wheel) == 0
        t._check()

    run(main())


def test_a_timer_s_wheel_takes_no_key_of_another_wheel(impl, run):
    # each Timer's wheel issues its own keys: a key of one (the same slot and
    # generation as the other's timer) cancels nothing on the other
    async def main():
        t1, t2 = impl.aio.Timer(), impl.aio.Timer()
        fired = []
        h2 = t2.call_later(0.001, fired.append, "t2")
        key = t1._wheel.schedule_at("t1's", asyncio.get_running_loop().time() + 60)
        assert t2._wheel.cancel(key) is False
        assert len(t2) == 1 and not h2.cancelled()
        await asyncio.sleep(0.05)
        assert fired == ["t2"]
        assert t1._wheel.cancel(key) is True
        t1.close()
        t2.close()

    run(main())


# -- cancel racing the firing ------------------------------------------------------------------


def test_cancel_from_an_earlier_callback_of_the_same_batch(impl, kind):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        out = []
        results = {}
        when = loop.time() + 0.01
        hs = {}

        def first():
            out.append("first")
            results["second"] = hs["second"].cancel()  # due in the same batch, not run yet
            results["own"] = hs["first"].cancel()  # running: too late

        hs["first"] = t.call_at(when, first)
        hs["second"] = t.call_at(when, out.append, "second")
        t.call_at(when, out.append, "third")
        await asyncio.sleep(0.1)
        assert out == ["first", "third"]
        assert results == {"second": True, "own": False}
        assert hs["second"].cancelled() and not hs["first"].cancelled()
        assert not hs["first"].cancel()
        assert len(t) == 0
        t._check()

    run_loop(counting_loop(kind), main())


def test_scheduling_from_a_callback(impl, run):
    async def main():
        t = impl.aio.Timer()
        out = []

        def chain(n):
            out.append(n)
            if n < 5:
                t.call_later(0, chain, n + 1)  # never in the running batch: the next step

        t.call_later(0, chain, 0)
        t.call_later(0, out.append, "same batch")
        await asyncio.sleep(0.1)
        assert out == [0, "same batch", 1, 2, 3, 4, 5]
        t._check()

    run(main())


# -- errors -------------------------------------------------------------------------------------


def test_exceptions_go_to_the_loop_handler_and_the_rest_run(impl, run):
    async def main():
        loop = asyncio.get_running_loop()
        contexts = []
        loop.set_exception_handler(lambda lp, ctx: contexts.append(ctx))
        t = impl.aio.Timer()
        out = []
        when = loop.time() + 0.005

        def boom(x):
            raise ValueError(x)

        t.call_at(when, out.append, 1)
        h = t.call_at(when, boom, "bad")
        t.call_at(when, out.append, 2)
        t.call_at(when + 0.005, out.append, 3)
        await asyncio.sleep(0.1)
        assert out == [1, 2, 3]
        assert len(contexts) == 1
        ctx = contexts[0]
        assert isinstance(ctx["exception"], ValueError) and ctx["handle"] is h
        assert ctx["message"].startswith("Exception in callback") and "boom" in ctx["message"]
        t._check()

    run(main())


def test_keyboard_interrupt_propagates_and_the_batch_goes_on(impl, kind):
    loop = new_loop(kind)
    t = impl.aio.Timer()
    out = []

    def interrupt():
        raise KeyboardInterrupt

    async def schedule():
        when = asyncio.get_running_loop().time() + 0.005
        t.call_at(when, out.append, 1)
        t.call_at(when, interrupt)
        t.call_at(when, out.append, 2)

    try:
        loop.run_until_complete(schedule())
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(asyncio.sleep(0.1))
        assert out[0] == 1  # uvloop may run the rest before it lets the exception out
        loop.run_until_complete(asyncio.sleep(0.05))
        assert out == [1, 2] and len(t) == 0
    finally:
        loop.close()


def test_bad_arguments_name_themselves_and_change_nothing(impl, kind):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        t.call_later(5, print)
        armed = list(loop.call_ats)
        cases = [
            (ValueError, "delay", lambda: t.call_later(math.nan, print)),
            (TypeError, "delay", lambda: t.call_later("1", print)),
            (TypeError, "delay", lambda: t.call_later(None, print)),
            (ValueError, "when", lambda: t.call_at(math.nan, print)),
            (TypeError, "when", lambda: t.call_at(1j, print)),
            (TypeError, "callback", lambda: t.call_later(0.0, "print")),
            (TypeError, "callback", lambda: t.call_at(0.0, None)),
            (TypeError, "context", lambda: t.call_later(0.0, print, context={})),
        ]
        for exc, name, call in cases:
            with pytest.raises(exc, match=name):
                call()
            assert len(t) == 1 and loop.call_ats == armed
            t._check()
        t.close()

    run_loop(counting_loop(kind), main())


def test_bound_to_its_loop(impl, kind):
    t = impl.aio.Timer()
    with pytest.raises(RuntimeError, match="no running event loop"):
        t.call_later(1, print)
    assert len(t) == 0

    async def use():
        return t.call_later(10, print)

    h = run_on(kind, use())
    with pytest.raises(RuntimeError, match="different event loop"):
        run_on(kind, use())

    async def close_there():
        t.close()

    with pytest.raises(RuntimeError, match="different event loop"):
        run_on(kind, close_there())
    assert len(t) == 1
    assert t.close() == [h]  # no loop running: allowed


# -- close --------------------------------------------------------------------------------------


def test_close_returns_the_unrun_in_deadline_order(impl, kind):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        now = loop.time()
        hs = [t.call_at(now + d, print) for d in (30, 10, 20, 10, 5)]
        hs[4].cancel()
        unrun = t.close()
        assert unrun == [hs[1], hs[3], hs[2], hs[0]]
        assert [h.when() for h in unrun] == sorted(h.when() for h in unrun)
        for h in unrun:
            assert not h.cancel() and not h.cancelled() and "unrun" in repr(h)
        assert t.close() == [] and len(t) == 0
        assert t._handle is None
        with pytest.raises(RuntimeError, match="close"):
            t.call_later(1, print)
        t._check()
        await asyncio.sleep(0.01)  # the loop timer is cancelled: nothing fires

    run_loop(counting_loop(kind), main())


def test_close_from_a_callback_returns_the_rest_of_the_batch(impl, run):
    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer()
        out, got = [], []
        when = loop.time() + 0.005
        t.call_at(when, out.append, 1)
        t.call_at(when, lambda: got.extend(t.close()))
        rest = [t.call_at(when, out.append, 2), t.call_at(when + 1, out.append, 3)]
        await asyncio.sleep(0.05)
        assert out == [1] and got == rest and len(t) == 0
        t._check()

    run(main())


def test_hostile_callbacks_never_crash(impl, run):
    # One batch whose callbacks re-enter the Timer, cancel others of the batch (and
    # themselves), collect garbage, raise, and close the Timer halfway through.
    class Reenters:
        def __del__(self):  # runs inside cancel(), when the handle lets go of its args
            t.call_later(5, out.append, "from __del__").cancel()
            out.append("del")

    async def main():
        nonlocal t
        loop = asyncio.get_running_loop()
        contexts = []
        loop.set_exception_handler(lambda lp, ctx: contexts.append(ctx))
        t = impl.aio.Timer()
        when = loop.time() + 0.005
        hs = []

        def reenter():
            out.append(0)
            hs.append(t.call_at(when, out.append, "again"))  # into the next tick
            assert len(t) >= 1 and "pending" in repr(hs[-1])

        def cancel_others():
            out.append(1)
            assert hs[2].cancel() and not hs[1].cancel() and not hs[0].cancel()
            assert hs[7].cancel()  # its args go: Reenters.__del__ runs here
            gc.collect()

        def boom():
            out.append(3)
            raise ValueError("boom")

        def close():
            out.append(4)
            got.extend(t.close())
            with pytest.raises(RuntimeError, match="after close"):
                t.call_later(0, out.append, "closed")

        got = []
        hs += [t.call_at(when, f) for f in (reenter, cancel_others)]
        hs.append(t.call_at(when, out.append, 2))  # cancelled by cancel_others
        hs += [t.call_at(when, f) for f in (boom, close)]
        rest = [t.call_at(when, out.append, 5), t.call_at(when + 1, out.append, 6)]
        hs += rest
        hs.append(t.call_at(when + 2, out.append, Reenters()))
        await asyncio.sleep(0.05)
        assert out == [0, 1, "del", 3, 4]
        assert got == rest[:1] + [hs[8]] + rest[1:]  # "again" was due with the first
        assert [h.cancelled() for h in hs[:6]] == [False, False, True, False, False, False]
        assert len(contexts) == 1 and contexts[0]["handle"] is hs[3]
        assert len(t) == 0 and t.closed
        t._check()

    t = None
    out = []
    run(main())


# -- no leaks -----------------------------------------------------------------------------------


def test_no_reference_or_memory_leak_over_a_million_operations(impl):
    # ~550,000 schedule/cancel/fire operations on the compiled core (55,000 on the pure twin)
    payload = object()
    base = sys.getrefcount(payload)
    var = contextvars.ContextVar("var")

    async def main(rounds):
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda lp, ctx: None)
        t = impl.aio.Timer()
        seen = []

        def boom(x):
            raise ValueError(x)

        for r in range(rounds):
            var.set(r)
            now = loop.time()
            hs = [t.call_at(now + (i % 7) * 0.002, seen.append, payload) for i in range(90)]
            hs.append(t.call_later(0.001, boom, payload))
            hs.append(t.call_at(now, seen.append, payload, context=contextvars.copy_context()))
            for h in hs[::3]:
                h.cancel()
            repr(hs[1])
            await asyncio.sleep(0.02)
            assert len(t) == 0
            seen.clear()
        t.call_later(1, seen.append, payload)
        assert len(t.close()) == 1

    def churn(rounds):
        loop = VirtualClockLoop()
        try:
            loop.run_until_complete(main(rounds))
        finally:
            loop.close()

    assert_no_leak(churn, 3000 if impl.name == "c" else 300)  # 184 operations a round
    assert sys.getrefcount(payload) == base


def test_nothing_kept_after_firing_or_cancel(impl, run):
    class Callback:
        def __call__(self):
            pass

    async def main():
        t = impl.aio.Timer()
        fired, cancelled = Callback(), Callback()
        refs = [weakref.ref(fired), weakref.ref(cancelled)]
        h1 = t.call_later(0, fired)
        h2 = t.call_later(0, cancelled)
        href = weakref.ref(h1)
        assert h2.cancel()
        del fired, cancelled
        gc.collect()
        assert refs[1]() is None  # a cancelled handle keeps nothing, even while held
        assert h2.cancelled()
        del h1
        await asyncio.sleep(0.05)
        gc.collect()
        assert refs[0]() is None and href() is None
        assert len(t) == 0 and not t._batch

    run(main())


# -- the cyclic GC: pending handles off its lists (compiled core), and no cycle kept ------------


def untracks(impl):
    """True where pending handles are kept off the GC's lists: the core's shortcut says so."""
    return impl.aiotimercore.SHORTCUTS.get("untrack_pending", False)


class Owner:
    """What servers do: an object holding its Timer and its handles, whose callbacks are its methods."""

    def __init__(self, timer):
        self.timer = timer
        self.handles = []

    def on_timeout(self, *args):
        pass

    def schedule(self, n):
        loop = asyncio.get_running_loop()
        for i in range(n):
            self.handles.append(self.timer.call_at(loop.time() + 10 + i, self.on_timeout, self))


def test_pending_handles_are_off_the_gc_lists_and_back_on_when_they_leave(impl, run):
    async def main():
        t = impl.aio.Timer(tick=0.001)
        loop = asyncio.get_running_loop()
        now = loop.time()
        hs = [t.call_at(now + 0.001 * i, print) for i in range(5)] + [
            t.call_at(now + d, print) for d in (5, 99)
        ]
        off = untracks(impl)
        assert len(t._pending) == (7 if off else 0)
        assert [gc.is_tracked(h) for h in hs] == [not off] * 7
        t._check()
        assert hs[0].cancel()  # cancelled: back on
        assert gc.is_tracked(hs[0]) and len(t._pending) == (6 if off else 0)
        await asyncio.sleep(0.02)  # ran: back on
        assert [h.cancelled() for h in hs] == [True] + [False] * 6
        assert all(gc.is_tracked(h) for h in hs[:3] + hs[3:5])
        assert gc.is_tracked(hs[5]) is not off and len(t._pending) == (2 if off else 0)
        t._check()
        assert t.close() == [hs[5], hs[6]]  # unrun: back on
        assert all(gc.is_tracked(h) for h in hs) and len(t._pending) == 0
        t._check()

    run(main())


def test_a_cycle_through_a_pending_handle_is_kept_until_it_leaves(impl, run):
    async def main():
        t = impl.aio.Timer()
        owner = Owner(t)
        owner.schedule(3)
        ref = weakref.ref(owner)
        del owner
        gc.collect()
        owner = ref()
        assert owner is not None  # the Timer holds its pending handles, so their owner
        for h in owner.handles[:2]:
            h.cancel()
        owner.handles[2].cancel()
        del owner, h
        gc.collect()
        assert ref() is None  # cancelled: owner <-> handle is an ordinary cycle, collected
        owner = Owner(t)
        owner.schedule(2)
        owner.unrun = t.close()
        ref = weakref.ref(owner)
        del owner
        gc.collect()
        assert ref() is None  # unrun by close(): collected too

    run(main())


def test_a_ran_handle_in_a_cycle_is_collected(impl, run):
    async def main():
        t = impl.aio.Timer()
        owner = Owner(t)
        owner.handles.append(t.call_later(0, owner.on_timeout, owner))
        ref = weakref.ref(owner)
        del owner
        await asyncio.sleep(0.02)
        gc.collect()
        assert ref() is None
        t.close()

    run(main())


@pytest.mark.parametrize("hold", ["owner", "timer", "handle"])
def test_a_timer_left_pending_in_a_closed_loop_is_collected(impl, kind, hold):
    # loop.close() drops the Timer's loop timer: its pending handles go back on the GC's lists
    # and the cycles owner -> Timer -> wheel -> handle -> owner.on_timeout are collected
    async def main():
        t = impl.aio.Timer()
        owner = Owner(t)
        owner.schedule(50)
        return weakref.ref(owner), weakref.ref(t), weakref.ref(owner.handles[7])

    loop = new_loop(kind)
    refs = loop.run_until_complete(main())
    kept = {"owner": refs[0](), "timer": refs[1](), "handle": refs[2]()}[hold]
    assert all(r() is not None for r in refs)  # alive: the open loop holds the Timer
    loop.close()
    if hold == "handle":  # a handle held keeps its Timer (and so its owner), as asyncio's keeps its loop
        gc.collect()
        assert all(r() is not None for r in refs)
        assert kept.cancel() and kept.cancelled()
    del kept
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_no_leak_when_loops_close_with_timers_pending(impl):
    payload = object()
    base = sys.getrefcount(payload)

    async def main():
        t = impl.aio.Timer()
        owner = Owner(t)
        owner.schedule(30)
        owner.handles[3].cancel()
        t.call_later(0, payload.__repr__)
        t.call_later(50, print, payload)
        await asyncio.sleep(0.002)

    def churn(rounds):
        for _ in range(rounds):
            loop = VirtualClockLoop()
            loop.run_until_complete(main())
            loop.close()

    assert_no_leak(churn, 600 if impl.name == "c" else 120)
    gc.collect()
    assert sys.getrefcount(payload) == base


# -- a randomized model on a fake clock ---------------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("call_later"), st.sampled_from([-1.0, 0.0, 0.0005, 0.001, 0.0015, 0.01, 0.3, 2.0, 70.0])
        ),
        st.tuples(st.just("call_at_tick"), st.integers(-3, 3000)),
        st.tuples(st.just("cancel"), st.integers(0, 10**6)),
        st.tuples(st.just("sleep"), st.sampled_from([0.0, 0.0004, 0.001, 0.0123, 0.5, 3.0])),
    ),
    max_size=60,
)


@settings(max_examples=60)
@given(ops=ops, tick_exp=st.integers(-4, -1))
def test_model_on_a_virtual_clock(impl, ops, tick_exp):
    tick = 2.0 ** (tick_exp * 3)

    async def main():
        loop = asyncio.get_running_loop()
        t = impl.aio.Timer(tick=tick, wheel_size=4)
        events = []  # ("s", seq, time) when scheduled, ("r", seq, time) when run
        handles = []
        cancelled = set()  # cancelled before they ran

        def cb(seq):
            events.append(("r", seq, loop.time()))

        for op, arg in ops:
            seq = len(handles)
            if op in ("call_later", "call_at_tick"):
                events.append(("s", seq, loop.time()))
                if op == "call_later":
                    handles.append(t.call_later(arg, cb, seq))
                else:
                    handles.append(t.call_at(arg * tick, cb, seq))
            elif op == "cancel" and handles:
                i = arg % len(handles)
                ran = any(e[:2] == ("r", i) for e in events)
                assert handles[i].cancel() == (not ran and i not in cancelled)
                if not ran:
                    cancelled.add(i)
            elif op == "sleep":
                await asyncio.sleep(arg)
            t._check()
            ran_now = {e[1] for e in events if e[0] == "r"}
            assert len(t) == len(handles) - len(ran_now) - len(cancelled)
        await asyncio.sleep(3000 * tick + 100)  # past every deadline
        assert len(t) == 0
        t._check()
        runs = [(e[1], e[2]) for e in events if e[0] == "r"]
        # every timer not cancelled runs, once
        assert sorted(s for s, _ in runs) == [i for i in range(len(handles)) if i not in cancelled]
        at_start = {e[1]: (k, e[2]) for k, e in enumerate(events) if e[0] == "s"}
        at_run = {e[1]: k for k, e in enumerate(events) if e[0] == "r"}
        for s, at in runs:
            when = handles[s].when()
            # never early; at most one tick late (a past deadline: after it was scheduled)
            assert when <= at <= max(when, at_start[s][1]) + tick * (1 + 1e-9) + 1e-12
        for a, _ in runs:
            for b, _ in runs:
                if at_start[b][0] < at_run[a] < at_run[b]:  # b was waiting when a ran
                    assert (handles[a].when(), a) < (handles[b].when(), b)

    run_loop(VirtualClockLoop(), main())


# -- types --------------------------------------------------------------------------------------

TYPING_CASE = """\
from __future__ import annotations

from typing import Optional

from typing_extensions import assert_type

from dq_core import aio


def takes_int(x: int) -> None: ...


async def main() -> None:
    t = aio.Timer(tick=0.01)
    h = t.call_later(1.0, takes_int, 1)
    assert_type(h, aio.TimerHandle)
    assert_type(h.cancel(), bool)
    assert_type(h.when(), float)
    assert_type(t.call_at(2.0, print, "x", context=None), aio.TimerHandle)
    assert_type(t.close(), list[aio.TimerHandle])
    t.call_later(1.0, takes_int, "no")  # E: arg-type
    t.call_at("soon", takes_int, 1)  # E: arg-type
    async with aio.timeout(1.0) as cm:
        assert_type(cm.when(), Optional[float])
    async with aio.timeout_at(None, timer=t):
        pass
"""


def test_types_under_mypy_strict(tmp_path, monkeypatch):
    # test_aio_typing's mypy run, on this case
    import test_aio_typing

    monkeypatch.setattr(test_aio_typing, "CASE", TYPING_CASE)
    test_aio_typing.test_aio_types_under_mypy_strict(tmp_path)
