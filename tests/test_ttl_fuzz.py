"""Differential fuzzing: compiled and pure TTLRing/TTLDict in lockstep.

Every step runs on both implementations and compares results, exception
types and messages, what finalisers and callbacks saw, and the whole state;
``_check()`` runs on both after every step.  User code is hostile: keys
whose ``__eq__``/``__hash__`` raise, re-enter the mapping or run the garbage
collector on finalisers that re-enter it; numbers whose ``__float__``
re-enters the ring.  The collector runs only where a step asks for it, so
both sides see it at the same point.
"""

from __future__ import annotations

import copy
import gc
import math
import pickle

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from clocks import FakeClock
from ttl_helpers import Finaliser


class Side:
    """One implementation's structure and the user code bound to it."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.log: list = []
        self.obj: object = None


def act(side: Side, action: str) -> None:
    d = side.obj
    if action == "raise":
        raise ValueError("hostile")
    if action == "clear":
        d.clear()
    elif action == "set":
        d[100] = "from user code"
    elif action == "del":
        d.pop(100, None)
    elif action == "len":
        side.log.append(("len", len(d)))
    elif action == "fin-set":
        Finaliser(lambda: d.__setitem__(101, "from a finaliser"), side.log)
        gc.collect(0)  # the collector is off (collector_off): the cycle is young
    elif action == "fin-clear":
        Finaliser(d.clear, side.log)
        gc.collect(0)  # the collector is off (collector_off): the cycle is young
    elif action == "push":
        d.push("from user code", 0.0)
    elif action == "expire":
        side.log.append(("expired", d.expire(math.inf)))
    elif action == "purge":
        side.log.append(("purged", d.purge(math.inf)))
    elif action == "fin-push":
        Finaliser(lambda: d.push("from a finaliser", 0.0), side.log)
        gc.collect(0)  # the collector is off (collector_off): the cycle is young


DICT_ACTIONS = ["raise", "clear", "set", "del", "len", "fin-set", "fin-clear"]
RING_ACTIONS = ["raise", "push", "expire", "purge", "fin-push"]


class Key:
    """Hashes collide in threes; __eq__/__hash__ run one armed action each."""

    def __init__(self, name: int, side: Side) -> None:
        self.name = name
        self.side = side
        self.on_eq = None
        self.on_hash = None

    def __hash__(self) -> int:
        action, self.on_hash = self.on_hash, None
        if action is not None:
            act(self.side, action)
        return self.name % 3

    def __eq__(self, other: object) -> bool:
        action, self.on_eq = self.on_eq, None
        if action is not None:
            act(self.side, action)
        return isinstance(other, Key) and other.name == self.name

    def __repr__(self) -> str:
        return f"Key({self.name})"


class Num:
    """A created_at or now whose __float__ runs an action on its ring."""

    def __init__(self, value: float, side: Side, action: str) -> None:
        self.value = value
        self.side = side
        self.action = action

    def __float__(self) -> float:
        act(self.side, self.action)
        return self.value


def norm(x):
    if isinstance(x, Key):
        return ("Key", x.name)
    if isinstance(x, (list, tuple)):
        return type(x)(norm(i) for i in x)
    if isinstance(x, dict):
        return sorted((repr(norm(k)), norm(v)) for k, v in x.items())
    return x


def outcome(fn):
    try:
        return ("ok", norm(fn()))
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc))


NUMBERS = st.one_of(
    st.floats(-5, 40, allow_nan=False),
    st.integers(-5, 40),
    st.sampled_from([math.nan, math.inf, -math.inf, 2**53 + 1, "soon", None]),
)


@pytest.fixture
def collector_off():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def test_ttldict_lockstep(both, collector_off):
    c, py = both

    class DictMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.sides = []
            for impl in (c, py):
                side = Side()
                side.obj = impl.TTLDict(10, maxsize=5, clock=side.clock, on_expire=self._callback(side))
                side.keys = [Key(i, side) for i in range(6)]
                side.raise_in_callback = False
                self.sides.append(side)

        @staticmethod
        def _callback(side):
            def on_expire(key, value):
                side.log.append(("on_expire", norm(key), value))
                if side.raise_in_callback:
                    raise LookupError(f"callback {norm(key)}")

            return on_expire

        def same(self, fn):
            got = [outcome(lambda s=s: fn(s)) for s in self.sides]
            assert got[0] == got[1], got
            return got[0]

        def key(self, k):
            return (lambda s: s.keys[k]) if k < 6 else (lambda s: k)

        @rule(k=st.integers(0, 8), v=st.integers(0, 3))
        def set(self, k, v):
            key = self.key(k)
            self.same(lambda s: s.obj.__setitem__(key(s), v))

        @rule(k=st.integers(0, 8), how=st.sampled_from(["get", "in", "del", "pop", "[]", "setdefault"]))
        def read_or_remove(self, k, how):
            key = self.key(k)
            ops = {
                "get": lambda s: s.obj.get(key(s)),
                "in": lambda s: key(s) in s.obj,
                "del": lambda s: s.obj.__delitem__(key(s)),
                "pop": lambda s: s.obj.pop(key(s), "absent"),
                "[]": lambda s: s.obj[key(s)],
                "setdefault": lambda s: s.obj.setdefault(key(s), 9),
            }
            self.same(ops[how])

        @rule(
            k=st.integers(0, 5), action=st.sampled_from(DICT_ACTIONS), where=st.sampled_from(["eq", "hash"])
        )
        def arm(self, k, action, where):
            for s in self.sides:
                setattr(s.keys[k], "on_" + where, action)

        @rule(
            k=st.integers(0, 5),
            action=st.sampled_from(DICT_ACTIONS),
            where=st.sampled_from(["eq", "hash"]),
            ahead=st.sampled_from([5.0, 10.0, 20.0]),
            how=st.sampled_from(["expire", "purge", "len", "set"]),
        )
        def purge_with_an_armed_key(self, k, action, where, ahead, how):
            self.arm(k, action, where)
            ops = {
                "expire": lambda s: s.obj.expire(s.clock.now + ahead),
                "purge": lambda s: s.obj.purge(s.clock.now + ahead),
                "len": lambda s: (s.clock.__setattr__("now", s.clock.now + ahead), len(s.obj)),
                "set": lambda s: s.obj.__setitem__(s.keys[(k + 1) % 6], ahead),
            }
            self.same(ops[how])

        @rule(step=st.sampled_from([0.0, 0.5, 2.0, 5.0, 10.0]))
        def advance(self, step):
            for s in self.sides:
                s.clock.now += step

        @rule(now=NUMBERS, how=st.sampled_from(["expire", "purge"]))
        def expire(self, now, how):
            self.same(lambda s: getattr(s.obj, how)(now))

        @rule(
            how=st.sampled_from(
                ["len", "items", "values", "keys", "popitem", "eq", "clear", "next_expiry", "repr"]
            )
        )
        def whole(self, how):
            ops = {
                "len": lambda s: len(s.obj),
                "items": lambda s: list(s.obj.items()),
                "values": lambda s: list(s.obj.values()),
                "keys": lambda s: list(s.obj),
                "popitem": lambda s: s.obj.popitem(),
                "eq": lambda s: s.obj == {},
                "clear": lambda s: s.obj.clear(),
                "next_expiry": lambda s: s.obj.next_expiry(),
                "repr": lambda s: repr(s.obj),
            }
            self.same(ops[how])

        @rule(
            attr=st.sampled_from(["ttl", "maxsize", "on_expire", "clock"]),
            value=st.sampled_from([0, 1, 3, 2.5, -1, None, "x", math.nan, 7, print]),
        )
        def setter(self, attr, value):
            if attr in ("on_expire", "clock") and callable(value):
                return  # keep the fake clock and the recording callback
            self.same(lambda s: setattr(s.obj, attr, value))
            self.same(lambda s: getattr(s.obj, attr) if attr in ("ttl", "maxsize") else None)

        @rule(
            ttl=st.sampled_from([0.0, 4.0, 10.0]),
            action=st.sampled_from(DICT_ACTIONS),
            how=st.sampled_from(["ttl", "expire"]),
        )
        def hostile_number(self, ttl, action, how):
            if how == "ttl":
                self.same(lambda s: setattr(s.obj, "ttl", Num(ttl, s, action)))
            else:
                self.same(lambda s: s.obj.expire(Num(s.clock.now + ttl, s, action)))

        @rule(flag=st.booleans())
        def callback_raises(self, flag):
            for s in self.sides:
                s.raise_in_callback = flag

        @rule(action=st.sampled_from(["fin-set", "fin-clear"]))
        def finaliser_between_steps(self, action):
            self.same(lambda s: act(s, action))

        @invariant()
        def consistent(self):
            for s in self.sides:
                s.obj._check()
            states = [norm(s.obj.__getstate__()[1:3] + s.obj.__getstate__()[5:]) for s in self.sides]
            assert states[0] == states[1]
            assert norm(self.sides[0].log) == norm(self.sides[1].log)

    run_state_machine_as_test(DictMachine, settings=settings(max_examples=30, stateful_step_count=30))


def test_ttlring_lockstep(both, collector_off):
    c, py = both

    class RingMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.sides = []
            for impl in (c, py):
                side = Side()
                side.obj = impl.TTLRing(5, segment_size=3, clock=side.clock)
                self.sides.append(side)
            self.n = 0

        def same(self, fn):
            got = [outcome(lambda s=s: fn(s)) for s in self.sides]
            assert got[0] == got[1], got
            return got[0]

        @rule(k=st.integers(1, 8), created=NUMBERS)
        def push(self, k, created):
            for _ in range(k):
                self.n += 1
                n = self.n
                self.same(lambda s: s.obj.push(n, created))

        @rule(created=st.floats(0, 30), action=st.sampled_from(RING_ACTIONS))
        def push_hostile(self, created, action):
            self.same(lambda s: s.obj.push("hostile", Num(created, s, action)))

        @rule(now=NUMBERS, cap=st.sampled_from([-1, 0, 1, 2, 2**70, 1.5, "x"]))
        def expire(self, now, cap):
            self.same(lambda s: s.obj.expire(now, cap))

        @rule(now=NUMBERS)
        def purge(self, now):
            self.same(lambda s: s.obj.purge(now))

        @rule(now=st.floats(0, 30), action=st.sampled_from(RING_ACTIONS))
        def expire_hostile(self, now, action):
            self.same(lambda s: s.obj.expire(Num(now, s, action)))

        @rule()
        def popleft(self):
            self.same(lambda s: s.obj.popleft())

        @rule(ttl=st.sampled_from([0, 1, 5.0, 50, -1, math.nan, math.inf, "x"]))
        def set_ttl(self, ttl):
            self.same(lambda s: setattr(s.obj, "ttl", ttl))

        @rule(step=st.floats(0, 10))
        def advance(self, step):
            for s in self.sides:
                s.clock.now += step

        @rule(how=st.sampled_from(["copy", "deepcopy", "pickle", "cross"]))
        def copy_roundtrip(self, how):
            for s, other in zip(self.sides, (py, c)):
                if how == "copy":
                    s.obj = copy.copy(s.obj)
                elif how == "deepcopy":
                    s.obj = copy.deepcopy(s.obj)  # its clock too: frozen from now on
                elif how == "pickle":  # loads as dq_core.TTLRing: move it back
                    loaded = pickle.loads(pickle.dumps(s.obj))
                    s.obj = type(s.obj).__new__(type(s.obj))
                    s.obj.__setstate__(loaded.__getstate__())
                else:  # the state loads in the other implementation and back
                    o = other.TTLRing.__new__(other.TTLRing)
                    o.__setstate__(s.obj.__getstate__())
                    s.obj.__setstate__(o.__getstate__())

        @invariant()
        def consistent(self):
            for s in self.sides:
                s.obj._check()
            a, b = (norm(s.obj.__getstate__()[4:]) for s in self.sides)
            assert a == b
            assert self.sides[0].obj.stats() == self.sides[1].obj.stats()
            assert repr(self.sides[0].obj) == repr(self.sides[1].obj)
            assert norm(self.sides[0].log) == norm(self.sides[1].log)

    run_state_machine_as_test(RingMachine, settings=settings(max_examples=40, stateful_step_count=30))
