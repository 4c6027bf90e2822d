"""TimingWheel: user code that re-enters the wheel, above all GC finalisers.

A finaliser can run inside any allocation (Python <= 3.11) or between any
two bytecodes of the pure twin; one that calls the wheel while it is
changing its lists is refused with RuntimeError, and the wheel stays valid.
"""

from __future__ import annotations

import copy
import gc
import math
import random

import pytest

from clocks import FakeClock
from dq_core._wheelcore_py import REENTERED


class Hostile:
    """Garbage in a cycle whose finaliser calls the wheel."""

    refused = 0
    calls = 0

    def __init__(self, wheel, rnd, handles) -> None:
        self.wheel, self.rnd, self.handles = wheel, rnd, handles
        self.me = self  # a cycle: only the collector frees it

    def __del__(self) -> None:
        w, rnd = self.wheel, self.rnd
        type(self).calls += 1
        try:
            op = rnd.randrange(7)
            if op == 0:
                self.handles.append(w.schedule_at("from __del__", w.wheel_time + rnd.random() * 50))
            elif op == 1 and self.handles:
                # most likely a live one: the latest handles
                w.cancel(self.handles[-1 - rnd.randrange(min(len(self.handles), 5))])
            elif op == 6 and self.handles:
                w.cancel(self.handles[rnd.randrange(len(self.handles))])
            elif op == 2:
                w.advance(w.wheel_time + rnd.random())
            elif op == 3:
                w.next_deadline()
            elif op == 4:
                w.__getstate__()
            else:
                w.drain()
        except RuntimeError as exc:
            assert str(exc) == REENTERED
            type(self).refused += 1


@pytest.fixture
def gc_storm():
    thresholds = gc.get_threshold()
    gc.set_threshold(1, 1, 1)  # collect at nearly every allocation
    Hostile.refused = Hostile.calls = 0
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()


@pytest.mark.parametrize(
    "op", ["schedule", "cancel", "advance", "drain", "next_deadline", "copy", "setstate", "check"]
)
def test_finalisers_that_reenter_during_every_operation(impl, gc_storm, op):
    rnd = random.Random(5)
    clock = FakeClock(100.0)
    w = impl.TimingWheel(tick=0.25, wheel_size=4, clock=clock)
    handles: list[int] = []
    for i in range(1500):
        if len(w) < 40:
            for j in range(20):
                d = rnd.choice([0.0, 0.3, 5.0, 300.0, 1e6, 1e300]) * rnd.random()
                handles.append(w.schedule(j, d))
        for _ in range(rnd.randrange(1, 4)):
            Hostile(w, rnd, handles)  # garbage: a collection soon finalises it
        if op == "schedule":
            handles.append(w.schedule_at(i, clock.now + rnd.random() * 50))
        elif op == "cancel":
            w.cancel(handles[rnd.randrange(len(handles))])
        elif op == "advance":
            clock.now += rnd.random() * 5
            w.advance()
        elif op == "drain":
            w.drain()
        elif op == "next_deadline":
            w.next_deadline()
        elif op == "copy":
            copy.copy(w)._check()
        elif op == "setstate":
            w.__setstate__(copy.copy(w).__getstate__())
        w._check()
    gc.collect()
    w._check()
    assert Hostile.calls > 1000


def test_a_cancelled_payload_reenters_after_the_cancel(impl):
    w = impl.TimingWheel(tick=1.0, clock=FakeClock(0.0))
    log = []

    class Payload:
        def __del__(self):
            w._check()  # the cancel is complete, the slab reset included
            if not len(w):
                log.append(w.schedule("again", 1))
                w.advance(0.5)

    hs = [w.schedule(Payload(), 5) for _ in range(70)]  # enough slots to reset the slab
    for h in hs:
        assert w.cancel(h) is True
        w._check()
    assert len(w) == 1 and len(log) == 1 and log[0] in w
    assert w.stats()["slots"] == 1  # the slab was reset before __del__ ran
    assert w.advance(1.0) == ["again"]


def test_a_payload_dropped_by_setstate_reenters_after_it(impl):
    w = impl.TimingWheel(tick=1.0, clock=FakeClock(0.0))
    other = impl.TimingWheel(tick=1.0, clock=FakeClock(0.0))
    other.schedule("new", 2)
    state = other.__getstate__()
    seen = []

    class Payload:
        def __del__(self):
            seen.append(w.__getstate__()[10])
            w.schedule("from __del__", 3)

    w.schedule(Payload(), 1)
    w.__setstate__(state)
    assert [e[3] for e in seen[0]] == ["new"]
    w._check()
    assert w.advance(5.0) == ["new", "from __del__"]


def test_numbers_whose_conversion_reenters(impl):
    w = impl.TimingWheel(tick=1.0, wheel_size=2, clock=FakeClock(0.0))
    keep = w.schedule("keep", 4)

    class Sneaky:
        def __float__(self):
            w.cancel(keep)
            w.advance(1.0)
            w.schedule("inner", 1)
            return 3.0

    class Raising:
        def __float__(self):
            w.schedule("leak?", 1)
            raise ZeroDivisionError("no")

    h = w.schedule_at("outer", Sneaky())
    w._check()
    assert keep not in w and h in w
    with pytest.raises(ZeroDivisionError):
        w.schedule("x", Raising())
    with pytest.raises(ZeroDivisionError):
        w.advance(Raising())
    w._check()
    # due at once (the wheel is at 1.0) ahead of "outer" at 3.0
    assert w.advance(math.ldexp(1, 20)) == ["inner", "leak?", "leak?", "outer"]


def test_a_clock_that_reenters(impl):
    w = None
    ticks = iter(range(100))

    def clock():
        t = float(next(ticks))
        if t and t < 5:
            w.schedule_at(f"from clock {t}", t)
            w.advance(t - 1)
        return t

    w = impl.TimingWheel(tick=1.0, clock=clock)
    out = []
    for _ in range(4):
        out += w.advance()
        w._check()
    w.schedule("x", 0)
    w._check()
    out += w.drain()
    # every timer the clock scheduled came out once, the last one too
    assert sorted(out) == sorted(["x"] + [f"from clock {float(t)}" for t in range(1, 5)])


class Corrupter:
    """Garbage whose finaliser, ``countdown`` collections later, rewrites a
    state that __setstate__ is reading."""

    def __init__(self, live: list, countdown: int) -> None:
        self.live, self.countdown, self.me = live, countdown, self

    def __del__(self) -> None:
        if self.countdown:
            Corrupter(self.live, self.countdown - 1)  # for the next collection
            return
        for i in range(len(self.live)):
            self.live[i] = [10**6, 5, None, "out of range"]


def test_setstate_builds_what_it_checked(impl, gc_storm):
    outcomes = set()
    for countdown in range(60):
        src = impl.TimingWheel(tick=1.0, wheel_size=2, clock=FakeClock(0.0))
        for i in range(20):
            src.schedule(i, i % 7)
        state = src.__getstate__()
        live = list(state[10])
        state = state[:10] + (live,) + state[11:]
        w = impl.TimingWheel(tick=1.0, clock=FakeClock(0.0))
        Corrupter(live, countdown)  # goes off in some collection inside __setstate__
        try:
            w.__setstate__(state)
        except ValueError:
            outcomes.add("refused")  # it went off before the check
        else:
            outcomes.add("loaded")
            assert sorted(w.drain()) == list(range(20))
        w._check()
        gc.collect()
    # (on 3.12+ the collector runs only between bytecodes: never inside
    # the compiled __setstate__, so it may always load)
    assert "loaded" in outcomes
