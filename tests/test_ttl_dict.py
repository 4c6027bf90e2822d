"""TTLDict: a MutableMapping whose entries expire, on both implementations."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from clocks import FakeClock as Clock
from dq_core._ttldictstate import SWEEP


def test_expired_keys_are_invisible_before_expire(impl):
    clock = Clock()
    d = impl.TTLDict(10, clock=clock)
    d["a"] = 1
    clock.now = 5
    d["b"] = 2
    clock.now = 10
    assert "a" not in d and d.get("a") is None
    with pytest.raises(KeyError):
        d["a"]
    with pytest.raises(KeyError):
        del d["a"]
    assert d["b"] == 2 and list(d) == ["b"] and len(d) == 1
    assert dict(d.items()) == {"b": 2}


def test_set_restarts_life_and_expire_never_returns_overwritten(impl):
    clock = Clock()
    d = impl.TTLDict(10, clock=clock)
    d["k"] = "old"
    clock.now = 8
    d["k"] = "new"  # restarts its life
    clock.now = 12
    assert d.expire() == []  # the stale ring entry for "old" is skipped
    assert d["k"] == "new"
    clock.now = 18
    assert d.expire() == [("k", "new")]
    assert "k" not in d and d.expire() == []


def test_del_and_overwrite_do_not_call_on_expire(impl):
    clock = Clock()
    seen = []
    d = impl.TTLDict(5, clock=clock, on_expire=lambda k, v: seen.append((k, v)))
    d["a"] = 1
    d["a"] = 2
    d["b"] = 3
    del d["b"]
    clock.now = 5
    assert d.expire(now=clock.now) == [("a", 2)]
    assert seen == [("a", 2)]


def test_maxsize_evicts_the_oldest(impl):
    clock = Clock()
    seen = []
    d = impl.TTLDict(100, maxsize=3, clock=clock, on_expire=lambda k, v: seen.append(k))
    for i, k in enumerate("abc"):
        clock.now = i
        d[k] = i
    d["a"] = 10  # overwrite: no eviction, and "a" is now the newest
    d["d"] = 3
    assert seen == ["b"]
    assert sorted(d) == ["a", "c", "d"]
    clock.now = 101.5  # "c" (set at 2) has expired: it goes before any eviction
    d["e"] = 4
    assert seen == ["b", "c"] and sorted(d) == ["a", "d", "e"]
    with pytest.raises(ValueError, match="maxsize"):
        impl.TTLDict(1, maxsize=0)


def test_on_expire_exception_propagates_after_the_mapping_is_consistent(impl):
    clock = Clock()
    calls = []

    def boom(k, v):
        calls.append(k)
        raise RuntimeError(f"boom {k}")

    d = impl.TTLDict(1, clock=clock, on_expire=boom)
    d["a"] = 1
    d["b"] = 2
    d["c"] = 3
    clock.now = 1
    with pytest.raises(RuntimeError, match="boom a"):
        d.expire()
    assert calls == ["a", "b", "c"]  # every callback ran
    assert d._held() == 0 and d.expire() == []


def test_ttl_change_applies_to_every_entry(impl):
    clock = Clock()
    d = impl.TTLDict(100, clock=clock)
    d["a"] = 1
    clock.now = 20
    assert "a" in d
    d.ttl = 10
    assert "a" not in d and d.ttl == 10.0
    d.clear()
    assert len(d) == 0 and d.expire() == []


def _reporting(impl, ttl=10, **kw):
    clock = Clock()
    calls = []
    d = impl.TTLDict(ttl, clock=clock, on_expire=lambda k, v: calls.append((k, v)), **kw)
    return d, clock, calls


@pytest.mark.parametrize("how", ["set", "setdefault", "update"])
def test_setting_an_expired_key_reports_the_expired_entry_once(impl, how):
    d, clock, calls = _reporting(impl)
    d["a"] = 1
    clock.now = 11
    if how == "set":
        d["a"] = 2
    elif how == "setdefault":
        assert d.setdefault("a", 2) == 2
    else:
        d.update(a=2)
    assert calls == [("a", 1)]
    assert d["a"] == 2 and len(d) == 1
    assert d.expire() == [] and calls == [("a", 1)]  # never returned again
    clock.now = 21
    assert d.expire() == [("a", 2)] and calls == [("a", 1), ("a", 2)]
    d._check()


def test_an_expired_entry_is_reported_once_whatever_comes_first(impl):
    d, clock, calls = _reporting(impl)
    d["a"] = 1
    d["b"] = 1
    clock.now = 10
    assert "a" not in d and d.get("b") is None  # reads do not report
    assert d.expire() == [("a", 1), ("b", 1)]
    d["a"] = 2  # already reported by expire: a plain insert now
    assert calls == [("a", 1), ("b", 1)]
    clock.now = 20
    d["a"] = 3  # overwrites the expired 2
    d["a"] = 4  # overwrites the live 3: not reported
    assert calls == [("a", 1), ("b", 1), ("a", 2)]
    assert d.expire() == [] and len(d) == 1
    d._check()


def test_on_expire_raising_at_a_set_leaves_the_new_value_set(impl):
    clock = Clock()

    def boom(k, v):
        raise LookupError(f"boom {k} {v}")

    d = impl.TTLDict(10, clock=clock, on_expire=boom)
    d["a"] = 1
    clock.now = 10
    with pytest.raises(LookupError, match="^boom a 1$"):
        d["a"] = 2
    assert d["a"] == 2 and d.expire() == []
    d._check()


def test_lowering_maxsize_evicts_at_once_expired_entries_first(impl):
    d, clock, calls = _reporting(impl, maxsize=None)
    for i, k in enumerate("abcde"):
        clock.now = float(i)
        d[k] = i
    d["a"] = 10  # overwritten: "a" is now the newest
    clock.now = 11.5  # "b" (set at 1) has expired
    d.maxsize = 2
    assert calls == [("b", 1), ("c", 2), ("d", 3)]
    assert d._held() == 2 and dict(d.items()) == {"a": 10, "e": 4}
    d["f"] = 5  # the next insert evicts one, not a backlog
    assert calls[3:] == [("e", 4)] and sorted(d) == ["a", "f"]
    d.maxsize = 5  # raising it evicts nothing
    d.maxsize = None
    assert calls[4:] == [] and len(d) == 2
    d._check()


def test_lowering_maxsize_with_a_raising_on_expire(impl):
    clock = Clock()
    seen = []

    def boom(k, v):
        seen.append(k)
        raise LookupError(k)

    d = impl.TTLDict(10, clock=clock, on_expire=boom)
    for k in "abc":
        d[k] = 0
    with pytest.raises(LookupError, match="^a$"):
        d.maxsize = 1
    assert seen == ["a", "b"] and d.maxsize == 1 and list(d) == ["c"]
    d._check()


def test_maxsize_refusals_agree_in_constructor_and_setter(impl):
    d = impl.TTLDict(5, maxsize=3)
    for bad in (0, -1, -(2**70)):
        msg = f"^maxsize must be at least 1 or None, got {bad}$"
        with pytest.raises(ValueError, match=msg):
            impl.TTLDict(5, maxsize=bad)
        with pytest.raises(ValueError, match=msg):
            d.maxsize = bad
    assert d.maxsize == 3


def test_stateful_every_expired_or_evicted_entry_is_reported_once(impl):
    TTL = 10.0

    class ReportMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = Clock()
            self.seq = 0
            self.reported = []
            self.d = impl.TTLDict(
                TTL, maxsize=5, clock=self.clock, on_expire=lambda k, v: self.reported.append((k, v))
            )
            self.model: dict[int, tuple[int, float]] = {}  # key -> (value, set at), still held
            self.expected = []
            self.maxsize = 5

        def _dead(self, k):
            return self.model[k][1] + TTL <= self.clock.now

        def _report_dead(self):
            dead = sorted((k for k in self.model if self._dead(k)), key=lambda k: self.model[k][0])
            for k in dead:
                self.expected.append((k, self.model.pop(k)[0]))

        def _evict(self):
            if self.maxsize is not None and len(self.model) > self.maxsize:
                self._report_dead()
                while len(self.model) > self.maxsize:
                    oldest = min(self.model, key=lambda k: self.model[k][1:] + self.model[k][:1])
                    self.expected.append((oldest, self.model.pop(oldest)[0]))

        def _sweep(self):
            # a set drops up to SWEEP expired entries, oldest set first
            dead = sorted((k for k in self.model if self._dead(k)), key=lambda k: self.model[k][0])
            for k in dead[:SWEEP]:
                self.expected.append((k, self.model.pop(k)[0]))

        @rule(k=st.integers(0, 7), how=st.sampled_from(["set", "setdefault"]))
        def set(self, k, how):
            self.seq += 1  # values are unique: each names one entry, and sorts by set order
            if k in self.model and self._dead(k):
                self.expected.append((k, self.model.pop(k)[0]))
            if how == "setdefault" and k in self.model:
                assert self.d.setdefault(k, self.seq) == self.model[k][0]
                return
            self.model[k] = (self.seq, self.clock.now)
            if how == "set":
                self.d[k] = self.seq
            else:
                assert self.d.setdefault(k, self.seq) == self.seq
            self._sweep()
            self._evict()

        @rule(k=st.integers(0, 7))
        def delete(self, k):
            if k in self.model and not self._dead(k):
                del self.d[k]
                del self.model[k]
            else:
                with pytest.raises(KeyError):
                    del self.d[k]

        @rule(step=st.sampled_from([0.0, 1.0, 4.0, 10.0]))
        def advance(self, step):
            self.clock.now += step

        @rule()
        def expire(self):
            before = len(self.expected)
            self._report_dead()
            assert sorted(self.d.expire()) == sorted(self.expected[before:])

        @rule()
        def purging_read(self):
            self._report_dead()
            assert len(self.d) == len(self.model)

        @rule(maxsize=st.sampled_from([None, 1, 2, 3, 5, 8]))
        def set_maxsize(self, maxsize):
            self.maxsize = maxsize
            self.d.maxsize = maxsize
            self._evict()

        @invariant()
        def each_entry_reported_once(self):
            assert sorted(self.reported) == sorted(self.expected)
            assert len(set(self.reported)) == len(self.reported)
            for k in range(8):  # these reads do not purge
                live = k in self.model and not self._dead(k)
                assert (k in self.d) == live
            self.d._check()

    run_state_machine_as_test(ReportMachine, settings=settings(max_examples=80, stateful_step_count=40))


def test_repr_and_mapping_methods(impl):
    d = impl.TTLDict(60, clock=Clock())
    d.update(a=1, b=2)
    assert d.pop("a") == 1 and d.setdefault("c", 3) == 3
    assert repr(d) == "<TTLDict held=2 ttl=60.0 maxsize=None>"
    assert d == {"b": 2, "c": 3}


def test_stateful_against_model(impl):
    class DictMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = Clock()
            self.seq = 0
            self.d = impl.TTLDict(10, maxsize=6, clock=self.clock)
            # key -> (value, set at, set order): what the mapping still holds
            self.model: dict[int, tuple[int, float, int]] = {}

        def _live(self):
            return {k: v[0] for k, v in self.model.items() if v[1] + 10 > self.clock.now}

        def _drop_dead(self):
            live = self._live()
            self.model = {k: v for k, v in self.model.items() if k in live}

        def _oldest_first(self, keys):
            return sorted(keys, key=lambda key: self.model[key][1:])

        @rule(k=st.integers(0, 9), v=st.integers())
        def set(self, k, v):
            self.seq += 1
            self.model.pop(k, None)  # set again: to the end
            self.model[k] = (v, self.clock.now, self.seq)
            self.d[k] = v
            live = self._live()
            for key in self._oldest_first(k for k in self.model if k not in live)[:SWEEP]:
                del self.model[key]  # the set's bounded sweep
            if len(self.model) > 6:
                self._drop_dead()  # expired entries go before any eviction
                while len(self.model) > 6:
                    del self.model[self._oldest_first(self.model)[0]]

        @rule(k=st.integers(0, 9))
        def delete(self, k):
            if k in self._live():
                del self.d[k]
                del self.model[k]
            else:
                with pytest.raises(KeyError):
                    del self.d[k]

        @rule(step=st.sampled_from([0.0, 0.5, 1.0, 3.0, 10.0]))
        def advance(self, step):
            self.clock.now += step

        @rule()
        def expire(self):
            live = self._live()
            dead = {k: v[0] for k, v in self.model.items() if k not in live}
            got = self.d.expire()
            assert dict(got) == dead and len(got) == len(dead)
            self._drop_dead()

        @rule()
        def purging_reads(self):
            live = self._live()
            assert len(self.d) == len(live)
            assert list(self.d.items()) == [(k, live[k]) for k in self._oldest_first(live)]
            self._drop_dead()

        @invariant()
        def reads_see_only_live_entries(self):
            live = self._live()
            for k in range(10):  # these reads do not purge
                assert (k in self.d) == (k in live)
                assert self.d.get(k) == live.get(k)
            self.d._check()

    run_state_machine_as_test(DictMachine, settings=settings(max_examples=80, stateful_step_count=40))


def test_no_reference_leak_over_a_million_operations(impl):
    import sys

    clock = Clock()
    seen = []
    d = impl.TTLDict(1.0, maxsize=500, clock=clock)
    key, value = object(), object()
    base, kbase = sys.getrefcount(value), sys.getrefcount(key)
    rounds = 1000 if impl.name == "c" else 200
    for r in range(rounds):  # c: 1000 x (1000 sets, 1000 gets, misses, sweeps, evictions)
        clock.now = float(r)
        d.on_expire = (lambda k, v: seen.append(v)) if r % 2 else None
        seen.clear()
        for k in range(1000):  # over maxsize: evictions too; the rounds before expired: sweeps
            d[k] = value
            d.get(k)
            k in d
            if k % 97 == 0:
                d[key] = value  # the same key again: holes
                d.pop(k, None)
        d.get("missing")
        if r % 3 == 0:
            d.popitem()
        clock.now += 0.5 * (r % 2)
        d.purge() if r % 4 else d.expire()
    clock.now += 10
    assert d.expire() != [] or len(d) == 0
    d.clear()
    seen.clear()
    assert sys.getrefcount(value) == base and sys.getrefcount(key) == kbase


def test_docstrings_identical(both):
    import importlib
    import inspect

    both  # the compiled core is required (or skipped) as for every twin test
    c, py = (
        importlib.import_module(name).TTLDictCore
        for name in ("dq_core._ttldictcore", "dq_core._ttldictcore_py")
    )
    for name in [
        "__doc__",
        "ttl",
        "maxsize",
        "on_expire",
        "clock",
        "clear",
        "get",
        "expire",
        "purge",
        "popitem",
        "next_expiry",
        "_keys",
        "_held",
        "_take",
        "__getstate__",
        "_check",
    ]:
        a = c.__doc__ if name == "__doc__" else getattr(c, name).__doc__
        b = py.__doc__ if name == "__doc__" else getattr(py, name).__doc__
        assert inspect.cleandoc(a) == inspect.cleandoc(b), name


def test_unhashable_keys_raise_type_error(impl):
    d = impl.TTLDict(10, clock=Clock())
    with pytest.raises(TypeError):
        d[[1]] = 1
    with pytest.raises(TypeError):
        d[[1]]
    with pytest.raises(TypeError):
        [1] in d


# -- time passing while it is iterated; threads without a lock --------------------------------


@pytest.mark.parametrize(
    "walk",
    [
        list,
        sorted,
        lambda d: list(d.keys()),
        lambda d: [k for k in d if len(d) >= 0],
        lambda d: list(iter(d)),
        lambda d: set(d),
        lambda d: [k for k in d.keys() if k in d],
    ],
)
def test_iteration_never_raises_because_time_passed(impl, walk):
    # Each clock reading is 1 later: an entry expires between the purge
    # that starts an iteration and the len() that sizes the list.
    clock = Clock(step=1.0)  # every reading 1 later
    d = impl.TTLDict(10, clock=clock)
    for i in range(40):
        d[i] = i
    for _ in range(40):
        keys = walk(d)
        assert set(keys) <= set(range(40))
    assert len(d) == 0 and list(d) == []


def test_iteration_may_yield_a_key_that_expired_meanwhile_but_values_skip_it(impl):
    clock = Clock()
    d = impl.TTLDict(10, clock=clock)
    d["a"], d["b"] = 1, 2
    it = iter(d)
    assert next(it) == "a"
    clock.now = 10.0
    assert len(d) == 0  # a purge while the iterator is live
    assert list(it) == ["b"]  # what was live when the walk began
    assert list(d.items()) == [] and list(d) == []


def test_changes_from_several_threads_are_each_atomic(impl, switch_often):
    # Not a reason to share one without a lock, but both implementations
    # must behave alike: the compiled core runs each change whole, so the
    # pure one must not refuse a change only because another thread's is
    # under way.
    d = impl.TTLDict(0.001, maxsize=64)

    def churn(k):
        def run():
            for i in range(3000):
                key = (k, i % 50)
                d[key] = i
                d.get(key)
                d.pop((k, (i + 7) % 50), None)
                if i % 100 == 0:
                    d.expire()
                    len(d)
                    list(d)

        return run

    from helpers import run_together

    run_together([churn(k) for k in range(4)], timeout=60)
    d._check()
