"""Differential fuzz: the compiled Heap and its pure twin in lockstep.

Every step runs on both heaps, with hostile user code made for each (a
priority whose ``__float__``/``__index__`` raises or re-enters the heap, a
payload whose ``__del__`` re-enters it, cyclic garbage with finalisers,
corrupt pickled states), and compares results, handles, exception types and
messages and the whole state, calling ``_check()`` on both after every step.
"""

from __future__ import annotations

import copy
import gc
import pickle
import re
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, rule, run_state_machine_as_test

from helpers import IdMatch

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is a test extra
    np = None


class Payload:
    """An item that may re-enter its heap from ``__del__``."""

    def __init__(self, heap, tag, action):
        self.heap = heap
        self.tag = tag
        self.action = action

    def __del__(self):
        h = self.heap
        if self.action == "push":
            h.push(0, ("from __del__", self.tag))
        elif self.action == "pop" and h:
            h.pop()


class Hostile:
    """A priority whose conversion raises or uses the heap being changed."""

    def __init__(self, heap, kind):
        self.heap = heap
        self.kind = kind

    def _act(self):
        h = self.heap
        if self.kind == "raise":
            raise ZeroDivisionError("boom")
        if self.kind == "push":
            h.push(-1, "from conversion")
        elif self.kind == "pop" and h:
            h.pop()
        elif self.kind == "clear":
            h.clear()

    def __float__(self):
        self._act()
        return 0.5


class HostileIndex(Hostile):
    def __index__(self):
        self._act()
        return 3


class Garbage(Payload):
    """Cyclic garbage whose finaliser re-enters the heap at the next collection."""

    def __init__(self, heap, action):
        super().__init__(heap, "gc", action)
        self.cycle = self


PLAIN_PRIORITIES = [
    2**53,
    -(2**53),
    2**53 + 1,
    2**70,
    True,
    False,
    "1",
    None,
    b"x",
    1 + 2j,
    Decimal("1.5"),
    Decimal("nan"),
    Decimal("snan"),
    Fraction(1, 3),
    float("inf"),
    -float("inf"),
    float("nan"),
    -0.0,
]
HOSTILE = ["raise", "push", "pop", "clear"]
NUMPY = ["np.float64", "np.int64", "np.float32 nan"] if np is not None else []

priorities = st.one_of(
    st.integers(-4, 4),
    st.floats(width=16),
    st.sampled_from(range(len(PLAIN_PRIORITIES))).map(lambda i: ("plain", i)),
    st.tuples(st.sampled_from(["float", "index"]), st.sampled_from(HOSTILE)),
    *([st.sampled_from(NUMPY).map(lambda k: ("numpy", k))] if NUMPY else []),
)
items = st.one_of(st.integers(0, 99), st.tuples(st.just("del"), st.sampled_from(["none", "push", "pop"])))
bad_handles = st.sampled_from([-1, 2**32, 2**64, 2**64 - 1, 2**70, -(2**70), 1.0, "0", None, True])
counts = st.one_of(st.integers(0, 6), st.sampled_from([2**70, -1, 1.5, True, "2", None]))

# pieces of a state that a corruption may put in
WEIRD = [
    None,
    -1,
    0,
    1,
    2**32,
    2**64,
    2**70,
    0xFFFFFFFF,
    1.0,
    float("nan"),
    float("inf"),
    "x",
    True,
    [],
    [0],
    [(0, 1.0, 0, "x")],
    [(0, "1", 0, "x")],
    [(5, 1.0, 0, "x")],
    (),
]


def make_priority(spec, heap):
    if isinstance(spec, tuple):
        kind, what = spec
        if kind == "plain":
            return PLAIN_PRIORITIES[what]
        if kind == "numpy":
            return {
                "np.float64": np.float64(1.25),
                "np.int64": np.int64(-3),
                "np.float32 nan": np.float32("nan"),
            }[what]
        return (Hostile if kind == "float" else HostileIndex)(heap, what)
    return spec


class Tags:
    """Turns results into comparable values: payloads by tag, handles as ints."""

    def __init__(self):
        self.count = 0

    def make_item(self, spec, heap):
        if isinstance(spec, tuple):
            self.count += 1
            return Payload(heap, self.count, spec[1])
        return spec


def norm(value):
    if isinstance(value, Payload):
        return ("payload", value.tag, value.action)
    if isinstance(value, (list, tuple)):
        return type(value)(norm(v) for v in value)
    if isinstance(value, float) and value != value:
        return "nan"
    return value


def outcome(fn):
    try:
        return ("ok", norm(fn()))
    except Exception as exc:  # noqa: BLE001 - compared between the twins
        return (type(exc).__name__, str(exc))


def comparable_outcome(result):
    """An outcome with a handle's number in a KeyError's message made ``handle N``."""
    kind, value = result
    if kind == "KeyError":
        return kind, re.sub(r"handle -?\d+", "handle N", value)
    return result


def corrupt(state, where, value):
    """``state`` with one field, or one part of one entry, replaced."""
    state = list(state)
    field, entry, part = where
    if entry is None or not state[5]:
        state[field] = value
    else:
        live = [list(e) for e in state[5]]
        live[entry % len(live)][part] = value
        state[5] = [tuple(e) for e in live]
    return tuple(state)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_twins_in_lockstep(both):
    c_impl, py_impl = both

    class Lockstep(RuleBasedStateMachine):
        handles = Bundle("handles")

        def __init__(self):
            super().__init__()
            self.heaps = [c_impl.Heap(), py_impl.Heap()]
            self.tags = [Tags(), Tags()]
            self.ids = IdMatch()  # handles: the compiled heap's, made the pure one's

        def handle(self, h, handle):
            return handle if h is self.heaps[0] else self.ids.for_second(handle)

        def run(self, step, issues=False):
            """Run ``step(heap, tags)`` on both; return the common outcome (the first's).

            ``issues``: the step returns a handle, the same on both but for its id.
            """
            results = []
            for i in range(2):
                results.append(outcome(lambda: step(self.heaps[i], self.tags[i])))
            if issues and results[0][0] == results[1][0] == "ok":
                assert self.ids.same_handles(results[0][1], results[1][1])
            else:
                assert comparable_outcome(results[0]) == comparable_outcome(results[1])
            states = []
            for h in self.heaps:
                h._check()
                v, seq, epoch, tags, free, live = h.__getstate__()
                states.append((len(h), bool(h), norm((v, seq, epoch, free, live)), repr(h), tags))
            assert states[0][:-1] == states[1][:-1]
            assert self.ids.same_tags(states[0][-1], states[1][-1])
            return results[0]

        @rule(target=handles, p=priorities, item=items)
        def push(self, p, item):
            kind, value = self.run(
                lambda h, t: h.push(make_priority(p, h), t.make_item(item, h)), issues=True
            )
            return value if kind == "ok" else 0

        @rule(
            ps=st.lists(priorities, max_size=12),
            its=st.lists(items, max_size=12),
            form=st.sampled_from(["list", "tuple", "iter", "array"]),
        )
        def push_many(self, ps, its, form):
            def step(h, t):
                values = [make_priority(p, h) for p in ps]
                if form == "tuple":
                    values = tuple(values)
                elif form == "iter":
                    values = iter(values)
                elif form == "array" and all(type(v) is float for v in values):
                    values = np.array(values) if np is not None else values
                return h.push_many(values, [t.make_item(i, h) for i in its[: len(ps)]])

            self.run(step)

        @rule(op=st.sampled_from(["pop", "popitem", "peek", "peekitem", "len", "bool", "clear"]))
        def simple(self, op):
            self.run(lambda h, t: {"len": len, "bool": bool}.get(op, lambda h: getattr(h, op)())(h))

        @rule(n=counts)
        def pop_many(self, n):
            self.run(lambda h, t: h.pop_many(n))

        @rule(handle=st.one_of(handles, bad_handles), p=priorities)
        def update(self, handle, p):
            self.run(lambda h, t: h.update(self.handle(h, handle), make_priority(p, h)))

        @rule(handle=st.one_of(handles, bad_handles), op=st.sampled_from(["remove", "priority", "contains"]))
        def by_handle(self, handle, op):
            if op == "contains":
                self.run(lambda h, t: self.handle(h, handle) in h)
            else:
                self.run(lambda h, t: getattr(h, op)(self.handle(h, handle)))

        @rule(how=st.sampled_from(["copy", "deepcopy", "pickle", "swap states"]))
        def copy_round_trip(self, how):
            c, py = self.heaps
            if how in ("swap states", "pickle") and any(
                isinstance(e[3], Payload) for h in self.heaps for e in h.__getstate__()[5]
            ):
                return  # payloads that point back at their own heap: not portable
            if how == "swap states":
                # each loads the other's state: cross-implementation loading
                c_state, py_state = c.__getstate__(), py.__getstate__()
                c.__setstate__(py_state)
                py.__setstate__(c_state)
            elif how == "pickle":
                for i, impl in enumerate(both):
                    loaded = pickle.loads(pickle.dumps(self.heaps[i]))
                    self.heaps[i] = impl.Heap()
                    self.heaps[i].__setstate__(loaded.__getstate__())
            else:
                fn = copy.copy if how == "copy" else copy.deepcopy
                self.heaps = [fn(h) for h in self.heaps]
                assert [type(h) for h in self.heaps] == [c_impl.Heap, py_impl.Heap]
            self.run(lambda h, t: None)

        @rule(
            where=st.tuples(st.integers(0, 5), st.one_of(st.none(), st.integers(0, 9)), st.integers(0, 3)),
            value=st.sampled_from(range(len(WEIRD))),
        )
        def setstate(self, where, value):
            self.run(lambda h, t: h.__setstate__(corrupt(h.__getstate__(), where, WEIRD[value])))

        @rule(action=st.sampled_from(["push", "pop"]))
        def gc_finaliser(self, action):
            def step(h, t):
                Garbage(h, action)
                # automatic collection is off, so the garbage is young: a
                # cheap collection of the youngest generation runs __del__
                gc.collect(0)

            self.run(step)

    gc.collect()
    gc.disable()  # collections only where a step asks: the same for both heaps
    try:
        run_state_machine_as_test(Lockstep, settings=settings(max_examples=80, stateful_step_count=40))
    finally:
        gc.enable()
