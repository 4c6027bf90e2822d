"""TTLDict(lru=True): maxsize evicts the least recently used key, on both implementations.

A read ([], get, setdefault) or a set makes a key the most recently used;
``in``, iteration and the views do not.  Expiry is unchanged (a read never
extends a life, expired entries go before a live key is evicted).  Checked
against an OrderedDict model, in the small (a hypothesis state machine that
also runs the default FIFO policy) and over thousands of keys (the ring's
growth, compaction and shrinking carry the order over), and under user code
that re-enters the mapping.
"""

from __future__ import annotations

import copy
import gc
import pickle
import random
import sys
from collections import OrderedDict

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from clocks import FakeClock as Clock
from dq_core._ttldictstate import SWEEP
from ttl_helpers import Colliding, Finaliser, eager_gc  # noqa: F401 (a fixture)


def _lru(impl, maxsize=3, ttl=100, **kw):
    seen = kw.pop("seen", None)
    on_expire = None if seen is None else (lambda k, v: seen.append(k))
    return impl.TTLDict(ttl, maxsize=maxsize, clock=kw.pop("clock", Clock()), on_expire=on_expire, lru=True)


@pytest.mark.parametrize("read", ["getitem", "get", "setdefault", "set"])
def test_a_read_or_set_saves_a_key_from_eviction(impl, read):
    seen = []
    d = _lru(impl, seen=seen)
    for k in "abc":
        d[k] = k.upper()
    if read == "getitem":
        assert d["a"] == "A"
    elif read == "get":
        assert d.get("a") == "A"
    elif read == "setdefault":
        assert d.setdefault("a", "other") == "A"
    else:
        d["a"] = "A2"
    d["d"] = "D"
    assert seen == ["b"]  # the least recently used, not the oldest set ("a")
    assert list(d) == ["c", "a", "d"]
    d._check()


def test_in_iteration_and_views_do_not_refresh(impl):
    seen = []
    d = _lru(impl, seen=seen)
    for k in "abc":
        d[k] = k
    assert "a" in d
    assert list(d) == ["a", "b", "c"] and list(d.items()) == [("a", "a"), ("b", "b"), ("c", "c")]
    assert list(d.values()) == ["a", "b", "c"] and d == {"a": "a", "b": "b", "c": "c"}
    assert d.get("missing") is None  # a miss changes nothing
    d["d"] = "d"
    assert seen == ["a"]


def test_the_default_policy_still_evicts_the_oldest_set(impl):
    seen = []
    d = impl.TTLDict(100, maxsize=3, clock=Clock(), on_expire=lambda k, v: seen.append(k))
    for k in "abc":
        d[k] = k
    assert d["a"] == "a" and d.get("a") == "a"
    d["d"] = "d"
    assert seen == ["a"] and d.lru is False
    assert repr(d) == "<TTLDict held=3 ttl=100.0 maxsize=3>"


def test_expired_entries_go_before_a_live_key_is_evicted(impl):
    clock = Clock()
    seen = []
    d = _lru(impl, maxsize=3, ttl=10, clock=clock, seen=seen)
    d["old"] = 1  # set first, used last: expires first
    clock.now = 5
    d["b"] = 2
    d["c"] = 3
    assert d["old"] == 1  # the most recently used now, but it still expires at 10
    clock.now = 10
    assert "old" not in d and d.get("old") is None
    d["d"] = 4
    assert seen == ["old"] and list(d) == ["b", "c", "d"]
    d._check()


def test_a_read_does_not_extend_a_life_and_expire_keeps_set_order(impl):
    clock = Clock()
    d = _lru(impl, maxsize=None, ttl=10, clock=clock)
    for k in "abc":
        d[k] = k
    d["a"], d["b"]
    assert list(d) == ["c", "a", "b"]
    clock.now = 10
    assert d.expire() == [("a", "a"), ("b", "b"), ("c", "c")]  # oldest set first


def test_popitem_takes_the_least_recently_used_live_entry(impl):
    clock = Clock()
    d = _lru(impl, maxsize=None, ttl=10, clock=clock)
    d["x"] = 0
    clock.now = 1
    for k in "abc":
        d[k] = k
    d["a"]
    d["x"]  # x: the most recently used
    assert d.popitem() == ("b", "b")
    clock.now = 10  # x expires: skipped (and purged)
    assert d.popitem() == ("c", "c") and d.popitem() == ("a", "a")
    with pytest.raises(KeyError):
        d.popitem()


def test_lowering_maxsize_evicts_the_least_recently_used(impl):
    seen = []
    d = _lru(impl, maxsize=None, seen=seen)
    for k in range(6):
        d[k] = k
    d[0], d[2]
    d.maxsize = 2
    assert seen == [1, 3, 4, 5] and list(d) == [0, 2]


def test_lru_is_keyword_only_checked_and_fixed(impl):
    assert impl.TTLDict(1).lru is False and impl.TTLDict(1, lru=True).lru is True
    for bad in (1, "yes", None):
        with pytest.raises(TypeError, match=f"^lru must be True or False, not '{type(bad).__name__}'$"):
            impl.TTLDict(1, lru=bad)
    with pytest.raises(TypeError):
        impl.TTLDict(1, None, None, None, True)
    d = impl.TTLDict(1, lru=True)
    with pytest.raises(AttributeError):
        d.lru = False
    assert repr(d) == "<TTLDict held=0 ttl=1.0 maxsize=None lru=True>"
    d.clear()
    assert d.lru is True


def test_lru_twins_agree_on_signature_and_docstrings(both):
    import importlib
    import inspect

    c, py = (
        importlib.import_module(n).TTLDictCore for n in ("dq_core._ttldictcore", "dq_core._ttldictcore_py")
    )
    assert str(inspect.signature(c)) == str(inspect.signature(py))
    assert "*, lru=False" in str(inspect.signature(c))
    for name in ("lru", "_peek", "__doc__", "popitem", "_keys"):
        a, b = (getattr(x, name) if name == "__doc__" else getattr(x, name).__doc__ for x in (c, py))
        assert inspect.cleandoc(a) == inspect.cleandoc(b), name
    assert str(inspect.signature(c._peek)) == str(inspect.signature(py._peek))


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_and_pickles_keep_the_recency_order(impl, how):
    d = impl.TTLDict(100, maxsize=4, lru=True)  # the default clock: picklable
    for k in "abcd":
        d[k] = k
    d["a"], d["c"]
    if how == "pickle":
        e = pickle.loads(pickle.dumps(d))
    else:
        e = getattr(copy, how)(d)
    e._check()
    assert e.lru is True and list(e) == ["b", "d", "a", "c"] == list(d)
    e["b"]
    e["z"] = "z"  # evicts d
    assert list(e) == ["a", "c", "b", "z"] and list(d) == ["b", "d", "a", "c"]


def test_a_pickle_of_one_implementation_loads_in_the_other(both):
    c, py = both
    for src, dst in ((c, py), (py, c)):
        d = src.TTLDict(100, maxsize=5, lru=True)
        for k in range(5):
            d[k] = str(k)
        d[3], d[0]
        state = d.__getstate__()
        assert state[0] == 3 and state[-1] == [1, 2, 4, 3, 0]
        e = dst.TTLDict(1)
        e.__setstate__(state)
        e._check()
        assert e.lru and list(e) == [1, 2, 4, 3, 0]
    assert c.TTLDict(1).__getstate__()[0] == 2 == py.TTLDict(1).__getstate__()[0]  # default: unchanged


@pytest.mark.parametrize(
    "recency, exc, msg",
    [
        (None, TypeError, "recency must be a list"),
        ([0, "1"], TypeError, "recency must be a list"),
        ([0, 0], ValueError, "every entry once"),
        ([0], ValueError, "every entry once"),
        ([0, 2], ValueError, "every entry once"),
    ],
)
def test_bad_recency_in_a_state_is_refused_and_changes_nothing(impl, recency, exc, msg):
    d = impl.TTLDict(100, lru=True)
    d["kept"] = 1
    now = d.clock()
    state = (3, 5.0, None, d.clock, None, None, [("a", 1, now), ("b", 2, now)], recency)
    with pytest.raises(exc, match=msg):
        d.__setstate__(state)
    assert list(d) == ["kept"] and d.lru
    d.__setstate__(state[:-1] + ([1, 0],))
    assert list(d) == ["b", "a"] and d.ttl == 5.0


@pytest.mark.parametrize("lru", [True, False], ids=["lru", "fifo"])
def test_stateful_against_an_ordered_dict_model(impl, lru):
    TTL = 5.0

    class Machine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = Clock()
            self.reported = []
            self.maxsize = 4
            self.d = impl.TTLDict(
                TTL,
                maxsize=4,
                clock=self.clock,
                on_expire=lambda k, v: self.reported.append((k, v)),
                lru=lru,
            )
            self.held = OrderedDict()  # key -> [value, set at], least recently used first
            self.ring = []  # the keys held, in set order (expiry order)
            self.expected = []
            self.seq = 0

        def _due(self, k):
            return self.held[k][1] + TTL <= self.clock.now

        def _gone(self, k, report):
            del self.ring[self.ring.index(k)]
            value = self.held.pop(k)[0]
            if report:
                self.expected.append((k, value))
            return value

        def _drop_due(self, most=-1):
            while most and self.ring and self._due(self.ring[0]):
                self._gone(self.ring[0], True)
                most -= 1

        def _evict(self):
            if self.maxsize is not None and len(self.held) > self.maxsize:
                self._drop_due()
                while len(self.held) > self.maxsize:
                    self._gone(next(iter(self.held)) if lru else self.ring[0], True)

        def _use(self, k):
            if lru:
                self.held.move_to_end(k)

        @rule(k=st.integers(0, 4))
        def set(self, k):
            self.seq += 1
            if k in self.held:
                self._gone(k, self._due(k))
            self.held[k] = [self.seq, self.clock.now]
            self.ring.append(k)
            self.d[k] = self.seq
            if self.ring and self._due(self.ring[0]):
                self._drop_due(SWEEP)
            self._evict()

        @rule(k=st.integers(0, 4), how=st.sampled_from(["getitem", "get", "setdefault", "in"]))
        def read(self, k, how):
            live = k in self.held and not self._due(k)
            if how == "in":
                assert (k in self.d) == live
                return
            if how == "getitem":
                if not live:
                    with pytest.raises(KeyError):
                        self.d[k]
                    return
                assert self.d[k] == self.held[k][0]
            elif how == "get":
                assert self.d.get(k, "no") == (self.held[k][0] if live else "no")
            elif live:
                assert self.d.setdefault(k, "no") == self.held[k][0]
            else:
                return  # setdefault of an absent key is a set: the set rule covers it
            if live:
                self._use(k)

        @rule(k=st.integers(0, 4))
        def delete(self, k):
            if k in self.held and not self._due(k):
                del self.d[k]
                self._gone(k, False)
            else:
                with pytest.raises(KeyError):
                    del self.d[k]

        @rule()
        def popitem(self):
            self._drop_due()
            if not self.held:
                with pytest.raises(KeyError):
                    self.d.popitem()
                return
            k = next(iter(self.held)) if lru else self.ring[0]
            assert self.d.popitem() == (k, self._gone(k, False))

        @rule(step=st.sampled_from([0.0, 1.0, 2.0, 5.0]))
        def advance(self, step):
            self.clock.now += step

        @rule()
        def expire(self):
            before = len(self.expected)
            self._drop_due()
            assert self.d.expire() == self.expected[before:]

        @rule(maxsize=st.sampled_from([None, 1, 2, 4]))
        def set_maxsize(self, maxsize):
            self.maxsize = maxsize
            self.d.maxsize = maxsize
            self._evict()

        @invariant()
        def agrees(self):
            order = list(self.held) if lru else self.ring
            assert self.d._keys() == order  # held, expired ones included: no purge
            assert self.reported == self.expected
            self.d._check()

    run_state_machine_as_test(
        Machine, settings=settings(max_examples=40, stateful_step_count=25, deadline=None)
    )


def test_thousands_of_keys_keep_the_order_through_growth_compaction_and_shrinking(impl):
    # The ring grows, fills with holes (compacted in place) and shrinks; each
    # move carries the recency order over to the entries' new slots.
    rnd = random.Random(46)
    d = impl.TTLDict(1e9, maxsize=1500, clock=Clock(), lru=True)
    model: OrderedDict[int, int] = OrderedDict()
    for step in range(12_000):
        k = rnd.randrange(3000)
        r = rnd.random()
        if r < 0.45:
            d[k] = step
            model[k] = step
            model.move_to_end(k)
            if len(model) > 1500:
                model.popitem(last=False)
        elif r < 0.8:
            assert d.get(k) == model.get(k)
            if k in model:
                model.move_to_end(k)
        else:
            assert d.pop(k, None) == model.pop(k, None)
        if step % 3000 == 2999:
            assert d._keys() == list(model)
            d._check()
    for k in list(model)[:1400]:  # down to a few: the ring shrinks
        del d[k]
        del model[k]
    d[0] = 0
    model[0] = 0
    model.move_to_end(0)
    d._check()
    assert list(d) == list(model)


# -- user code that re-enters an LRU mapping ------------------------------------------


@pytest.mark.parametrize("op", ["getitem", "get"])
def test_eq_filling_the_mapping_during_a_refreshing_read(impl, op):
    # The read's __eq__ sets hundreds of keys: the ring grows and is
    # compacted (slots move) and maxsize evicts; the lookup starts again and
    # refreshes the entry where it is now.
    for _ in range(5):
        d = impl.TTLDict(100, maxsize=200, clock=Clock(), lru=True)
        held = Colliding("same")
        d[held] = "value"
        for i in range(100):
            d[f"pre{i}"] = i

        def fill():
            for i in range(250):
                d[i] = i
                if i % 50 == 0:
                    d[held]  # by identity: no __eq__; keeps it from eviction

        held.action = fill
        probe = Colliding("same")
        assert (d[probe] if op == "getitem" else d.get(probe)) == "value"
        d._check()
        assert d._keys()[-1] is held  # refreshed: the most recently used
        assert "pre99" not in d and 249 in d and len(d) == 200
        d["one more"] = 1
        d._check()
        assert d._keys()[-2:] == [held, "one more"]


@pytest.mark.parametrize("op", ["getitem", "get", "setitem"])
def test_eq_clearing_the_mapping_during_an_lru_lookup(impl, op):
    for _ in range(10):
        d = impl.TTLDict(10, maxsize=20, clock=Clock(), lru=True)
        held = Colliding("held")
        for i in range(8):
            d[f"filler{i}"] = [i] * 50
        d[held] = object()
        held.action = d.clear
        probe = Colliding("probe")
        if op == "getitem":
            with pytest.raises(KeyError):
                d[probe]
        elif op == "get":
            assert d.get(probe) is None
        else:
            with pytest.raises(RuntimeError, match="TTLDict was re-entered"):
                d[probe] = 1
        d._check()
        d["after"] = 1
        assert list(d)[-1] == "after"
        d._check()


def test_a_read_from_eq_inside_a_set_leaves_the_order_as_it_is(impl):
    d = impl.TTLDict(100, maxsize=3, clock=Clock(), lru=True)
    held = Colliding("held")
    d["x"] = 1
    d[held] = 2
    d["y"] = 3
    held.action = lambda: d["x"]  # a read made by the set's own lookup
    d[Colliding("probe")] = 4  # a new key: evicts the least recently used, x
    assert "x" not in d and d._keys()[0] is held
    d._check()


def test_finalisers_reading_while_a_state_is_taken(impl, eager_gc):
    errors = []
    d = impl.TTLDict(100, clock=Clock(), lru=True)
    for i in range(200):
        d[i] = [i]
    for i in range(0, 200, 3):
        d[i]

    def read():
        d.get(7)
        d[150]

    for _ in range(5):
        garbage = [Finaliser(read, errors) for _ in range(30)]
        del garbage
        state = d.__getstate__()
        e = impl.TTLDict(1, lru=True)
        e.__setstate__(state)
        e._check()
        assert sorted(e._keys()) == list(range(200))
    d._check()
    assert errors == []


def test_no_reference_leak_with_lru(impl):
    clock = Clock()
    d = impl.TTLDict(10, maxsize=50, clock=clock, lru=True)
    key, value = object(), object()
    kbase, base = sys.getrefcount(key), sys.getrefcount(value)
    for r in range(20_000):
        d[r % 120] = value
        d[key] = value
        d.get(r % 70)
        if r % 500 == 0:
            clock.now += 4
    d.clear()
    gc.collect()
    assert sys.getrefcount(value) == base and sys.getrefcount(key) == kbase
