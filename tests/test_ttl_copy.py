"""TTLRing and TTLDict: copy, deepcopy, pickle, signatures and docs, on both implementations."""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import time

import pytest

import dq_core


class Clock:
    """A picklable fake clock."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _ring(impl, n=10, size=3):
    r = impl.TTLRing(5, segment_size=size, clock=Clock())
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


@pytest.mark.parametrize("state, exc, msg", [
    ("nope", TypeError, "TTLRing state must be a tuple"),
    ((2, 1.0, 2, time.monotonic, 0, 0, 0, []), ValueError, "unsupported TTLRing state version"),
    ((1, -1.0, 2, time.monotonic, 0, 0, 0, []), ValueError, "ttl must be non-negative"),
    ((1, 1.0, 0, time.monotonic, 0, 0, 0, []), ValueError, "segment_size must be at least 1"),
    ((1, 1.0, 2, 5, 0, 0, 0, []), TypeError, "clock must be callable"),
    ((1, 1.0, 2, time.monotonic, 1, 0, 2, [("a", 0.0)]), ValueError, "head must be below"),
    ((1, 1.0, 2, time.monotonic, 2, 0, 0, [("a", 0.0)]), ValueError, "counters do not match"),
    ((1, 1.0, 2, time.monotonic, 1, 0, 0, [("a",)]), TypeError, "entry 0 must be"),
    ((1, 1.0, 2, time.monotonic, 1, 0, 0, [("a", "x")]), TypeError, "created_at of entry 0"),
    ((1, 1.0, 2, time.monotonic, 1, 0, 0, [("a", float("nan"))]), ValueError, "must not be NaN"),
    ((1, 1.0, 2, time.monotonic, 1, 0, 0, ("a", 0.0)), TypeError, "entries must be a list"),
    ((1, 1.0, 2, time.monotonic, 2**64, 2**64 - 1, 0, [("a", 0.0)]), ValueError, "counters"),
])
def test_ring_refuses_bad_states_and_stays_as_it_was(impl, state, exc, msg):
    r = _ring(impl)
    before = r.__getstate__()
    with pytest.raises(exc, match=msg):
        r.__setstate__(state)
    assert r.__getstate__() == before
    r._check()


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


# -- item 7: run-time generics, signatures, docstrings ---------------------------


def test_generic_at_run_time(impl):
    assert impl.TTLRing[str].__origin__ is impl.TTLRing
    assert impl.TTLDict[str, int].__origin__ is impl.TTLDict
    core = importlib.import_module("dq_core._ttlmap" if impl.name == "c" else "dq_core._ttlmap_py")
    assert core.TTLDictCore[str, int].__origin__ is core.TTLDictCore


def _params(obj):
    # names, kinds and defaults; the compiled self is positional-only and
    # carries no annotations
    return [(p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values()
            if p.name != "self"]


PUBLIC = {
    "TTLRing": ["push", "expire", "popleft", "next_expiry", "stats", "_check",
                "__getstate__", "__setstate__", "__reduce__", "__copy__", "__deepcopy__"],
    "TTLDict": ["expire", "next_expiry", "clear", "items", "values", "pop", "popitem",
                "_check", "__getstate__", "__setstate__", "__reduce__", "__copy__",
                "__deepcopy__"],
}


def test_same_signatures_and_docstrings(both):
    c, py = both
    for cls, names in PUBLIC.items():
        a, b = getattr(c, cls), getattr(py, cls)
        assert _params(a) == _params(b), cls
        assert inspect.cleandoc(a.__doc__) == inspect.cleandoc(b.__doc__), cls
        for name in names:
            ma, mb = getattr(a, name), getattr(b, name)
            assert _params(ma) == _params(mb), (cls, name)
            assert (ma.__doc__ is None) == (mb.__doc__ is None), (cls, name)
            if ma.__doc__:
                assert inspect.cleandoc(ma.__doc__) == inspect.cleandoc(mb.__doc__), (cls, name)
        for prop in ("ttl",) + (("maxsize", "on_expire", "clock") if cls == "TTLDict" else ()):
            da, db = getattr(a, prop).__doc__, getattr(b, prop).__doc__
            assert inspect.cleandoc(da) == inspect.cleandoc(db), (cls, prop)


def test_no_leaks_through_copies_states_and_refusals(impl):
    import gc
    import sys
    import tracemalloc

    value = object()
    base = sys.getrefcount(value)

    def round_trip() -> None:
        r = impl.TTLRing(1, segment_size=4, clock=Clock())
        for i in range(50):
            r.push(value, float(i))
        c = copy.copy(r)
        c.__setstate__(r.__getstate__())
        with pytest.raises(ValueError):
            c.__setstate__((1, 1.0, 4, Clock(), 99, 0, 0, [(value, 0.0)]))
        assert len(c.expire(25)) == 25 and len(r.expire(100)) == 50
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

    round_trip()
    gc.collect()
    tracemalloc.start()
    try:
        first = tracemalloc.get_traced_memory()[0]
        for _ in range(30):
            round_trip()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - first
    finally:
        tracemalloc.stop()
    assert sys.getrefcount(value) == base
    assert grown < 64 * 1024, grown


class Reentering:
    """A key whose hash re-enters its mapping: the set is refused."""

    def __init__(self, d) -> None:
        self.d = d

    def __hash__(self) -> int:
        self.d["other"] = 0
        return 0
