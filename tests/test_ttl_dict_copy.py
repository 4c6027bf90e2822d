"""TTLDict: copy, deepcopy, pickle, signatures and docs, on both implementations."""

from __future__ import annotations

import copy
import importlib
import pickle
import time

import pytest

import dq_core
from clocks import FakeClock
from ttl_helpers import assert_no_leaks, assert_refuses_state, assert_same_signatures_and_docstrings


def _dict(impl, clock=None, **kw):
    d = impl.TTLDict(10, clock=clock or FakeClock(), **kw)
    for i in range(6):
        d.clock.now = float(i)
        d[f"k{i}"] = [i]
    d["k1"] = [1]  # overwritten: a stale ring entry
    del d["k3"]
    return d


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_dict_copies_are_independent(impl, how):
    d = _dict(impl, maxsize=10, on_expire=print)
    c = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda x: pickle.loads(pickle.dumps(x))}[
        how
    ](d)
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
    c.clock = FakeClock(10.5)  # only k0 (set at 0) has expired
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


def _subclass(impl):
    # a subclass pickle can find by name: a global of this module
    name = f"Sub_{impl.name}"
    if name not in globals():

        class Sub(impl.TTLDict):
            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, **kwargs)
                self.extra = {"x": [1]}

        Sub.__name__ = Sub.__qualname__ = name
        Sub.__module__ = __name__
        globals()[name] = Sub
    return globals()[name]


COPIERS = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda x: pickle.loads(pickle.dumps(x))}


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_subclass_copies_keep_the_class_and_its_attributes(impl, how):
    Sub = _subclass(impl)
    d = Sub(10, maxsize=5, clock=FakeClock())
    d["a"] = [1]
    d.me = d
    c = COPIERS[how](d)
    assert type(c) is Sub and c.extra == {"x": [1]} and vars(c).keys() == {"extra", "me"}
    assert (c.extra is d.extra) == (how == "copy")
    assert c.me is (d if how == "copy" else c)
    assert dict(c.items()) == {"a": [1]} and c.maxsize == 5
    c.extra["y"] = 2  # independent, as the mapping is
    c["b"] = 0
    assert "y" not in d.extra or how == "copy"
    assert "b" not in d
    c._check()


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_public_class_copies_keep_attributes_and_self_references(impl, how):
    d = impl.TTLDict(10, clock=FakeClock())
    d["self"] = d
    d.note = "kept"
    c = COPIERS[how](d)
    assert isinstance(c, dq_core.TTLDict if how == "pickle" else impl.TTLDict)
    assert c.note == "kept" and c["self"] is (d if how == "copy" else c)
    c._check()


def test_subclass_states_load_in_the_other_implementation_and_old_states_load(both):
    c, py = both
    for src, dst in ((c, py), (py, c)):
        d = _subclass(src)(10, clock=FakeClock())
        d["a"] = 1
        other = _subclass(dst).__new__(_subclass(dst))
        other.__setstate__(d.__getstate__())
        assert other.extra == {"x": [1]} and other["a"] == 1
        assert other.__getstate__() == d.__getstate__()
        other.__setstate__((1, 5.0, None, time.monotonic, None, [("b", 2, time.monotonic())]))  # version 1
        assert dict(other.items()) == {"b": 2} and other.extra == {"x": [1]}
        other._check()


def test_state_attributes_are_checked(impl):
    d = impl.TTLDict(5, clock=FakeClock())
    d["a"] = 1
    before = d.__getstate__()
    with pytest.raises(TypeError, match="^TTLDict state attributes must be a dict or None$"):
        d.__setstate__((2, 5.0, None, time.monotonic, None, [("x", 1)], []))
    with pytest.raises(TypeError, match="^TTLDict state must be a tuple of 7 items$"):
        d.__setstate__((2, 5.0, None, time.monotonic, None, []))
    assert d.__getstate__() == before
    core = importlib.import_module("dq_core._ttldictcore" if impl.name == "c" else "dq_core._ttldictcore_py")
    bare = core.TTLDictCore(5)
    assert bare.__getstate__()[5] is None
    with pytest.raises(TypeError, match="has no __dict__"):
        bare.__setstate__((2, 5.0, None, time.monotonic, None, {"x": 1}, []))
    bare.__setstate__((2, 5.0, None, time.monotonic, None, {}, []))
    bare.__setstate__((2, 5.0, None, time.monotonic, None, None, []))


def test_dict_with_a_lambda_clock_does_not_pickle(impl):
    d = impl.TTLDict(5, clock=lambda: 0.0)
    d["a"] = 1
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(d)
    assert copy.copy(d)["a"] == 1  # copying shares the clock: fine


@pytest.mark.parametrize(
    "state, exc, msg",
    [
        ((1, 5.0, None, time.monotonic, None), TypeError, "TTLDict state must be a tuple"),
        ((1, 5.0, 0, time.monotonic, None, []), ValueError, "maxsize must be at least 1"),
        ((1, 5.0, None, time.monotonic, 3, []), TypeError, "on_expire must be callable"),
        ((1, 5.0, None, "x", None, []), TypeError, "clock must be callable"),
        ((1, 5.0, 1, time.monotonic, None, [("a", 1, 0.0), ("b", 1, 0.0)]), ValueError, "over maxsize"),
        ((1, 5.0, None, time.monotonic, None, [("a", 1, 0.0), ("a", 2, 0.0)]), ValueError, "twice"),
        ((1, 5.0, None, time.monotonic, None, [("a", 1)]), TypeError, "entry 0 must be"),
        ((1, 5.0, None, time.monotonic, None, [([1], 1, 0.0)]), TypeError, "unhashable"),
        ((1, 5.0, None, time.monotonic, None, [("a", 1, "t")]), TypeError, "created_at of entry 0"),
    ],
)
def test_dict_refuses_bad_states_and_stays_as_it_was(impl, state, exc, msg):
    assert_refuses_state(_dict(impl), state, exc, msg)


def test_generic_at_run_time(impl):
    assert impl.TTLDict[str, int].__origin__ is impl.TTLDict
    core = importlib.import_module("dq_core._ttldictcore" if impl.name == "c" else "dq_core._ttldictcore_py")
    assert core.TTLDictCore[str, int].__origin__ is core.TTLDictCore


def test_same_signatures_and_docstrings(both):
    c, py = both
    assert_same_signatures_and_docstrings(
        c.TTLDict,
        py.TTLDict,
        [
            "expire",
            "next_expiry",
            "clear",
            "items",
            "values",
            "pop",
            "popitem",
            "_check",
            "__getstate__",
            "__setstate__",
            "__reduce__",
            "__copy__",
            "__deepcopy__",
        ],
        ("ttl", "maxsize", "on_expire", "clock"),
    )


def test_no_leaks_through_copies_states_and_refusals(impl):
    def round_trip(value: object) -> None:
        d = impl.TTLDict(5, maxsize=20, clock=FakeClock(), on_expire=lambda k, v: None)
        for i in range(60):
            d.clock.now = i / 10
            d[i] = value
        e = copy.copy(d)
        e.__setstate__(d.__getstate__())
        with pytest.raises(ValueError):
            e.__setstate__((1, 5.0, None, FakeClock(), None, [(1, value, 0.0), (1, value, 0.0)]))
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
