"""TTLDict: copy, deepcopy, pickle, signatures and docs, on both implementations."""

from __future__ import annotations

import copy
import importlib
import pickle
import time

import pytest

import dq_core

from ttl_helpers import Clock, assert_no_leaks, assert_same_signatures_and_docstrings


def _dict(impl, clock=None, **kw):
    d = impl.TTLDict(10, clock=clock or Clock(), **kw)
    for i in range(6):
        d.clock.now = float(i)
        d[f"k{i}"] = [i]
    d["k1"] = [1]  # overwritten: a stale ring entry
    del d["k3"]
    return d


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_dict_copies_are_independent(impl, how):
    d = _dict(impl, maxsize=10, on_expire=print)
    c = {"copy": copy.copy, "deepcopy": copy.deepcopy,
         "pickle": lambda x: pickle.loads(pickle.dumps(x))}[how](d)
    c._check()
    assert dict(c.items()) == dict(d.items())
    assert c.maxsize == 10 and c.ttl == 10.0 and c.on_expire is print
    assert (c.clock is d.clock) == (how == "copy")
    assert (c["k0"] is d["k0"]) == (how == "copy")
    c["new"] = 1
    del c["k0"]
    assert "new" not in d and "k0" in d
    d.clock.now = 100
    d.on_expire = None
    assert len(d.expire()) == 5
    c.on_expire = None
    c.clock = Clock(10.5)  # only k0 (set at 0) has expired
    assert sorted(c) == ["k1", "k2", "k4", "k5", "new"]
    c._check()
    d._check()


def test_dict_pickles_load_in_the_other_implementation(both):
    c, py = both
    for src, dst in ((c, py), (py, c)):
        d = _dict(src, maxsize=7)
        other = dst.TTLDict.__new__(dst.TTLDict)
        other.__setstate__(d.__getstate__())
        other._check()
        assert other.__getstate__() == d.__getstate__()
        d.clock.now = other.clock.now = 12.5
        assert other.expire() == d.expire()
        loaded = pickle.loads(pickle.dumps(_dict(src)))
        assert isinstance(loaded, dq_core.TTLDict)
        loaded._check()


def test_dict_with_a_lambda_clock_does_not_pickle(impl):
    d = impl.TTLDict(5, clock=lambda: 0.0)
    d["a"] = 1
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(d)
    assert copy.copy(d)["a"] == 1  # copying shares the clock: fine


@pytest.mark.parametrize("state, exc, msg", [
    ((1, 5.0, None, time.monotonic, None), TypeError, "TTLDict state must be a tuple"),
    ((1, 5.0, 0, time.monotonic, None, []), ValueError, "maxsize must be at least 1"),
    ((1, 5.0, None, time.monotonic, 3, []), TypeError, "on_expire must be callable"),
    ((1, 5.0, None, "x", None, []), TypeError, "clock must be callable"),
    ((1, 5.0, 1, time.monotonic, None, [("a", 1, 0.0), ("b", 1, 0.0)]), ValueError, "over maxsize"),
    ((1, 5.0, None, time.monotonic, None, [("a", 1, 0.0), ("a", 2, 0.0)]), ValueError, "twice"),
    ((1, 5.0, None, time.monotonic, None, [("a", 1)]), TypeError, "entry 0 must be"),
    ((1, 5.0, None, time.monotonic, None, [([1], 1, 0.0)]), TypeError, "unhashable"),
    ((1, 5.0, None, time.monotonic, None, [("a", 1, "t")]), TypeError, "created_at of entry 0"),
])
def test_dict_refuses_bad_states_and_stays_as_it_was(impl, state, exc, msg):
    d = _dict(impl)
    before = d.__getstate__()
    with pytest.raises(exc, match=msg):
        d.__setstate__(state)
    assert d.__getstate__() == before
    d._check()


def test_generic_at_run_time(impl):
    assert impl.TTLDict[str, int].__origin__ is impl.TTLDict
    core = importlib.import_module("dq_core._ttlmap" if impl.name == "c" else "dq_core._ttlmap_py")
    assert core.TTLDictCore[str, int].__origin__ is core.TTLDictCore


def test_same_signatures_and_docstrings(both):
    c, py = both
    assert_same_signatures_and_docstrings(
        c.TTLDict, py.TTLDict,
        ["expire", "next_expiry", "clear", "items", "values", "pop", "popitem", "_check",
         "__getstate__", "__setstate__", "__reduce__", "__copy__", "__deepcopy__"],
        ("ttl", "maxsize", "on_expire", "clock"))


def test_no_leaks_through_copies_states_and_refusals(impl):
    def round_trip(value: object) -> None:
        d = impl.TTLDict(5, maxsize=20, clock=Clock(), on_expire=lambda k, v: None)
        for i in range(60):
            d.clock.now = i / 10
            d[i] = value
        e = copy.copy(d)
        e.__setstate__(d.__getstate__())
        with pytest.raises(ValueError):
            e.__setstate__((1, 5.0, None, Clock(), None, [(1, value, 0.0), (1, value, 0.0)]))
        assert d.pop(59) is value and d.popitem()[1] is value
        with pytest.raises(RuntimeError):
            d[Reentering(d)] = value
        d.clock.now = 100
        assert len(d.expire()) == 18 and len(e) == 0
        e.clear()

    assert_no_leaks(round_trip)


class Reentering:
    """A key whose hash re-enters its mapping: the set is refused."""

    def __init__(self, d) -> None:
        self.d = d

    def __hash__(self) -> int:
        self.d["other"] = 0
        return 0
