"""WheelTTLDict: a TTL per key on the timing wheel, LRU maxsize, on_expire (both implementations)."""

from __future__ import annotations

import copy
import gc
import math
import pickle
import weakref
from collections.abc import MutableMapping

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from clocks import FakeClock


def make(impl, ttl=10.0, **kw):
    clock = FakeClock(0.0)
    return impl.WheelTTLDict(ttl, clock=clock, **kw), clock


def test_is_a_mutable_mapping_generic_and_exported(impl):
    d, _ = make(impl)
    assert isinstance(d, MutableMapping)
    assert impl.WheelTTLDict[str, int].__args__ == (str, int)
    assert impl.WheelTTLDict.__module__ == "dq_core" and impl.WheelTTLDict.__name__ == "WheelTTLDict"
    if (
        impl.name == "py"
    ):  # the pure twin's entries sit on its TimingWheel; the compiled ones on their table's
        assert d._wheel.__class__ is impl.wheelcore.TimingWheel


def test_each_key_lives_its_own_ttl(impl):
    d, clock = make(impl, ttl=10)
    d["default"] = 1
    d.set("short", 2, ttl=1)
    d.set("long", 3, ttl=100)
    d.set("forever", 4, ttl=math.inf)
    assert d.deadline("short") == 1.0 and d.deadline("forever") == math.inf
    clock.now = 0.999
    assert sorted(d) == ["default", "forever", "long", "short"]
    clock.now = 1.0  # a deadline reached is expired: never returned
    assert "short" not in d and d.get("short", "x") == "x"
    with pytest.raises(KeyError):
        d["short"]
    clock.now = 10.0
    assert sorted(d) == ["forever", "long"] and len(d) == 2
    clock.now = 1e9
    assert dict(d) == {"forever": 4}


def test_a_bound_getitem_reads_as_the_subscript_does(impl):
    # time.monotonic: the compiled read's fast path; d.__getitem__ is the
    # compiled class's own one-argument method (own_getitem), d[key] its slot
    d = impl.WheelTTLDict(60.0)
    d["k"] = "v"
    d.set("gone", 1, ttl=0)
    d.set("forever", 2, ttl=math.inf)
    get = d.__getitem__
    assert get("k") == d["k"] == "v" and get("forever") == d["forever"] == 2
    for key in ("gone", "absent"):
        with pytest.raises(KeyError):
            get(key)
        with pytest.raises(KeyError):
            d[key]
    assert d.get("gone", "x") == "x" and "gone" not in d and d.get("k") == "v"
    assert impl.WheelTTLDict.__getitem__.__doc__ == "Return self[key]."
    if impl.name == "c":  # a method of its own, called without an argument tuple
        assert type(vars(impl.WheelTTLDict)["__getitem__"]) is type(dict.__getitem__)

    class Own(impl.WheelTTLDict):  # its own __getitem__ is left alone, by subclassing or own_getitem
        def __getitem__(self, key):
            return ("own", super().__getitem__(key))

    class Plain(impl.WheelTTLDict):
        pass

    assert impl.wheelttlcore.own_getitem(Own) is Own and impl.wheelttlcore.own_getitem(Plain) is Plain
    o, p = Own(60.0), Plain(60.0)
    o["k"] = p["k"] = 1
    assert o["k"] == o.__getitem__("k") == ("own", 1) and p["k"] == p.__getitem__("k") == 1
    with pytest.raises(TypeError, match="cls must be a class extending WheelTTLCore"):
        impl.wheelttlcore.own_getitem(dict)


def test_no_default_ttl_means_no_expiry(impl):
    d = impl.WheelTTLDict(clock=FakeClock(0.0))
    d["k"] = "v"
    assert d.expire(1e6) == [] and d.next_expiry() is None
    assert d.ttl is None and d["k"] == "v" and d._held() == 1


def test_an_expired_value_is_never_returned_before_the_wheel_gives_it_back(impl):
    # reads compare the deadline with the clock: a coarse tick changes nothing
    d, clock = make(impl, ttl=0.25, tick=1.0)
    d["k"] = "v"
    clock.now = 0.25
    assert "k" not in d and d.get("k") is None and list(d.items()) == [] and list(d.values()) == []
    with pytest.raises(KeyError):
        del d["k"]
    with pytest.raises(KeyError):
        d.pop("k")
    assert d.pop("k", "gone") == "gone"


def test_expire_returns_exactly_the_expired_entries(impl):
    d, clock = make(impl, ttl=5, tick=0.01)
    for i in range(100):
        d.set(i, i * 10, ttl=i * 0.001 + 0.0005)
    out = d.expire(now=0.0505)
    assert out == [(i, i * 10) for i in range(51)]  # earliest first, none live, none missed
    assert sorted(d) == list(range(51, 100))
    d._check()


def _twins(impl, told, tell=True):
    # two mappings given the same sets: one to expire(), one to purge() (told if ``tell``)
    import random

    pair = []
    for log, on in zip(told, (True, tell)):
        clock = FakeClock(0.0)
        d = impl.WheelTTLDict(
            5, clock=clock, tick=0.01, on_expire=(lambda k, v, log=log: log.append((k, v))) if on else None
        )
        r = random.Random(44)
        for i in range(300):
            d.set(i % 250, i, ttl=r.choice([0.0, 0.004, 0.05, 0.3, 2.5, math.inf, r.random()]))
        pair.append((d, clock))
    return pair


@pytest.mark.parametrize("with_on_expire", [False, True])
def test_purge_removes_what_expire_would_and_counts_it(impl, with_on_expire):
    told = ([], [])
    (e, eclock), (p, pclock) = _twins(impl, told, with_on_expire)
    for now in (-1.0, 0.0, 0.003, 0.004, 0.2, 0.2, 0.31, 0.9, 1.0, 3.0, 1e9):
        eclock.now = pclock.now = now
        live = {k for k, _, deadline in e._entries() if deadline > now}  # without a purge
        removed = e.expire(now)
        n = p.purge(now)
        assert type(n) is int and n == len(removed)
        assert p._entries() == e._entries()  # the same entries left, in the same order
        assert all(k not in live for k, _ in removed)  # never a live one
        e._check()
        p._check()
    assert p.purge() == 0 and {deadline for _, _, deadline in p._entries()} == {math.inf}
    assert told[0] and told[1] == (told[0] if with_on_expire else [])


def test_purge_tells_on_expire_each_pair_in_expires_order(impl):
    told = ([], [])
    (e, eclock), (p, pclock) = _twins(impl, told)
    eclock.now = pclock.now = 0.5
    assert p.purge() == len(e.expire()) > 10
    assert told[1] == told[0] and told[0] == e.expire(0.0) + told[0]  # nothing left due


def test_purge_with_nothing_due_and_its_errors_are_expires(impl):
    d, clock = make(impl, ttl=1)
    assert d.purge() == 0 and d.purge(now=0.5) == 0
    d["a"] = 1
    for bad, exc in (("x", TypeError), (float("nan"), ValueError), (1j, TypeError)):
        with pytest.raises(exc) as expected:
            d.expire(bad)
        with pytest.raises(exc) as got:
            d.purge(now=bad)
        assert str(got.value) == str(expected.value)
    clock.now = "soon"
    with pytest.raises(TypeError, match=r"clock\(\)"):
        d.purge()
    clock.now = 2.0
    assert "a" in d._entries()[0] and d.purge() == 1 and d._held() == 0


def test_purge_refuses_reentry_as_expire_does(impl):
    d, _ = make(impl, ttl=1)
    a, b = Hook("a"), Hook("b")
    d[a] = 1
    for method in (d.expire, d.purge):
        Hook.hook = method  # inside a set's look-up: a change under way
        with pytest.raises(RuntimeError, match="WheelTTLDict was re-entered while it was being changed"):
            d[b] = 2
        d._check()
    Hook.hook = None


def test_entries_handed_back_early_wait_aside_and_expire_once(impl):
    seen = []
    d, clock = make(impl, ttl=1, tick=1.0, on_expire=lambda k, v: seen.append(k))
    for i in range(10):
        d.set(i, i, ttl=0.5 + i * 0.1)
    d.set("deleted", 0, ttl=1.2)
    d.set("overwritten", 0, ttl=1.3)
    assert d.expire(0.1) == []  # pure: all came off the wheel two ticks ahead; none expired
    if impl.name == "py":
        assert len(d._wheel) == 0 and len(d._soon) == 12
    del d["deleted"]
    d.set("overwritten", 1, ttl=5)
    d._check()
    for now in (0.2, 0.3, 0.4):  # calls more frequent than ticks: nothing handed back and forth
        assert d.expire(now) == []
        if impl.name == "py":
            assert len(d._soon) == 12
    assert [k for k, _ in d.expire(0.75)] == [0, 1, 2]
    assert [k for k, _ in d.expire(2.0)] == list(range(3, 10))
    assert seen == list(range(10)) and sorted(d, key=str) == ["overwritten"] and d._held() == 1
    d._check()


def test_overwrite_restarts_life_and_is_not_expired(impl):
    seen = []
    d, clock = make(impl, ttl=10, on_expire=lambda k, v: seen.append((k, v)))
    d["k"] = "old"
    clock.now = 9.0
    d.set("k", "new", ttl=5)
    clock.now = 12.0
    assert d["k"] == "new" and d.expire() == [] and seen == []
    clock.now = 14.0
    assert d.expire() == [("k", "new")] and seen == [("k", "new")]
    d._check()


def test_setting_an_expired_key_tells_on_expire_once(impl):
    seen = []
    d, clock = make(impl, ttl=1, on_expire=lambda k, v: seen.append((k, v)))
    d["k"] = "old"
    clock.now = 1.5
    d["k"] = "new"
    assert seen == [("k", "old")] and d["k"] == "new"
    assert d.expire() == [] and seen == [("k", "old")]
    d._check()


def test_on_expire_is_not_called_for_del_pop_clear_or_overwrite(impl):
    seen = []
    d, clock = make(impl, ttl=1, on_expire=lambda k, v: seen.append((k, v)))
    d["a"] = d["b"] = d["c"] = d["d"] = 1
    del d["a"]
    d.pop("b")
    d["c"] = 2
    d.popitem()
    d.clear()
    clock.now = 5
    assert d.expire() == [] and seen == [] and d._held() == 0 and d.next_expiry() is None


@pytest.mark.parametrize("method", ["expire", "purge"])
def test_on_expire_errors_propagate_after_every_call(impl, method):
    seen = []

    def cb(k, v):
        seen.append(k)
        raise ValueError(k)

    d, clock = make(impl, ttl=1, on_expire=cb)
    d["a"] = d["b"] = 1
    clock.now = 2
    with pytest.raises(ValueError, match="a"):
        getattr(d, method)()
    assert seen == ["a", "b"] and d._held() == 0
    d._check()


def test_sets_purge_what_came_due_without_expire(impl):
    d, clock = make(impl, ttl=1, tick=0.01)
    for i in range(1000):
        clock.now = i * 0.01
        d[i] = i
    # memory follows the live window: about 100 entries live at any time
    assert d._held() <= 103
    d._check()


def test_maxsize_evicts_the_least_recently_used(impl):
    seen = []
    d, _ = make(impl, maxsize=3, on_expire=lambda k, v: seen.append((k, v)))
    d["a"], d["b"], d["c"] = 1, 2, 3
    assert d["a"] == 1  # a read refreshes a
    d["d"] = 4
    assert seen == [("b", 2)] and list(d) == ["c", "a", "d"]
    d.get("c")
    d["a"] = 10  # a set refreshes too
    d["e"] = 5
    assert seen == [("b", 2), ("d", 4)] and list(d) == ["c", "a", "e"]
    assert "c" in d  # `in` does not refresh
    d["f"] = 6
    assert seen[-1] == ("c", 3)
    d._check()


def test_maxsize_drops_expired_entries_before_a_live_one(impl):
    seen = []
    d, clock = make(impl, maxsize=2, on_expire=lambda k, v: seen.append(k))
    d.set("live", 1, ttl=100)
    d.set("dying", 2, ttl=1)
    d["live"]  # dying is now the most recently used but expired
    clock.now = 2
    d["new"] = 3
    assert seen == ["dying"] and sorted(d) == ["live", "new"]


def test_eviction_is_constant_time_per_set(impl):
    # the LRU order is a linked list: eviction never scans
    d, _ = make(impl, maxsize=1000)
    for i in range(20000):
        d[i] = i
    assert len(d) == 1000 and list(d)[0] == 19000
    d._check()


def test_popitem_takes_the_least_recently_used_live_entry(impl):
    d, clock = make(impl, ttl=10, maxsize=5)
    d.set("x", 0, ttl=1)
    d["a"], d["b"] = 1, 2
    d["a"]
    clock.now = 1
    assert d.popitem() == ("b", 2) and d.popitem() == ("a", 1)
    with pytest.raises(KeyError):
        d.popitem()


@pytest.mark.parametrize(
    "bad, exc, message",
    [
        ({"ttl": -1}, ValueError, "ttl must be non-negative"),
        ({"ttl": float("nan")}, ValueError, "ttl"),
        ({"ttl": "1"}, TypeError, "ttl must be a real number"),
        ({"maxsize": 0}, ValueError, "maxsize must be at least 1"),
        ({"maxsize": 1.5}, TypeError, "maxsize"),
        ({"on_expire": 3}, TypeError, "on_expire must be callable"),
        ({"clock": 3}, TypeError, "clock must be callable"),
        ({"tick": 0}, ValueError, "tick must be a positive"),
    ],
)
def test_bad_arguments_name_themselves(impl, bad, exc, message):
    kw = {"ttl": 1, **bad}
    with pytest.raises(exc, match=message):
        impl.WheelTTLDict(**kw)


def test_bad_ttl_in_set_leaves_the_mapping_as_it_was(impl):
    d, _ = make(impl)
    d["k"] = 1
    with pytest.raises(ValueError, match="ttl"):
        d.set("k", 2, ttl=-1)
    with pytest.raises(TypeError, match="ttl"):
        d.set("j", 2, ttl="x")
    assert dict(d) == {"k": 1}
    d._check()


def test_bad_clock_reading_names_the_clock(impl):
    clock = FakeClock(0.0)
    d = impl.WheelTTLDict(1, clock=clock)
    d["k"] = 1
    clock.now = float("nan")
    with pytest.raises(ValueError, match=r"clock\(\)"):
        d["k"]
    clock.now = "soon"
    with pytest.raises(TypeError, match=r"clock\(\)"):
        d.set("j", 1)


class Hook:
    """A key of hash 1 whose __eq__ runs ``hook`` first (the same hash for all: they meet)."""

    hook = None

    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return 1

    def __eq__(self, other):
        if Hook.hook is not None:
            hook, Hook.hook = Hook.hook, None  # once
            hook()
        return isinstance(other, Hook) and self.name == other.name

    def __repr__(self):
        return f"Hook({self.name!r})"


@pytest.mark.parametrize("maxsize", [None, 2])
def test_a_change_from_a_keys_eq_is_refused_and_reads_are_safe(impl, maxsize):
    d, clock = make(impl, maxsize=maxsize)
    a, b = Hook("a"), Hook("b")
    d[a] = 1
    d["x"] = 0
    Hook.hook = lambda: d.set("y", 2)  # a change inside a set's look-up
    with pytest.raises(RuntimeError, match="WheelTTLDict was re-entered while it was being changed"):
        d[b] = 2
    d._check()
    assert "y" not in d
    seen = []
    Hook.hook = lambda: seen.append((d.get("x"), a in d, list(d._entries())))  # reads: allowed
    d[b] = 2
    d._check()
    assert seen and seen[0][0] == 0 and d[b] == 2 and "y" not in d
    Hook.hook = lambda: d.pop("x")  # runs in pop's look-up, before its change
    assert d.pop(b) == 2 and b not in d
    d._check()
    Hook.hook = None


def test_on_expire_and_the_clock_may_change_the_mapping(impl):
    clock = FakeClock(0.0)
    d = impl.WheelTTLDict(1, clock=clock)

    def told(key, value):
        if type(key) is int:
            d.set(("again", key), value, ttl=5)  # the change is complete: allowed
            d.pop("gone", None)
            len(d)

    d.on_expire = told
    d["gone"] = 0
    for k in range(3):
        d.set(k, k, ttl=0.5)
    d._check()
    clock.now = 2.0
    assert [k for k, _ in d.expire()] == [0, 1, 2, "gone"]
    d._check()
    assert list(d) == [("again", 0), ("again", 1), ("again", 2)]
    # a clock that deletes the key being read
    armed = []

    def deleting_clock():
        if armed:
            armed.pop()
            d2.pop("k", None)
        return 0.0

    d2 = impl.WheelTTLDict(1, maxsize=2, clock=deleting_clock)
    d2["j"], d2["k"] = 0, 1
    armed.append(1)
    assert d2.get("k") == 1  # read before the clock deleted it
    assert "k" not in d2 and list(d2) == ["j"]
    d2._check()
    with pytest.raises(TypeError):
        d.on_expire = 3


@pytest.mark.parametrize("maxsize", [None, 3])
def test_a_cycle_through_a_key_or_value_is_collected(impl, maxsize):
    # the compiled entries are no containers of the collector's: the core shows what they hold
    class Holder:
        pass

    d = impl.WheelTTLDict(10, maxsize=maxsize, clock=FakeClock(0.0))
    value, key = Holder(), Holder()
    value.d = key.d = d
    d["a"] = value
    d[(key,)] = 1
    d.set("b", [d], ttl=0.0)  # expired at once: on the wheel until a purge
    d.set("c", [d], ttl=1.0)
    d.expire(0.5)  # "c" leaves the wheel early, into soon
    d.set("c", 0)  # ... and is replaced, held by soon alone
    ref = weakref.ref(d)
    del d, value, key
    gc.collect()
    assert ref() is None


def test_copy_deepcopy_and_pickle_are_independent(impl, both):
    d, clock = make(impl, ttl=10, maxsize=4)
    d["a"] = [1]
    d.set("b", [2], ttl=1)
    d["a"]
    shallow, deep = copy.copy(d), copy.deepcopy(d)
    loaded = pickle.loads(pickle.dumps(d))
    for other in (shallow, deep, loaded):
        assert list(other) == ["b", "a"] and other.maxsize == 4 and other.ttl == 10
        other._check()
    assert shallow["a"] is d["a"] and deep["a"] == [1] and deep["a"] is not d["a"]
    shallow["z"] = 0
    assert "z" not in d
    clock.now = 1
    assert list(shallow) == ["a", "z"]  # the clock is shared by the shallow copy
    # a pickle made by one implementation loads in the other
    c, py = both
    data = pickle.dumps(py.WheelTTLDict(5, clock=FakeClock(0.0)))
    assert type(pickle.loads(data)).__name__ == "WheelTTLDict"


def test_repr_says_what_it_holds(impl):
    d, _ = make(impl, ttl=3, maxsize=9)
    d["k"] = 1
    assert repr(d) == "<WheelTTLDict held=1 ttl=3.0 maxsize=9>"


def test_far_deadlines_and_next_expiry(impl):
    d, clock = make(impl, tick=0.001)
    d.set("year", 1, ttl=365 * 86400.0)
    d.set("soon", 2, ttl=0.5)
    assert 0 <= d.next_expiry() <= 0.5
    clock.now = 365 * 86400.0 - 1
    assert d.expire() == [("soon", 2)] and d["year"] == 1
    clock.now += 1
    assert d.expire() == [("year", 1)]
    if impl.name == "py":  # the compiled wheel walks each of its slots at most once a purge
        assert d._wheel.stats()["visited"] < 5000  # no tick-by-tick walk over a year


class Model(RuleBasedStateMachine):
    """Random sets, reads, deletes and time steps against a plain dict of deadlines."""

    impl = None

    def __init__(self):
        super().__init__()
        self.clock = FakeClock(0.0)
        self.expired = []
        self.d = self.impl.WheelTTLDict(
            2.0, maxsize=8, clock=self.clock, tick=0.01, on_expire=lambda k, v: self.expired.append(k)
        )
        self.model = {}  # key -> (value, deadline), in LRU order

    def _live(self):
        now = self.clock.now
        for k in [k for k, (_, dl) in self.model.items() if dl <= now]:
            del self.model[k]

    @rule(key=st.integers(0, 12), ttl=st.one_of(st.none(), st.floats(0, 5)))
    def set(self, key, ttl):
        self._live()
        self.d.set(key, key, ttl=ttl)
        self.model.pop(key, None)
        self.model[key] = (key, self.clock.now + (2.0 if ttl is None else ttl))
        while len(self.model) > 8:
            del self.model[next(iter(self.model))]

    @rule(key=st.integers(0, 12))
    def get(self, key):
        self._live()
        got = self.d.get(key, None)
        assert got == (self.model[key][0] if key in self.model else None)
        if key in self.model:
            self.model[key] = self.model.pop(key)

    @rule(key=st.integers(0, 12))
    def delete(self, key):
        self._live()
        assert self.d.pop(key, None) == (self.model.pop(key)[0] if key in self.model else None)

    @rule(dt=st.floats(0, 1.5))
    def step(self, dt):
        self.clock.now += dt

    @invariant()
    def agrees(self):
        self._live()
        assert list(self.d) == list(self.model)
        self.d._check()


def test_model_based(impl):
    machine = type("M", (Model,), {"impl": impl})
    from hypothesis import settings
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(machine, settings=settings(max_examples=40, stateful_step_count=30))


def test_no_leak_over_many_operations(impl):
    # every path that stores, refreshes, evicts, expires or drops an entry,
    # with on_expire, over about 200,000 operations (compiled; 30,000 pure):
    # references and memory must come back
    import sys

    from test_heap import assert_no_leak

    key, value = object(), object()
    base_k, base_v = sys.getrefcount(key), sys.getrefcount(value)
    told = []

    def churn(rounds):
        clock = FakeClock(0.0)
        d = impl.WheelTTLDict(1.0, maxsize=64, clock=clock, on_expire=lambda k, v: told.append(1))
        for r in range(rounds):
            for i in range(100):
                d[i] = value  # 100 keys into 64: LRU evictions
                d.set(("k", i), value, ttl=0.5 + i % 3)
            d[key] = value
            _ = d.get(key), d.get(5), d.get("missing"), d.setdefault(key, value)
            d.set(key, value, ttl=0.01)
            clock.now += 0.6  # some due: the wheel gives them back
            d.expire()
            _ = list(d.items())
            if d:
                d.popitem()
            d.pop(key, None)
            if r % 7 == 0:
                d.clear()
        d.clear()
        told.clear()

    assert_no_leak(churn, 1000 if impl.name == "c" else 150)
    gc.collect()
    assert sys.getrefcount(key) == base_k and sys.getrefcount(value) == base_v


class Collide:
    """A key of a few hashes, compared by name: many keys meet in one probe sequence."""

    def __init__(self, name):
        self.name = name

    def __hash__(self):
        return self.name % 3

    def __eq__(self, other):
        return isinstance(other, Collide) and self.name == other.name

    def __repr__(self):
        return f"C{self.name}"


@pytest.mark.parametrize("maxsize", [None, 6])
def test_both_implementations_agree_over_random_operations(both, maxsize):
    # sets with ttls across many ticks and far ones, reads, deletes, popitem,
    # expire at a given time (behind the clock too), clock jumps: the same
    # contents, order, expired pairs and on_expire calls in both
    import random

    runs = []
    for impl in both:
        clock, told, log = FakeClock(0.0), [], []
        d = impl.WheelTTLDict(
            1.0, maxsize=maxsize, clock=clock, tick=0.01, on_expire=lambda k, v: told.append(k)
        )
        r = random.Random(46)  # the same operations for both
        for _ in range(1500):
            op, k = r.random(), Collide(r.randrange(12))
            if op < 0.45:
                ttl = r.choice([None, 0.0, 0.005, 0.3, 2.5, 1e6, math.inf, r.random() * 0.05])
                d.set(k, r.randrange(100), ttl=ttl)
            elif op < 0.6:
                log.append(d.get(k, None))
            elif op < 0.68:
                log.append(d.pop(k, None))
            elif op < 0.72 and d:
                log.append(d.popitem())
            elif op < 0.8:
                log.append(d.expire(clock.now + r.choice([-0.5, 0.0, 0.01, 0.2])))
            else:
                clock.now += r.choice([0.001, 0.004, 0.05, 0.5, 3.0])
            log.append(list(d.items()))
        d._check()
        runs.append((log, told, [repr(k) for k in d]))
    assert runs[0] == runs[1]


def test_a_clear_from_a_keys_eq_leaves_a_read_safe(impl):
    d, _ = make(impl)
    a, b = Hook("a"), Hook("b")
    d[a] = 1
    Hook.hook = d.clear  # the read's look-up sees the table replaced: it starts again
    assert d.get(b, "none") == "none" and a not in d and len(d) == 0
    d[b] = 2
    d._check()
    Hook.hook = None


def test_a_finaliser_run_by_an_overwrite_or_a_purge_may_change_the_mapping(impl):
    d, clock = make(impl, ttl=1)
    done = []

    class Value:
        def __del__(self):
            d.set(("from __del__", len(done)), 0)  # the change is complete: allowed
            done.append(1)

    d["k"] = Value()
    d["k"] = 0  # the old value goes after the change
    d.set("e", Value(), ttl=0.5)
    clock.now = 0.75
    assert [k for k, _ in d.expire()] == ["e"]  # its value is released once expire is complete
    gc.collect()
    assert len(done) == 2 and ("from __del__", 0) in d and ("from __del__", 1) in d
    d._check()
    for k in range(3):  # purge, building no pairs, releases them after its change too
        d.set(k, Value(), ttl=0.1)
    clock.now = 0.9
    assert d.purge() == 3 and len(done) == 5
    assert [k for k, _, _ in d._entries()][-3:] == [("from __del__", i) for i in range(2, 5)]
    d._check()


def test_an_expired_pair_holding_a_container_stays_with_the_collector(impl):
    # pairs of atoms may leave the collector's care (as it would untrack them); others may not
    d, clock = make(impl, ttl=1)
    d["atoms"] = 1
    d["list"] = []
    d[("t",)] = {}
    clock.now = 2
    out = d.expire()
    assert [k for k, _ in out] == ["atoms", "list", ("t",)]
    assert gc.is_tracked(out[1]) and gc.is_tracked(out[2])
