"""Heap with pushes in pop order: the compiled core's sorted run and every way out of it.

While every push comes no earlier than the last one (a constant delay),
the compiled Heap keeps its entries as a sorted run that pop advances
through (see ``src/_heapcore.pyx``); an out-of-order push, an update or a
removal inside the run turns it back into a binary heap.  The pure twin has
no run.  These tests drive both through those transitions (the run's start
moving, its arrays growing, shrinking and wrapping to the start) and check
every result, every handle's priority and the drained order against a
model, and ``_check()`` after each step.
"""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)


class Model:
    """The heap's expected content: handle -> (priority, sequence, item)."""

    def __init__(self, heap):
        self.heap = heap
        self.entries: dict[int, tuple[float, int, object]] = {}
        self.seq = 0

    def push(self, p, item):
        handle = self.heap.push(p, item)
        assert handle not in self.entries
        self.entries[handle] = (float(p), self.seq, item)
        self.seq += 1
        return handle

    def order(self):
        return sorted(self.entries, key=lambda h: self.entries[h][:2])

    def pop(self):
        handle = self.order()[0]
        p, _, item = self.entries.pop(handle)
        assert self.heap.popitem() == (p, item)

    def remove(self, handle):
        assert self.heap.remove(handle) == self.entries.pop(handle)[2]

    def update(self, handle, p):
        self.heap.update(handle, p)
        self.entries[handle] = (float(p), self.seq, self.entries[handle][2])
        self.seq += 1

    def check(self):
        h = self.heap
        h._check()
        assert len(h) == len(self.entries)
        for handle, (p, _, _) in self.entries.items():
            if isinstance(handle, int):  # push_many returns no handles
                assert h.priority(handle) == p
        if self.entries:
            first = self.entries[self.order()[0]]
            assert h.peekitem() == (first[0], first[2])

    def drain(self):
        expected = [(self.entries[k][0], self.entries[k][2]) for k in self.order()]
        got = []
        while self.heap:
            got.append(self.heap.popitem())
        assert got == expected
        self.entries.clear()
        self.heap._check()


def in_order(model, k, start=0.0, step=1.0):
    return [model.push(start + i * step, f"x{i}") for i in range(k)]


def test_pop_advances_through_a_run_that_wraps_to_the_start(impl):
    m = Model(impl.Heap())
    in_order(m, 8)  # the arrays' first size
    for _ in range(5):
        m.pop()
    m.check()
    in_order(m, 6, start=10.0)  # room at the start: the run moves there
    m.check()
    m.drain()


def test_a_run_that_grows_with_its_start_moved(impl):
    m = Model(impl.Heap())
    in_order(m, 8)
    m.pop()
    in_order(m, 9, start=8.0)  # no room: larger arrays, the run at their start
    m.check()
    m.drain()


def test_a_run_that_shrinks_with_its_start_moved(impl):
    m = Model(impl.Heap())
    in_order(m, 64)
    for _ in range(50):
        m.pop()
        m.check()
    in_order(m, 3, start=100.0)
    m.check()
    m.drain()


def test_equal_priorities_stay_first_in_first_out(impl):
    m = Model(impl.Heap())
    in_order(m, 20, step=0.0)
    for _ in range(7):
        m.pop()
    in_order(m, 20, step=0.0)
    m.check()
    m.drain()


@pytest.mark.parametrize("where", ["first", "last", "inside"])
def test_remove_from_a_moved_run(impl, where):
    m = Model(impl.Heap())
    handles = in_order(m, 12)
    for _ in range(3):
        m.pop()
    target = {"first": handles[3], "last": handles[-1], "inside": handles[7]}[where]
    m.remove(target)
    m.check()
    in_order(m, 4, start=11.0)  # still in order after what is left
    in_order(m, 2, start=-1.0)  # and out of order
    m.check()
    m.drain()


@pytest.mark.parametrize("new", [-5.0, 4.5, 100.0])
def test_update_in_a_moved_run(impl, new):
    m = Model(impl.Heap())
    handles = in_order(m, 12)
    for _ in range(4):
        m.pop()
    m.update(handles[6], new)
    m.check()
    in_order(m, 3, start=50.0)
    m.check()
    m.drain()


def test_out_of_order_push_after_the_start_moved(impl):
    m = Model(impl.Heap())
    in_order(m, 30)
    for _ in range(11):
        m.pop()
    m.push(15.5, "late")  # before the run's last entry
    m.check()
    for _ in range(10):
        m.pop()
        m.check()
    m.drain()


@pytest.mark.parametrize("keys", [[40.0, 41.0, 41.0, 42.0], [30.0, 50.0], [45.0, 44.0], [5.0]])
def test_push_many_onto_a_moved_run(impl, keys):
    m = Model(impl.Heap())
    in_order(m, 40)
    for _ in range(30):
        m.pop()
    m.heap.push_many(keys, [f"b{i}" for i in range(len(keys))])
    for i, k in enumerate(keys):
        m.entries[("bulk", i)] = (k, m.seq, f"b{i}")
        m.seq += 1
    m.heap._check()
    assert len(m.heap) == len(m.entries)
    m.drain()


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle", "state to the other twin"])
def test_copies_of_a_moved_run(both, impl, how):
    m = Model(impl.Heap())
    handles = in_order(m, 20)
    for _ in range(9):
        m.pop()
    h = m.heap
    if how == "copy":
        new = copy.copy(h)
    elif how == "deepcopy":
        new = copy.deepcopy(h)
    elif how == "pickle":
        new = pickle.loads(pickle.dumps(h))
    else:
        other = next(i for i in both if i.name != impl.name)
        new = other.Heap()
        new.__setstate__(h.__getstate__())
    assert new.__getstate__() == h.__getstate__()
    new._check()
    assert [new.priority(x) for x in handles[9:]] == [float(i) for i in range(9, 20)]
    new.push(19.0, "tie")
    new.push(3.0, "early")
    new._check()
    assert [new.pop() for _ in range(3)] == ["early", "x9", "x10"]
    m.check()  # the original is untouched
    m.drain()


def test_clear_and_empty_start_a_new_run(impl):
    m = Model(impl.Heap())
    in_order(m, 10)
    m.push(0.5, "out of order")
    m.heap.clear()
    m.entries.clear()
    in_order(m, 10, start=100.0)
    m.check()
    m.drain()
    in_order(m, 5, start=-3.0)
    m.check()
    m.drain()


DELTAS = st.sampled_from([0.0, 0.0, 0.25, 1.0, 1.0, 1.0, 3.0, -0.5, -4.0])


def test_stateful_mostly_in_order_against_model(impl):
    class RunMachine(RuleBasedStateMachine):
        handles = Bundle("handles")

        def __init__(self) -> None:
            super().__init__()
            self.m = Model(impl.Heap())
            self.last = 0.0

        def _next(self, delta):
            self.last += delta
            return self.last

        @rule(target=handles, deltas=st.lists(DELTAS, min_size=1, max_size=40))
        def push_run(self, deltas):
            return multiple(*[self.m.push(self._next(d), object()) for d in deltas])

        @rule(deltas=st.lists(DELTAS, max_size=30))
        def push_many(self, deltas):
            keys = [self._next(d) for d in deltas]
            items = [object() for _ in keys]
            self.m.heap.push_many(keys, items)
            for k, item in zip(keys, items):
                self.m.entries[("bulk", self.m.seq)] = (k, self.m.seq, item)
                self.m.seq += 1

        @rule(k=st.integers(1, 40))
        def pop(self, k):
            for _ in range(min(k, len(self.m.entries))):
                self.m.pop()

        @rule(n=st.integers(0, 12))
        def pop_many(self, n):
            order = self.m.order()[:n]
            expected = [self.m.entries[h][2] for h in order]
            assert self.m.heap.pop_many(n) == expected
            for h in order:
                del self.m.entries[h]

        @rule(handle=handles)
        def remove(self, handle):
            if handle in self.m.entries:
                self.m.remove(handle)
            else:
                with pytest.raises(KeyError):
                    self.m.heap.remove(handle)

        @rule(which=st.sampled_from(["first", "last"]))
        def remove_an_end(self, which):
            live = [h for h in self.m.order() if isinstance(h, int)]
            if live:
                self.m.remove(live[0] if which == "first" else live[-1])

        @rule(handle=handles, delta=DELTAS)
        def update(self, handle, delta):
            if handle in self.m.entries:
                self.m.update(handle, self._next(delta))

        @rule()
        def copy_back(self):
            new = copy.copy(self.m.heap)
            self.m.heap = new

        @rule()
        def clear(self):
            self.m.heap.clear()
            self.m.entries.clear()

        @invariant()
        def consistent(self):
            self.m.check()

    run_state_machine_as_test(RunMachine, settings=settings(max_examples=120, stateful_step_count=50))
