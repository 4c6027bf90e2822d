"""TTLDict: a MutableMapping whose entries expire, on both implementations."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


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
    assert len(d._data) == 0 and d.expire() == []


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

        @rule(k=st.integers(0, 9), v=st.integers())
        def set(self, k, v):
            live = self._live()
            if k not in self.model and len(self.model) >= 6:
                self._drop_dead()  # expired entries go before any eviction
                if len(self.model) >= 6:
                    oldest = min(self.model, key=lambda key: self.model[key][1:])
                    del self.model[oldest]
            self.seq += 1
            self.model[k] = (v, self.clock.now, self.seq)
            self.d[k] = v

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
            assert dict(self.d.items()) == live
            self._drop_dead()

        @invariant()
        def reads_see_only_live_entries(self):
            live = self._live()
            for k in range(10):  # these reads do not purge
                assert (k in self.d) == (k in live)
                assert self.d.get(k) == live.get(k)
            self.d._ring._check()

    run_state_machine_as_test(
        DictMachine, settings=settings(max_examples=80, stateful_step_count=40)
    )


def test_no_reference_leak_over_a_million_operations(impl):
    import sys

    clock = Clock()
    d = impl.TTLDict(1.0, maxsize=500, clock=clock)
    value = object()
    base = sys.getrefcount(value)
    rounds = 1000 if impl.name == "c" else 200
    for r in range(rounds):  # c: 1000 x (1000 sets, 1000 gets, misses, expiry)
        clock.now = float(r)
        for k in range(1000):  # over maxsize: evictions too
            d[k] = value
            d.get(k)
            k in d
        d.get("missing")
    clock.now += 10
    assert d.expire() != [] or len(d) == 0
    assert sys.getrefcount(value) == base


def test_docstrings_identical(both):
    import importlib
    import inspect

    both  # the compiled core is required (or skipped) as for every twin test
    c, py = (importlib.import_module(name).TTLDictCore
             for name in ("dq_core._ttlmap", "dq_core._ttlmap_py"))
    for name in ["__doc__", "ttl", "maxsize", "on_expire", "clock", "clear", "_purge", "_take",
                 "_popfirst", "__getstate__", "_check"]:
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
