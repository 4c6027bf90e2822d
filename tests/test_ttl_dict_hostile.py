"""TTLDict under hostile user code, on both implementations.

Keys whose __eq__/__hash__ re-enter, finalisers run by the garbage
collector in the middle of a change, a clock that moves on every read, and
bad arguments: nothing crashes, nothing is lost, errors name the argument.
"""

from __future__ import annotations

import gc
import math
import sys

import pytest

from clocks import FakeClock
from helpers import collecting_constantly, recorded
from ttl_helpers import Colliding, Finaliser, PushOnDel, bad_clock_readings, eager_gc  # noqa: F401 (a fixture)

# -- item 1: a lookup whose __eq__ clears the mapping --------------------------


@pytest.mark.parametrize("op", ["getitem", "contains", "delitem", "get", "pop", "setitem"])
def test_eq_clearing_the_mapping_during_a_lookup(impl, op):
    for _ in range(20):  # a freed dict is reused quickly: repeat to hit it
        d = impl.TTLDict(10, clock=FakeClock())
        held = Colliding("held")
        for i in range(8):
            d[f"filler{i}"] = [i] * 50  # values only the dict holds
        d[held] = object()
        held.action = d.clear  # the stored key compares itself to the probe
        probe = Colliding("probe")
        if op == "getitem":
            with pytest.raises(KeyError):
                d[probe]
        elif op == "contains":
            assert probe not in d
        elif op == "delitem":
            with pytest.raises((KeyError, RuntimeError)):
                del d[probe]
        elif op == "get":
            assert d.get(probe) is None
        elif op == "pop":
            with pytest.raises((KeyError, RuntimeError)):
                d.pop(probe)
        else:
            with pytest.raises(RuntimeError, match="TTLDict was re-entered"):
                d[probe] = 1
        d._check()
        d["after"] = 1
        assert d["after"] == 1
        d._check()


def test_eq_clearing_during_a_read_finds_the_entry_as_it_was(impl):
    d = impl.TTLDict(10, clock=FakeClock())
    held = Colliding("same")
    d[held] = "value"
    held.action = d.clear
    assert d[Colliding("same")] == "value"  # the read happened before the clear
    assert len(d) == 0
    d._check()


@pytest.mark.parametrize("how", ["expire", "purge", "len", "set", "maxsize"])
def test_removing_expired_entries_runs_no_key_code(impl, how):
    # An entry leaves by its place on the ring, never by a lookup: keys whose
    # __eq__ and __hash__ raise from now on cannot stop a purge, a set's
    # sweep or an eviction, nor leave an entry half removed.
    clock = FakeClock()
    seen = []
    d = impl.TTLDict(8, clock=clock, on_expire=lambda k, v: seen.append(k.name))
    a, b, c = Colliding("a"), Colliding("b"), Colliding("c")
    d[c] = 0  # first in the probe chain of every Colliding
    d[a] = 1
    d[b] = 2
    clock.now = 4
    d[c] = 3  # c lives on, set again: a hole where it was

    def boom() -> None:
        raise ValueError("boom")

    class Hostile:
        def __hash__(self) -> int:
            raise ValueError("boom")

    clock.now = 10
    for key in (a, b, c):
        key.action = boom  # any comparison would raise
    hash_of = Colliding.__hash__
    Colliding.__hash__ = lambda self: boom()  # type: ignore[method-assign]
    try:
        if how == "expire":
            assert [(k.name, v) for k, v in d.expire()] == [("a", 1), ("b", 2)]
        elif how == "purge":
            assert d.purge() == 2
        elif how == "len":
            assert len(d) == 1
        elif how == "set":
            d["x"] = 9  # its sweep drops a and b
        else:
            d.maxsize = 1
        d._check()
        assert seen == ["a", "b"] and d._held() == 1 + (how == "set")
        with pytest.raises(ValueError, match="boom"):
            d[Hostile()] = 1
        d._check()
    finally:
        Colliding.__hash__ = hash_of  # type: ignore[method-assign]
    assert list(d) == [c] + (["x"] if how == "set" else [])


def test_hash_that_re_enters_on_set_is_refused_and_changes_nothing(impl):
    d = impl.TTLDict(10, clock=FakeClock())
    d["x"] = 1

    class Reentrant:
        def __hash__(self) -> int:
            d["y"] = 2
            return 1

    with pytest.raises(RuntimeError, match="TTLDict was re-entered while it was being changed"):
        d[Reentrant()] = 3
    assert dict(d.items()) == {"x": 1}
    d._check()


# -- item 3: finalisers run by the garbage collector mid-change ----------------


def test_finaliser_setting_keys_while_the_dict_changes(impl, eager_gc):
    clock = FakeClock()
    d = impl.TTLDict(5, maxsize=50, clock=clock)
    errors: list[str] = []
    done = {}

    def reenter(i: int) -> None:
        d[("fin", i)] = i
        done[("fin", i)] = i

    for i in range(2500):  # over two ring segments of 1024
        clock.now = i / 100
        Finaliser(lambda i=i: reenter(i), errors)
        d[i] = i
        if i % 7 == 0:
            Finaliser(lambda: d.expire(), errors)
            d.expire()
    gc.collect()
    d._check()
    assert len(d) <= 50
    assert all(e == "RuntimeError: TTLDict was re-entered while it was being changed" for e in errors)
    d._check()


# -- item 4: views and popitem while entries expire mid-iteration ---------------


def _ticking_dict(impl):
    clock = FakeClock(step=1.0)
    d = impl.TTLDict(15, clock=clock)
    for i in range(10):
        d[i] = i * 10  # set at 1..10, expiring at 16..25
    clock.now = 9
    clock.step = 2.0  # reads now outpace the expiries: entries expire as we read
    return d


def test_views_skip_entries_that_expire_while_iterating(impl):
    d = _ticking_dict(impl)
    items = list(d.items())
    assert items and all(v == k * 10 for k, v in items)
    assert len(items) < 10  # some expired on the way
    d = _ticking_dict(impl)
    values = list(d.values())
    assert values == sorted(values) and len(values) < 10
    d = _ticking_dict(impl)
    assert d != {}
    d = _ticking_dict(impl)
    assert (5, 50) not in d.items() or True  # membership reads without KeyError
    d._check()


def test_popitem_and_pop_never_raise_for_an_entry_expiring_meanwhile(impl):
    d = _ticking_dict(impl)
    got = []
    while True:
        try:
            got.append(d.popitem())
        except KeyError as exc:
            assert "empty" in str(exc)
            break
    assert got and all(v == k * 10 for k, v in got)
    d._check()
    d = _ticking_dict(impl)
    for k in range(10):
        assert d.pop(k, None) in (None, k * 10)
    d._check()


# -- item 5: the number rules, once for both -----------------------------------


@pytest.mark.parametrize(
    "now, exc, msg",
    [
        (math.nan, ValueError, "now must not be NaN"),
        (2**53 + 1, OverflowError, "now must be an integer within"),
        ("x", TypeError, "now must be a real number, not 'str'"),
    ],
)
def test_ttldict_expire_now_follows_the_number_rules(impl, now, exc, msg):
    seen = []
    d = impl.TTLDict(5, clock=FakeClock(), on_expire=lambda k, v: seen.append(k))
    d["a"] = 1
    with pytest.raises(exc, match=msg):
        d.expire(now=now)
    assert seen == [] and d["a"] == 1 and d._held() == 1
    assert d.expire(now=2**53) == [("a", 1)]


def test_infinite_ttl_from_minus_infinity_never_expires(impl):
    d = impl.TTLDict(math.inf, clock=FakeClock(-math.inf))
    d["a"] = 1
    d.clock = FakeClock(math.inf)
    assert d["a"] == 1 and "a" in d and d.expire() == []
    d._check()


# -- item 6: setters and arguments ---------------------------------------------


def test_maxsize_setter_validates_as_the_constructor(impl):
    d = impl.TTLDict(5, maxsize=2, clock=FakeClock())
    for bad, exc, msg in [
        (0, ValueError, "^maxsize must be at least 1 or None, got 0$"),
        (-1, ValueError, "^maxsize must be at least 1 or None, got -1$"),
        (-(2**70), ValueError, rf"^maxsize must be at least 1 or None, got {-(2**70)}$"),
        ("3", TypeError, "^maxsize must be an int, not 'str'$"),
    ]:
        with pytest.raises(exc, match=msg):
            impl.TTLDict(5, maxsize=bad)
        with pytest.raises(exc, match=msg):
            d.maxsize = bad
        assert d.maxsize == 2
    d["a"] = 1
    d["b"] = 2
    d.maxsize = 1  # evicts "a" at once
    assert dict(d.items()) == {"b": 2}
    d["c"] = 3
    assert dict(d.items()) == {"c": 3}
    d.maxsize = None
    for k in "xyz":
        d[k] = 0
    assert len(d) == 4
    d._check()


def test_on_expire_must_be_callable(impl):
    with pytest.raises(TypeError, match="on_expire must be callable or None, not 'int'"):
        impl.TTLDict(5, on_expire=5)
    d = impl.TTLDict(5, clock=FakeClock())
    with pytest.raises(TypeError, match="on_expire must be callable or None, not 'int'"):
        d.on_expire = 5
    assert d.on_expire is None
    d["a"] = 1
    assert len(d) == 1


def test_clock_must_be_callable(impl):
    with pytest.raises(TypeError, match="clock must be callable, not 'int'"):
        impl.TTLDict(5, clock=5)
    clock = FakeClock()
    d = impl.TTLDict(5, clock=clock)
    with pytest.raises(TypeError, match="clock must be callable, not 'int'"):
        d.clock = 5
    assert d.clock is clock


@bad_clock_readings
def test_a_bad_clock_reading_names_the_clock(impl, reading, exc, msg):
    clock = FakeClock()
    d = impl.TTLDict(5, clock=clock)
    d["a"] = 1
    clock.now = reading
    for call in (
        lambda: d.__setitem__("b", 2),
        lambda: d["a"],
        lambda: "a" in d,
        d.expire,
        lambda: len(d),
        lambda: d.__delitem__("a"),
    ):
        with pytest.raises(exc, match=msg):
            call()
    clock.now = 1.0
    assert dict(d.items()) == {"a": 1}
    d._check()


def test_ttl_setter_applies_to_held_entries_and_validates(impl):
    clock = FakeClock()
    d = impl.TTLDict(100, clock=clock)
    d["a"] = 1
    clock.now = 20
    with pytest.raises(ValueError, match="ttl must be non-negative"):
        d.ttl = -1
    assert d.ttl == 100.0 and d["a"] == 1
    d.ttl = 10
    assert "a" not in d and d.expire() == [("a", 1)]
    d._check()


def test_on_expire_error_propagates_after_the_mapping_is_consistent_under_re_entry(impl):
    clock = FakeClock()
    d = impl.TTLDict(5, maxsize=3, clock=clock)
    calls = []

    def callback(k, v):
        calls.append(k)
        if isinstance(k, str):
            d[("again", k)] = v  # re-entering from on_expire is allowed: the change is over
        d._check()
        raise LookupError(k)

    d.on_expire = callback
    for k in "abc":
        d[k] = 0
    with pytest.raises(LookupError):
        d["d"] = 0  # evicts "a"
    assert calls[0] == "a" and len(d) == 3
    d._check()
    clock.now = 100
    with pytest.raises(LookupError):
        d.expire()
    d._check()


# -- the same class of bug: user code run while several fields change -----------


class Num:
    """A number whose __float__ first runs ``action``."""

    def __init__(self, value: float, action) -> None:
        self.value = value
        self.action = action

    def __float__(self) -> float:
        self.action()
        return self.value


def test_ttl_setter_whose_float_clears_the_dict(impl):
    for _ in range(20):
        d = impl.TTLDict(10, clock=FakeClock())
        for j in range(50):
            d[j] = [j]
        d.ttl = Num(5.0, d.clear)
        assert d.ttl == 5.0
        d._check()
        d["a"] = 1
        d.clock.now = 5.0
        assert "a" not in d


@pytest.mark.parametrize("how", ["setstate", "init", "clear"])
def test_old_keys_are_released_after_the_dict_is_replaced(impl, how):
    d = impl.TTLDict(5, clock=FakeClock())
    log: list[str] = []
    d[PushOnDel(d, log)] = 1
    if how == "setstate":
        d.__setstate__(impl.TTLDict(7, clock=FakeClock()).__getstate__())
    elif how == "init":
        d.__init__(7, clock=FakeClock())
    else:
        d.ttl = 7
        d.clear()
    assert log == ["done"]
    d._check()
    assert dict(d.items()) == {"from __del__": 0} and d.ttl == 7.0
    d._check()


@pytest.mark.parametrize("read", ["__getstate__", "_check"])
def test_set_from_a_collection_while_the_mapping_is_read_is_refused(impl, read):
    # as the ring's: reading allocates, and a collection halfway through
    # used to change the mapping under the read
    d = impl.TTLDict(10, clock=FakeClock())
    for i in range(50):
        d[i] = i
    outcomes: list[str] = []

    set_one = recorded(lambda: d.__setitem__(("gc", len(outcomes)), 0), "set", outcomes)
    with collecting_constantly(set_one):
        if read == "__getstate__":
            state = d.__getstate__()
        else:
            d._check()
            state = d.__getstate__()
    assert [e[0] for e in state[-1]][:50] == list(range(50))
    d._check()
    assert len(d) == 50 + outcomes.count("set")
    if impl.name == "py" or sys.version_info < (3, 12):
        # a collection runs inside the read (from 3.12 a compiled read has
        # none: the collector waits for the interpreter's next bytecode)
        assert "TTLDict was re-entered while it was being changed" in outcomes


@pytest.mark.parametrize("op", ["set", "get", "in", "del", "len", "expire", "purge", "popitem"])
def test_a_clock_replacing_itself_while_it_is_read(impl, op):
    # the mapping's only reference to the clock goes while the clock runs
    d = impl.TTLDict(10, clock=lambda: 0.0)
    d["a"] = 1
    freed = []

    class SelfReplacing:
        def __call__(self) -> float:
            d.clock = lambda: 2.0
            self.junk = [0] * 100  # written into memory freed too early, if it were
            return 1.0

        def __del__(self) -> None:
            freed.append(True)

    d.clock = SelfReplacing()
    calls = {
        "set": lambda: d.__setitem__("b", 2),
        "get": lambda: d.get("a"),
        "in": lambda: "a" in d,
        "del": lambda: d.__delitem__("a"),
        "len": lambda: len(d),
        "expire": d.expire,
        "purge": d.purge,
        "popitem": d.popitem,
    }
    calls[op]()
    assert freed == [True] and d.clock() == 2.0
    d._check()
