"""Differential fuzz: the compiled and the pure TimingWheel in lockstep.

Every step runs on both wheels; results, exception types and messages, the
pickled state and ``_check()`` must agree after each one.  The operations
include hostile user code: payloads whose ``__del__`` re-enters the wheel,
garbage cycles whose finalisers run in ``gc.collect()``, numbers whose
``__float__`` raises or re-enters, and bad clock readings.
"""

from __future__ import annotations

import copy
import gc
import math
import pickle

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from clocks import FakeClock
from helpers import twin_ids


class Side:
    """One implementation's wheel, clock and log of what hostile code saw."""

    def __init__(self, m, tick, size) -> None:
        self.clock = FakeClock(1000.0)
        self.w = m.TimingWheel(tick=tick, wheel_size=size, clock=self.clock)
        self.m = m
        self.log: list[object] = []

    def act(self, op: str, arg: float) -> None:
        """What hostile code does to the wheel; outcomes go to the log."""
        try:
            if op == "schedule":
                self.log.append(self.w.schedule(("hostile", arg), arg))
            elif op == "cancel":
                self.log.append(self.w.cancel(int(arg)))
            elif op == "advance":
                self.log.append(self.w.advance(self.w.wheel_time + arg))
            else:
                self.log.append(self.w.next_deadline())
        except Exception as exc:  # noqa: BLE001 -- compared across implementations
            self.log.append((type(exc), str(exc)))


class Payload:
    """An item whose __del__ re-enters the wheel that held it."""

    def __init__(self, side: Side, tag: int, op: str, arg: float) -> None:
        self.side, self.tag, self.op, self.arg = side, tag, op, arg

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Payload) and other.tag == self.tag

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Payload({self.tag})"

    def __del__(self) -> None:
        self.side.act(self.op, self.arg)


class Cycle:
    """Garbage in a cycle: its finaliser runs in gc.collect()."""

    def __init__(self, side: Side, op: str, arg: float) -> None:
        self.side, self.op, self.arg, self.me = side, op, arg, self

    def __del__(self) -> None:
        self.side.act(self.op, self.arg)


class BadFloat:
    def __float__(self) -> float:
        raise ArithmeticError("no float today")


class Reenter:
    """A number whose __float__ schedules on the wheel first."""

    def __init__(self, side: Side, value: float) -> None:
        self.side, self.value = side, value

    def __float__(self) -> float:
        self.side.act("schedule", 1.0)
        return self.value


ops = st.sampled_from(["schedule", "cancel", "advance", "next_deadline"])
plain = st.one_of(
    st.floats(-5, 5),
    st.floats(0, 1000),
    st.floats(0, 1e10),
    st.sampled_from(
        [
            0,
            1,
            2**53,
            2**53 + 1,
            -(2**60),
            2**1000,
            True,
            1e300,
            -1e300,
            math.inf,
            -math.inf,
            math.nan,
            5e-324,
        ]
    ),
)
specs = st.one_of(
    plain,
    plain,
    plain,
    st.sampled_from(["soon", None, 1j, BadFloat]),
    st.tuples(st.just(Reenter), st.floats(-5, 100)),
)


def materialize(spec: object, side: Side) -> object:
    if spec is BadFloat:
        return BadFloat()
    if isinstance(spec, tuple):
        return Reenter(side, spec[1])
    return spec


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 -- compared across implementations
        return ("raised", type(exc), str(exc))


def state_of(w) -> object:
    s = list(outcome(w.__getstate__))
    if s[0] == "ok":
        s[1] = s[1][:3] + s[1][4:]  # without the clock
    return s


class Lockstep(RuleBasedStateMachine):
    def __init__(self, both, tick, size) -> None:
        super().__init__()
        # young garbage only: a full collection per example cost seconds of
        # CPU late in the suite (a large heap), and the test timed out on a
        # loaded machine; older garbage holds nothing of this example's
        gc.collect(0)
        gc.disable()  # finalisers run where the test says, alike on both sides
        self.sides = [Side(m, tick, size) for m in both]
        self.handles: list[int] = []
        self.tags = 0

    def teardown(self) -> None:
        for s in self.sides:
            s.w.drain()
        gc.collect(0)  # the cycles this example made (all young: the collector was off)
        gc.enable()

    def each(self, fn):
        """fn(side) on both sides; the outcomes must agree."""
        got = [outcome(lambda s=s: fn(s)) for s in self.sides]
        assert got[0] == got[1], got
        return got[0]

    @rule(spec=specs, at=st.booleans(), hostile=st.none() | st.tuples(ops, st.floats(-3, 30)))
    def schedule(self, spec, at, hostile):
        self.tags += 1
        tag = self.tags

        def go(s: Side):
            item = tag if hostile is None else Payload(s, tag, *hostile)
            x = materialize(spec, s)
            return s.w.schedule_at(item, x) if at else s.w.schedule(item, x)

        r = self.each(go)
        if r[0] == "ok":
            self.handles.append(r[1])

    @rule(data=st.data())
    def cancel(self, data):
        h = data.draw(
            st.sampled_from(self.handles)
            if self.handles and data.draw(st.booleans())
            else st.one_of(st.integers(-2, 2**65), st.sampled_from(["1", 1.0, None]))
        )
        self.each(lambda s: s.w.cancel(h))

    @rule(
        step=st.one_of(st.floats(0, 3), st.floats(0, 500), st.sampled_from([86400.0, 1e9])),
        explicit=st.booleans(),
    )
    def advance(self, step, explicit):
        for s in self.sides:
            s.clock.now = s.w.wheel_time + step
        self.each(lambda s: s.w.advance(s.clock.now if explicit else None))

    @rule(spec=specs)
    def advance_to(self, spec):
        self.each(lambda s: s.w.advance(materialize(spec, s)))

    @rule(
        reading=st.sampled_from([math.nan, math.inf, "now", None, 2**60]),
        what=st.sampled_from(["schedule", "advance"]),
    )
    def bad_clock(self, reading, what):
        saved = self.sides[0].clock.now
        for s in self.sides:
            s.clock.now = reading
        self.each(lambda s: s.w.schedule("x", 1) if what == "schedule" else s.w.advance())
        for s in self.sides:
            s.clock.now = saved

    @rule()
    def next_deadline(self):
        self.each(lambda s: s.w.next_deadline())

    @precondition(lambda self: len(self.handles) < 60)
    @rule(data=st.data())
    def drain(self, data):
        if data.draw(st.integers(0, 4)) == 0:
            self.each(lambda s: s.w.drain())

    @rule(how=st.sampled_from(["copy", "deepcopy", "pickle", "cross"]))
    def copy_roundtrip(self, how):
        if any(isinstance(e[3], Payload) for s in self.sides for e in s.w.__getstate__()[10]):
            return  # hostile payloads belong to one wheel
        states = [s.w.__getstate__() for s in self.sides]
        for i, s in enumerate(self.sides):
            if how == "copy":
                s.w = copy.copy(s.w)
            elif how == "deepcopy":
                s.w = copy.deepcopy(s.w)
                s.clock = s.w.__getstate__()[3]
            else:
                state = states[1 - i] if how == "cross" else pickle.loads(pickle.dumps(states[i]))
                w = s.m.TimingWheel.__new__(s.m.TimingWheel)
                w.__setstate__(state)
                s.w, s.clock = w, state[3]

    @rule(op=ops, arg=st.floats(-3, 30))
    def collect_a_cycle(self, op, arg):
        for s in self.sides:
            Cycle(s, op, arg)
        gc.collect(0)  # the collector is off: every cycle made since is young

    @invariant()
    def agree(self):
        for s in self.sides:
            s.w._check()
        c, py = self.sides
        assert c.log == py.log
        assert len(c.w) == len(py.w)
        assert c.w.wheel_time == py.w.wheel_time
        assert state_of(c.w) == state_of(py.w)
        assert c.w.stats() == py.w.stats()
        assert repr(c.w) == repr(py.w)


def test_compiled_and_pure_agree_in_lockstep(both):
    gc.collect()  # once: what earlier tests left finalises before the examples
    for tick, size in [(0.25, 2), (1.0, 16), (1e-3, 256)]:
        machine = type(
            "Machine",
            (Lockstep,),
            {
                "__init__": lambda self, t=tick, z=size: Lockstep.__init__(self, both, t, z),
            },
        )
        with twin_ids():  # the twins issue the very same handles
            run_state_machine_as_test(machine, settings=settings(max_examples=30, stateful_step_count=35))
