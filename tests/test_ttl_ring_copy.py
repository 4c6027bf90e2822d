"""TTLRing: copy, deepcopy, pickle, signatures and docs, on both implementations."""

from __future__ import annotations

import copy
import pickle
import time

import pytest

import dq_core
from clocks import FakeClock
from ttl_helpers import assert_no_leaks, assert_refuses_state, assert_same_signatures_and_docstrings


def _ring(impl, n=10, size=3):
    r = impl.TTLRing(5, segment_size=size, clock=FakeClock())
    for i in range(n):
        r.push(f"k{i}", created_at=float(i))
    r.expire(now=6.5)  # head moved into the first live segment
    return r


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_ring_copies_are_independent(impl, how):
    r = _ring(impl)
    if how == "copy":
        c = copy.copy(r)
    elif how == "deepcopy":
        c = copy.deepcopy(r)
    else:
        c = pickle.loads(pickle.dumps(r))
    c._check()
    assert len(c) == len(r) and c.next_expiry() == r.next_expiry() and c.ttl == r.ttl
    assert c.stats()["pushed"] == r.stats()["pushed"]
    assert c.stats()["expired"] == r.stats()["expired"]
    assert r.expire(now=100) == [f"k{i}" for i in range(2, 10)]  # drain the original...
    r._check()
    c._check()
    assert c.expire(now=11) == ["k2", "k3", "k4", "k5", "k6"]  # ...the copy is untouched
    c.push("new", 20.0)
    assert c.expire(now=100) == ["k7", "k8", "k9", "new"] and len(r) == 0
    r.push("r", 0.0)
    assert len(c) == 0 and len(r) == 1
    c._check()
    r._check()


def test_empty_and_drained_rings_copy(impl):
    r = impl.TTLRing(1, segment_size=2)
    assert copy.copy(r).expire(10) == []
    r.push("a", 0.0)
    r.push("b", 0.0)
    r.expire(10)  # drained at a segment boundary
    for c in (copy.copy(r), copy.deepcopy(r), pickle.loads(pickle.dumps(r))):
        c._check()
        c.push("c", 0.0)
        assert c.expire(10) == ["c"]
        c._check()


def test_ring_pickles_load_in_the_other_implementation(both):
    c, py = both
    for src, dst in ((c, py), (py, c)):
        r = _ring(src)
        other = dst.TTLRing.__new__(dst.TTLRing)
        other.__setstate__(r.__getstate__())
        other._check()
        assert other.__getstate__() == r.__getstate__()
        assert other.expire(now=100) == r.expire(now=100)
        loaded = pickle.loads(pickle.dumps(_ring(src)))
        assert type(loaded) is dq_core.TTLRing
        loaded._check()


@pytest.mark.parametrize(
    "state, exc, msg",
    [
        ("nope", TypeError, "TTLRing state must be a tuple"),
        ((2, 1.0, 2, time.monotonic, 0, 0, 0, []), ValueError, "unsupported TTLRing state version"),
        ((1, -1.0, 2, time.monotonic, 0, 0, 0, []), ValueError, "ttl must be non-negative"),
        ((1, 1.0, 0, time.monotonic, 0, 0, 0, []), ValueError, "segment_size must be at least 1"),
        ((1, 1.0, 2**20 + 1, time.monotonic, 0, 0, 0, []), ValueError, "^segment_size must be at most"),
        ((1, 1.0, 10**400, time.monotonic, 0, 0, 0, []), ValueError, "^segment_size must be at most"),
        ((1, 1.0, 2, 5, 0, 0, 0, []), TypeError, "clock must be callable"),
        ((1, 1.0, 2, time.monotonic, 1, 0, 2, [("a", 0.0)]), ValueError, "head must be below"),
        ((1, 1.0, 2, time.monotonic, 2, 0, 0, [("a", 0.0)]), ValueError, "counters do not match"),
        ((1, 1.0, 2, time.monotonic, 1, 0, 0, [("a",)]), TypeError, "entry 0 must be"),
        ((1, 1.0, 2, time.monotonic, 1, 0, 0, [("a", "x")]), TypeError, "created_at of entry 0"),
        ((1, 1.0, 2, time.monotonic, 1, 0, 0, [("a", float("nan"))]), ValueError, "must not be NaN"),
        ((1, 1.0, 2, time.monotonic, 1, 0, 0, ("a", 0.0)), TypeError, "entries must be a list"),
        ((1, 1.0, 2, time.monotonic, 2**64, 2**64 - 1, 0, [("a", 0.0)]), ValueError, "counters"),
    ],
)
def test_ring_refuses_bad_states_and_stays_as_it_was(impl, state, exc, msg):
    assert_refuses_state(_ring(impl), state, exc, msg)


# -- item 7: run-time generics, signatures, docstrings ---------------------------


def test_generic_at_run_time(impl):
    assert impl.TTLRing[str].__origin__ is impl.TTLRing


def test_same_signatures_and_docstrings(both):
    c, py = both
    assert_same_signatures_and_docstrings(
        c.TTLRing,
        py.TTLRing,
        [
            "push",
            "expire",
            "popleft",
            "next_expiry",
            "stats",
            "_check",
            "__getstate__",
            "__setstate__",
            "__reduce__",
            "__copy__",
            "__deepcopy__",
        ],
        ("ttl",),
    )


def test_no_leaks_through_copies_states_and_refusals(impl):
    def round_trip(value: object) -> None:
        r = impl.TTLRing(1, segment_size=4, clock=FakeClock())
        for i in range(50):
            r.push(value, float(i))
        c = copy.copy(r)
        c.__setstate__(r.__getstate__())
        with pytest.raises(ValueError):
            c.__setstate__((1, 1.0, 4, FakeClock(), 99, 0, 0, [(value, 0.0)]))
        assert len(c.expire(25)) == 25 and len(r.expire(100)) == 50

    assert_no_leaks(round_trip)
