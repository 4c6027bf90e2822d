"""TimingWheel: ordering, never early, idle jumps, handles, leaks; both implementations."""

from __future__ import annotations

import gc
import inspect
import math
import random
import sys
import time
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from clocks import FakeClock
from helpers import traced_growth, twin_ids

DAY = 86400.0
YEAR = 365.25 * DAY


def test_basics(impl):
    clock = FakeClock(100.0)
    w = impl.TimingWheel(tick=0.5, wheel_size=4, clock=clock)
    assert len(w) == 0 and w.next_deadline() is None and w.advance() == []
    assert w.tick == 0.5 and w.wheel_size == 4
    a = w.schedule("a", 2.0)  # due at 102.0
    b = w.schedule_at("b", 101.2)  # tick 203: 101.5
    assert len(w) == 2 and a in w and b in w and a != b
    assert repr(w) == "<TimingWheel len=2 tick=0.5 next_deadline=101.5>"
    assert w.advance(101.49) == []
    assert w.advance(101.5) == ["b"]
    assert b not in w and w.cancel(b) is False
    assert w.next_deadline() == 102.0
    assert w.cancel(a) is True and w.cancel(a) is False
    assert len(w) == 0 and w.next_deadline() is None
    w._check()


def test_earliest_tick_first_fifo_within_a_tick(impl):
    w = impl.TimingWheel(tick=1.0, wheel_size=4, clock=FakeClock(0.0))
    # scheduled out of order, across levels; ties keep their order
    for name, d in [
        ("c1", 70.5),
        ("a1", 3.0),
        ("b1", 20.2),
        ("c2", 70.1),
        ("a2", 2.5),
        ("b2", 20.9),
        ("c3", 71.0),
        ("z", 1000.0),
    ]:
        w.schedule_at(name, d)
    w._check()
    assert w.advance(100.0) == ["a1", "a2", "b1", "b2", "c1", "c2", "c3"]
    assert w.advance(1e6) == ["z"]
    w._check()


def test_past_deadlines_and_non_positive_delays_are_due_at_the_next_advance(impl):
    clock = FakeClock(50.0)
    w = impl.TimingWheel(tick=1.0, clock=clock)
    w.schedule_at("later", 50.5)
    w.schedule("zero", 0)
    w.schedule("negative", -5)
    w.schedule_at("past", 10.0)
    w.schedule_at("now", 50.0)
    assert w.next_deadline() == 50.0  # the wheel's time: something is due
    assert w.advance(50.0) == ["zero", "negative", "past", "now"]
    assert w.next_deadline() == 51.0
    assert w.advance(50.9) == []
    assert w.advance(51.0) == ["later"]


def test_time_never_goes_back(impl):
    w = impl.TimingWheel(tick=1.0, clock=FakeClock(7.0))
    assert w.wheel_time == 7.0
    w.advance(100.0)
    assert w.wheel_time == 100.0
    w.schedule_at("x", 99.0)  # the wheel's time has passed it
    w.schedule_at("y", 100.5)
    assert w.advance(5.0) == ["x"]  # counts as advance(100.0)
    assert w.wheel_time == 100.0
    assert w.advance(101.0) == ["y"]


def test_advance_over_a_day_of_idle_time_visits_only_occupied_slots(impl):
    clock = FakeClock(0.0)
    w = impl.TimingWheel(tick=0.001, wheel_size=256, clock=clock)
    for d in (1.0, 3600.0, DAY):
        w.schedule(d, d)
    assert w.advance(DAY + 0.001) == [1.0, 3600.0, DAY]
    # 86.4 million ticks crossed; a handful of slots reached (each timer
    # is cascaded down at most once per level)
    assert w.stats()["visited"] <= 12
    w.schedule("next day", DAY)
    before = w.stats()["visited"]
    assert w.advance(2 * DAY + 0.001) == ["next day"]
    assert w.stats()["visited"] - before <= 4
    w._check()


def test_delays_from_zero_to_years_and_beyond(impl):
    clock = FakeClock(1000.0)
    w = impl.TimingWheel(tick=0.001, wheel_size=64, clock=clock)
    delays = [0.0, 0.0005, 0.001, 0.0015, 1.0, 60.0, 3600.0, DAY, YEAR, 1e9, 50 * YEAR, 1e15, 1e300, math.inf]
    handles = [w.schedule(d, d) for d in delays]
    assert len(set(handles)) == len(delays)
    w._check()
    got: list[float] = []
    for d in delays[1:-1]:
        now = 1000.0 + d
        out = w.advance(now)
        w._check()
        got += out
        assert all(x <= d for x in out), (d, out)  # never early
    assert w.drain() == [math.inf]  # never due: advance refuses an infinite now
    assert got + [math.inf] == delays
    assert len(w) == 0 and w.next_deadline() is None


def test_far_future_deadlines_keep_their_order(impl):
    w = impl.TimingWheel(tick=1e-9, clock=FakeClock(0.0))
    w.schedule_at("b", 1e300)
    w.schedule_at("a", 1e200)
    w.schedule_at("b2", 1e300)
    w.schedule_at("near", 1.0)
    assert 0 < w.next_deadline() <= 1.0  # a lower bound: "near" is on an upper level
    assert w.advance(2.0) == ["near"]
    assert w.next_deadline() == 1e200
    assert w.advance(1e250) == ["a"]
    assert w.cancel(w.schedule_at("gone", 1e250)) is True
    assert w.advance(sys.float_info.max) == ["b", "b2"]
    w._check()


def test_next_deadline_is_exact_on_the_lowest_level(impl):
    w = impl.TimingWheel(tick=0.01, wheel_size=256, clock=FakeClock(5.0))
    w.schedule_at("x", 5.123)
    nd = w.next_deadline()
    assert 5.123 <= nd < 5.123 + 0.01
    assert w.advance(math.nextafter(nd, 0)) == []
    assert w.advance(nd) == ["x"]


def test_next_deadline_is_a_lower_bound_on_upper_levels(impl):
    w = impl.TimingWheel(tick=1.0, wheel_size=4, clock=FakeClock(0.0))
    w.schedule_at("x", 30.5)  # level 2 of a 4-slot wheel
    nd = w.next_deadline()
    assert nd <= 31.0
    while True:
        out = w.advance(nd)
        if out:
            break
        nxt = w.next_deadline()
        assert nxt > nd  # progress: each wake-up moves on
        nd = nxt
    assert out == ["x"] and nd == 31.0


@pytest.mark.parametrize(
    "bad, exc, msg",
    [
        ({"tick": 0}, ValueError, "tick must be a positive finite number"),
        ({"tick": -1}, ValueError, "tick must be a positive finite number"),
        ({"tick": math.inf}, ValueError, "tick must be a positive finite number"),
        ({"tick": float("nan")}, ValueError, "tick must not be NaN"),
        ({"tick": "1"}, TypeError, "tick must be a real number, not 'str'"),
        ({"wheel_size": 3}, ValueError, "wheel_size must be a power of two"),
        ({"wheel_size": 1}, ValueError, "wheel_size must be a power of two"),
        ({"wheel_size": 2**17}, ValueError, "wheel_size must be a power of two"),
        ({"wheel_size": 2.0}, TypeError, "wheel_size must be an int"),
        ({"clock": 5}, TypeError, "clock must be callable, not 'int'"),
        ({"clock": lambda: "now"}, TypeError, r"clock\(\) must be a real number"),
        ({"clock": lambda: 1e300}, ValueError, r"clock\(\) / tick must lie within"),
    ],
)
def test_bad_construction(impl, bad, exc, msg):
    with pytest.raises(exc, match=msg):
        impl.TimingWheel(**bad)


def test_init_runs_once(impl):
    w = impl.TimingWheel()
    with pytest.raises(RuntimeError, match="only once"):
        w.__init__()


def test_bad_input_leaves_the_wheel_as_it_was(impl):
    clock = FakeClock(0.0)
    w = impl.TimingWheel(tick=1.0, wheel_size=4, clock=clock)
    h = w.schedule("keep", 10)
    before = (len(w), w.next_deadline(), w.stats())

    class BadFloat:
        def __float__(self):
            raise ArithmeticError("boom")

    for call, exc, msg in [
        (lambda: w.schedule("x", "soon"), TypeError, "delay must be a real number, not 'str'"),
        (lambda: w.schedule("x", float("nan")), ValueError, "delay must not be NaN"),
        (lambda: w.schedule("x", 2**60), OverflowError, "delay must be an integer within"),
        (lambda: w.schedule_at("x", None), TypeError, "deadline must be a real number"),
        (lambda: w.schedule_at("x", BadFloat()), ArithmeticError, "boom"),
        (lambda: w.advance("later"), TypeError, "now must be a real number"),
        (lambda: w.advance(math.inf), ValueError, "now must be a finite number, got inf"),
        (lambda: w.advance(-math.inf), ValueError, "now must be a finite number, got -inf"),
        (lambda: w.advance(float("nan")), ValueError, "now must not be NaN"),
        (lambda: w.cancel("1"), TypeError, "handle must be an int, not 'str'"),
        (lambda: w.cancel(1.0), TypeError, "handle must be an int, not 'float'"),
    ]:
        with pytest.raises(exc, match=msg):
            call()
        assert (len(w), w.next_deadline(), w.stats()) == before
        w._check()
    clock.now = float("nan")
    with pytest.raises(ValueError, match=r"clock\(\) must not be NaN"):
        w.schedule("x", 1)
    with pytest.raises(ValueError, match=r"clock\(\) must not be NaN"):
        w.advance()
    for bad in (math.inf, -math.inf):
        clock.now = bad
        for call in (w.advance, lambda: w.schedule("x", 1)):
            with pytest.raises(ValueError, match=r"clock\(\) must return a finite number"):
                call()
    clock.now = object()
    with pytest.raises(TypeError, match=r"clock\(\) must be a real number, not 'object'"):
        w.advance()
    assert (len(w), w.next_deadline(), w.stats(), w.wheel_time) == before + (0.0,)
    assert h in w


@pytest.mark.parametrize("handle", [-1, 2**64, 2**200, 12345, 7 << 32, True])
def test_unknown_handles_are_refused_quietly(impl, handle):
    w = impl.TimingWheel(clock=FakeClock(0.0))
    w.schedule("x", 1)
    assert w.cancel(handle) is False
    assert (handle in w) is False
    assert len(w) == 1


def test_handles_are_never_reused(impl):
    clock = FakeClock(0.0)
    w = impl.TimingWheel(tick=1.0, clock=clock)
    seen = set()
    for rnd in range(5):
        hs = [w.schedule(i, 1 + i % 7) for i in range(200)]
        assert seen.isdisjoint(hs)
        seen.update(hs)
        for h in hs[::3]:
            assert w.cancel(h)
        clock.now += 10
        w.advance()
        assert len(w) == 0
        assert not any(h in w for h in hs)
        w._check()


def test_drain_returns_everything_in_order(impl):
    w = impl.TimingWheel(tick=1.0, wheel_size=4, clock=FakeClock(0.0))
    order = [(0, "due"), (1e300, "far"), (2.5, "a"), (100.0, "c"), (2.2, "a2"), (40.0, "b")]
    hs = [w.schedule_at(name, d) for d, name in order]
    assert w.drain() == ["due", "a", "a2", "b", "c", "far"]
    assert len(w) == 0 and not any(h in w for h in hs)
    w._check()
    assert w.advance(1e301) == []


def test_docstrings_identical(both):
    c, py = (m.TimingWheel for m in both)
    names = [
        "__doc__",
        "schedule",
        "schedule_at",
        "cancel",
        "advance",
        "drain",
        "next_deadline",
        "stats",
        "tick",
        "wheel_size",
        "wheel_time",
        "_check",
    ]
    for name in names:
        a = c.__doc__ if name == "__doc__" else getattr(c, name).__doc__
        b = py.__doc__ if name == "__doc__" else getattr(py, name).__doc__
        assert inspect.cleandoc(a) == inspect.cleandoc(b), name


def _run_ops(w, clock, ops):
    """Apply a list of operations; return everything observable."""
    log = []
    handles = []
    for op, x in ops:
        if op == "schedule":
            handles.append(w.schedule(len(handles), x))
            log.append(handles[-1])
        elif op == "at":
            handles.append(w.schedule_at(len(handles), clock.now + x))
            log.append(handles[-1])
        elif op == "cancel" and handles:
            log.append(w.cancel(handles[int(x) % len(handles)]))
        elif op == "advance":
            clock.now += x
            log.append(w.advance())
        log.append((len(w), w.next_deadline(), repr(w)))
    log.append(w.drain())
    log.append(w.stats())
    return log


def test_implementations_agree_in_lockstep(both):
    rnd = random.Random(7)
    for tick, size in [(0.001, 256), (0.25, 2), (1.0, 8)]:
        ops = []
        for _ in range(3000):
            r = rnd.random()
            x = rnd.choice([0.0, -1.0, 0.3, 1.0, 40.0, 1e5, YEAR, 1e300]) * rnd.random()
            ops.append(
                ("schedule" if r < 0.3 else "at" if r < 0.5 else "cancel" if r < 0.7 else "advance", x)
            )
        logs = []
        with twin_ids():  # the twins issue the very same handles
            for m in both:
                clock = FakeClock(10.0)
                logs.append(_run_ops(m.TimingWheel(tick=tick, wheel_size=size, clock=clock), clock, ops))
        assert logs[0] == logs[1]


def _tick_of(d: float, tick: float) -> float:
    return math.floor(math.nextafter(d, -math.inf) / tick) + 1


@pytest.mark.parametrize("tick, size", [(0.001, 256), (0.25, 2), (1.0, 4), (3.0, 64)])
def test_stateful_against_model(impl, tick, size):
    delays = st.one_of(
        st.floats(-5, 5, allow_nan=False),
        st.floats(0, 1000, allow_nan=False),
        st.floats(0, 10 * YEAR, allow_nan=False),
        st.sampled_from([0.0, tick, 2 * tick, 1e300]),
    )
    steps = st.one_of(
        st.floats(0, 3 * tick, allow_nan=False),
        st.floats(0, 500, allow_nan=False),
        st.sampled_from([DAY, YEAR, 1e12]),
    )

    class WheelMachine(RuleBasedStateMachine):
        handles = Bundle("handles")

        def __init__(self) -> None:
            super().__init__()
            self.clock = FakeClock(1000.0)
            self.w = impl.TimingWheel(tick=tick, wheel_size=size, clock=self.clock)
            self.time = 1000.0  # the wheel's time
            self.seq = 0
            # handle -> (seq, deadline, due_now)
            self.live: dict[int, tuple[int, float, bool]] = {}
            self.gone: set[int] = set()

        def _add(self, h, d, due):
            assert h not in self.live and h not in self.gone
            self.live[h] = (self.seq, d, due or d <= self.time)
            self.seq += 1
            return h

        @rule(target=handles, delay=delays)
        def schedule(self, delay):
            h = self.w.schedule(self.seq, delay)
            return self._add(h, self.clock.now + delay, delay <= 0)

        @rule(target=handles, offset=delays)
        def schedule_at(self, offset):
            d = self.clock.now + offset
            return self._add(self.w.schedule_at(self.seq, d), d, False)

        @rule(h=consumes(handles))
        def cancel(self, h):
            was = h in self.live
            assert self.w.cancel(h) is was
            if was:
                del self.live[h]
                self.gone.add(h)
            assert self.w.cancel(h) is False

        @rule(h=st.integers(0, 2**64 + 5))
        def cancel_unknown(self, h):
            if h not in self.live:
                assert self.w.cancel(h) is False

        @rule(step=steps)
        def advance(self, step):
            self.clock.now = self.time + step
            self._advance(self.clock.now)

        @rule(back=st.floats(0, 100, allow_nan=False))
        def advance_backwards(self, back):
            self._advance(self.time - back)

        @rule()
        def advance_just_below_next_deadline(self):
            nd = self.w.next_deadline()
            if nd is not None and not any(due for _, _, due in self.live.values()):
                assert self.w.advance(math.nextafter(nd, -math.inf)) == []
                self.time = max(self.time, math.nextafter(nd, -math.inf))
                self.clock.now = self.time

        def _advance(self, now):
            t = max(now, self.time)
            self.time = t
            q = t / tick
            reached = math.inf if q >= 2**62 else math.floor(q)
            due = []
            for h, (seq, d, now_due) in self.live.items():
                if now_due:
                    due.append((0, -math.inf, seq, h))
                else:
                    k = _tick_of(d, tick)
                    if k >= 2**62:
                        if q >= 2**62 and d <= t:
                            due.append((2, d, seq, h))
                    elif k <= reached:
                        due.append((1, k, seq, h))
            due.sort()
            expected = [self.live[h][0] for *_, h in due]
            assert self.w.advance(now) == expected
            for *_, h in due:
                _, d, now_due = self.live.pop(h)
                assert now_due or d <= t  # never early
                self.gone.add(h)
            for _, d, now_due in self.live.values():
                # at most one tick late (a relative hair for rounding)
                assert now_due or not d + tick < t - 1e-9 * abs(t), (d, t)

        @rule(data=st.data())
        def drain(self, data):
            if data.draw(st.integers(0, 9)):
                return  # rarely: it empties the wheel
            out = self.w.drain()
            assert sorted(out) == sorted(s for s, _, _ in self.live.values())
            assert len(out) == len(self.live)
            self.gone.update(self.live)
            self.live.clear()

        @invariant()
        def consistent(self):
            self.w._check()
            assert len(self.w) == len(self.live)
            nd = self.w.next_deadline()
            if not self.live:
                assert nd is None
            elif any(due for _, _, due in self.live.values()):
                assert nd == self.time
            else:
                assert nd > self.time
                first = min(_tick_of(d, tick) for _, d, _ in self.live.values())
                if first < 2**62:
                    assert nd <= first * tick * (1 + 1e-12) + 1e-12
                else:
                    assert nd == min(d for _, d, _ in self.live.values())

    run_state_machine_as_test(WheelMachine, settings=settings(max_examples=60, stateful_step_count=50))


@given(
    d=st.floats(-1e6, 1e9, allow_nan=False),
    now=st.floats(-1e6, 1e9, allow_nan=False),
    tick=st.sampled_from([1e-6, 0.001, 0.1, 1.0, 7.0]),
)
@settings(max_examples=300)
def test_never_early_at_any_float(impl, d, now, tick):
    w = impl.TimingWheel(tick=tick, wheel_size=16, clock=FakeClock(-2e6))
    w.schedule_at("x", d)
    out = w.advance(now)
    if d <= now - tick * (1 + 1e-9) - 1e-9 * abs(now):
        assert out == ["x"]
    elif now < d:
        assert out == []


def test_cancel_from_a_payload_destructor(impl):
    w = impl.TimingWheel(tick=1.0, clock=FakeClock(0.0))
    other = w.schedule("other", 5)

    class Payload:
        def __del__(self):
            w.cancel(other)
            w.schedule("from __del__", 3)

    h = w.schedule(Payload(), 5)
    assert w.cancel(h) is True
    w._check()
    assert len(w) == 1 and other not in w
    assert w.advance(10.0) == ["from __del__"]


def test_items_are_released_when_they_leave(impl):
    class Item:
        pass

    w = impl.TimingWheel(tick=1.0, clock=FakeClock(0.0))
    items = [Item() for _ in range(6)]
    refs = [weakref.ref(x) for x in items]
    hs = [w.schedule(x, 1 + i) for i, x in enumerate(items)]
    del items
    w.cancel(hs[0])
    out = w.advance(3.0)
    assert len(out) == 2
    del out
    w.drain()  # the rest
    gc.collect()
    assert all(r() is None for r in refs)


def test_garbage_collection_with_cycles(impl):
    class Node:
        pass

    w = impl.TimingWheel(clock=FakeClock(0.0))
    n = Node()
    n.wheel = w
    w.schedule(n, 5)
    ref = weakref.ref(w)
    del w, n
    gc.collect()
    assert ref() is None


def test_millions_of_operations_leak_nothing(impl):
    rnd = random.Random(3)
    payload = object()
    clock = FakeClock(0.0)
    w = impl.TimingWheel(tick=0.001, wheel_size=64, clock=clock)
    count = 300_000 if impl.name == "c" else 60_000

    def churn():
        hs = []
        for i in range(count):
            hs.append(w.schedule(payload, rnd.random() * 10))
            if i % 3 == 0:
                w.cancel(hs[rnd.randrange(len(hs))])
            if i % 1000 == 0:
                clock.now += 0.1
                w.advance()
        clock.now += 20
        w.advance()
        assert len(w) == 0

    base = sys.getrefcount(payload)
    grown = traced_growth(churn, 3)  # its warm-up brings the slab to its size
    assert sys.getrefcount(payload) == base
    assert grown < 256 * 1024, grown


def test_schedule_reads_the_default_clock(impl):
    # the compiled core reads time.monotonic's clock without calling it
    w = impl.TimingWheel(tick=1e-6)
    before = time.monotonic()
    w.schedule("x", 10.0)
    after = time.monotonic()
    assert w.advance(before + 10.0 - 1e-3) == []
    assert w.advance(after + 10.0 + 2e-6) == ["x"]


@pytest.mark.parametrize("start, tick", [(-0.25, 1.0), (-1.75, 1.0), (-7.3, 0.5), (-1e6 - 0.5, 1.0)])
def test_a_wheel_made_at_a_negative_time_keeps_a_timer_of_its_first_tick(impl, start, tick):
    # The wheel's origin is floor(clock() / tick): truncated towards zero,
    # it would be the tick a first-tick timer falls in, and it would be lost.
    w = impl.TimingWheel(tick=tick, wheel_size=4, clock=FakeClock(start))
    first_end = math.ceil(start / tick) * tick  # where the wheel's first tick ends
    w.schedule_at("x", (start + first_end) / 2)
    w.schedule_at("y", first_end + tick / 2)
    assert w.next_deadline() == first_end
    assert w.advance(math.nextafter(first_end, -math.inf)) == []
    assert w.advance(first_end) == ["x"]
    assert w.advance(first_end + tick) == ["y"]
    w._check()


def test_a_zero_delay_is_due_at_the_next_advance_on_a_frozen_clock(impl):
    now = [7.0]
    w = impl.TimingWheel(tick=0.01, clock=lambda: now[0])
    w.schedule("zero", 0)
    w.schedule("negative", -3.0)
    w.schedule_at("past", 6.0)
    w.schedule_at("now", 7.0)
    assert sorted(w.advance()) == ["negative", "now", "past", "zero"]
    assert len(w) == 0
    w.schedule("again", 0.0)
    assert w.advance(now=7.0) == ["again"]
