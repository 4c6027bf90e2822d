"""TimingWheel: copy.copy, copy.deepcopy and pickle, within and across implementations."""

from __future__ import annotations

import copy
import math
import pickle
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dq_core
from clocks import FakeClock
from helpers import comparable_state, local_handle, traced_growth


def _filled(m, clock=None):
    clock = clock or FakeClock(10.0)
    w = m.TimingWheel(tick=0.5, wheel_size=4, clock=clock)
    hs = [w.schedule_at(("item", d), d) for d in (12.0, 11.2, 11.2, 40.0, 1e300, 5.0, 900.0)]
    w.cancel(hs[3])
    w.advance(11.0)
    return w, hs


def test_copy_and_deepcopy_are_independent_and_keep_handles(impl):
    w, hs = _filled(impl)
    state = w.__getstate__()
    for c in (copy.copy(w), copy.deepcopy(w)):
        c._check()
        assert type(c) is type(w)
        assert [h in c for h in hs] == [h in w for h in hs]
        assert c.cancel(hs[1]) is True and hs[1] in w  # the original keeps it
        assert c.advance(12.0) == [("item", 11.2), ("item", 12.0)]
        assert w.__getstate__() == state
        c.schedule("new", 1)
        assert len(w) == 5 and c.tick == w.tick and c.wheel_size == w.wheel_size
    assert w.advance(12.0) == [("item", 11.2), ("item", 11.2), ("item", 12.0)]


def test_deepcopy_copies_items_and_cycles_through_the_wheel(impl):
    w = impl.TimingWheel(tick=1.0, clock=FakeClock(0.0))
    box = {"wheel": w}
    h = w.schedule_at(box, 5.0)
    c = copy.deepcopy(w)
    [got] = c.advance(5.0)
    assert got is not box and got["wheel"] is c
    assert h in w


def test_pickle_roundtrip_and_across_implementations(both):
    for src in both:
        for dst in both:
            w, hs = _filled(src)
            state = w.__getstate__()
            other = dst.TimingWheel.__new__(dst.TimingWheel)
            other.__setstate__(state)
            other._check()
            assert other.__getstate__() == state
            assert [h in other for h in hs] == [h in w for h in hs]
            mine, theirs = other.schedule("new", 3), w.schedule("new", 3)
            # the same slot and generation, each under its own container's id
            assert local_handle(mine) == local_handle(theirs) and mine not in w and theirs not in other
            assert other.cancel(hs[0]) and w.cancel(hs[0])
            loaded = pickle.loads(pickle.dumps(w))
            loaded._check()
            assert type(loaded) is dq_core.TimingWheel
            assert loaded.__getstate__() == w.__getstate__()
            # alike but for the ids in the tags: w and other issued "new" each under its own
            gens = [comparable_state(x.__getstate__(), 8, ()) for x in (w, other)]
            assert gens[0] == gens[1]
            assert loaded.advance(1e301) == other.advance(1e301) == w.advance(1e301)


def test_the_clock_is_pickled_with_the_wheel(impl):
    w = impl.TimingWheel(tick=0.01)  # time.monotonic pickles by name
    w.schedule("x", 3600)
    loaded = pickle.loads(pickle.dumps(w))
    assert loaded.__getstate__()[3] is time.monotonic
    assert loaded.next_deadline() == w.next_deadline()
    lambda_clock = impl.TimingWheel(clock=lambda: 0.0)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(lambda_clock)
    assert copy.copy(lambda_clock).next_deadline() is None  # copies share the clock


def _corruptions(state):
    """(what, bad state, exception) for each way a state can be malformed."""
    s = list(state)
    gens, free, live = s[8], s[9], s[10]

    def with_(i, v):
        t = list(s)
        t[i] = v
        return tuple(t)

    def with_live(j, entry):
        ls = list(live)
        ls[j] = entry
        return with_(10, ls)

    far = next(j for j, e in enumerate(live) if e[1] == -2)
    wheel = next(j for j, e in enumerate(live) if e[1] >= 0)
    slot, t, _, item = live[wheel]
    yield "not a tuple", 5, ValueError
    yield "short", tuple(s[:-1]), ValueError
    yield "version", with_(0, 3), ValueError
    yield "version 1 with container ids", with_(0, 1), ValueError
    yield "version type", with_(0, 1.0), ValueError
    yield "clock", with_(3, 5), TypeError
    for i, bad in [
        (1, -0.5),
        (1, math.nan),
        (1, math.inf),
        (1, 1),
        (2, 3),
        (2, 2**17),
        (2, 4.0),
        (4, 2**70),
        (4, "0"),
        (5, -1),
        (5, 2**63),
        (6, math.nan),
        (6, math.inf),
        (6, 1),
        (7, -1),
        (7, 2**32),
        (11, -1),
        (12, 2**64),
        (8, tuple(gens)),
        (9, "free"),
        (10, None),
    ]:
        yield f"field {i} = {bad!r}", with_(i, bad), ValueError
    yield "gen type", with_(8, gens[:-1] + ["x"]), ValueError
    yield "tag too big", with_(8, [1 << 96] * len(gens)), ValueError
    yield "tag negative", with_(8, [-1] * len(gens)), ValueError
    yield "gen below epoch", with_(7, max(g & 0xFFFFFFFF for g in gens) + 1), ValueError
    yield "slot retired", with_(8, [0xFFFFFFFF] + gens[1:]), ValueError
    yield "slot missing", with_(8, gens + [0]), ValueError
    yield "free out of range", with_(9, free + [len(gens)]), ValueError
    yield "free negative", with_(9, [-1]), ValueError
    yield "free twice", with_(9, free + free), ValueError
    yield "live and free", with_(9, free + [slot]), ValueError
    yield "entry length", with_live(wheel, (slot, t, None)), ValueError
    yield "entry type", with_live(wheel, "entry"), ValueError
    yield "slot type", with_live(wheel, (float(slot), t, None, item)), ValueError
    yield "tick type", with_live(wheel, (slot, float(t), None, item)), ValueError
    yield "tick not ahead", with_live(wheel, (slot, s[5], None, item)), ValueError
    yield "tick past the limit", with_live(wheel, (slot, 2**62 - s[4], None, item)), ValueError
    yield "tick unknown marker", with_live(wheel, (slot, -3, None, item)), ValueError
    yield "deadline off the far list", with_live(wheel, (slot, t, 1e300, item)), ValueError
    yield "far without deadline", with_live(far, live[far][:2] + (None, item)), ValueError
    yield "far deadline NaN", with_live(far, live[far][:2] + (math.nan, item)), ValueError
    yield "far deadline near", with_live(far, live[far][:2] + (20.0, item)), ValueError


def test_setstate_refuses_malformed_states_and_leaves_the_wheel_as_it_was(impl):
    w, hs = _filled(impl)
    good = w.__getstate__()
    victim, _ = _filled(impl, FakeClock(3.0))
    before = victim.__getstate__()
    blank = impl.TimingWheel.__new__(impl.TimingWheel)
    for what, bad, exc in _corruptions(good):
        for target in (victim, blank):
            with pytest.raises(exc) as info:
                target.__setstate__(bad)
            assert type(info.value) is exc, what
        assert victim.__getstate__() == before, what
        victim._check()
    victim.__setstate__(good)  # a whole state replaces the wheel
    assert victim.__getstate__() == good


_atoms = st.one_of(
    st.integers(-3, 10),
    st.integers(),
    st.floats(),
    st.none(),
    st.text(max_size=2),
    st.sampled_from([0xFFFFFFFF, 2**62, -(2**61), time.monotonic]),
)


@given(data=st.data())
@settings(max_examples=150)
def test_setstate_of_random_corruptions_never_breaks_the_wheel(both, data):
    w, _ = _filled(both[1])
    good = w.__getstate__()
    s = list(good)
    i = data.draw(st.integers(0, len(s) - 1))
    if i in (8, 9, 10) and s[i] and data.draw(st.booleans()):
        part = list(s[i])
        j = data.draw(st.integers(0, len(part) - 1))
        if i == 10 and data.draw(st.booleans()):
            e = list(part[j])
            e[data.draw(st.integers(0, 3))] = data.draw(_atoms)
            part[j] = tuple(e)
        else:
            part[j] = data.draw(_atoms)
        s[i] = part
    else:
        s[i] = data.draw(_atoms)
    outcomes = []
    for m in both:
        target, _ = _filled(m, FakeClock(3.0))
        before = target.__getstate__()
        try:
            target.__setstate__(tuple(s))
        except (ValueError, TypeError) as exc:
            outcomes.append((type(exc), str(exc)))
            assert target.__getstate__() == before
        else:
            outcomes.append(target.__getstate__())
        target._check()
    assert outcomes[0] == outcomes[1]


def test_copies_and_loads_leak_nothing(impl):

    payload = object()
    clock = FakeClock(0.0)
    w = impl.TimingWheel(tick=0.01, wheel_size=16, clock=clock)

    def churn():
        for r in range(40):
            hs = [w.schedule(payload, (i * 7919 % 1000) / 10) for i in range(100)]
            w.schedule_at(payload, 1e300)
            for h in hs[::3]:
                w.cancel(h)
            for c in (copy.copy(w), copy.deepcopy(w), pickle.loads(pickle.dumps(w, 5))):
                c.drain()
            other = impl.TimingWheel.__new__(impl.TimingWheel)
            other.__setstate__(w.__getstate__())
            w.__setstate__(other.__getstate__())
            with pytest.raises(ValueError):
                w.__setstate__(w.__getstate__()[:5] + (-1,) + w.__getstate__()[6:])
            clock.now += 5
            w.advance()
            w.drain()

    base = sys.getrefcount(payload)
    grown = traced_growth(churn)
    assert sys.getrefcount(payload) == base
    assert grown < 64 * 1024, grown
