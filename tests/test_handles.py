"""The handle table shared by Heap and TimingWheel: one set of rules, two halves.

``dq_core._handles`` (Python, used by the pure twins) and ``src/_handles.pxd``
(C, cimported by the compiled cores) must hold the same constants and apply
the same guards to both structures.
"""

from __future__ import annotations

import importlib

import pytest
from clocks import FakeClock

from dq_core import _handles
from dq_core._handles import GEN_LIMIT, LIVE, MAX_SLOTS, MIN_SLOTS, NIL, SLOT_BITS, Handles

from conftest import _load, compiled_or_skip

FULL = {"Heap": "a Heap holds at most 2**31 - 1 items",
        "TimingWheel": "a TimingWheel holds at most 2**31 - 1 timers"}


def make(impl, kind):
    if kind == "Heap":
        return impl.Heap()
    return impl.TimingWheel(tick=1.0, wheel_size=4, clock=FakeClock())


def add(s, i):
    return s.push(i, i) if type(s).__name__ == "Heap" else s.schedule(i, 1.0 + i)


def drop(s, h):
    if type(s).__name__ == "Heap":
        s.remove(h)
    else:
        assert s.cancel(h)


# -- the two halves agree -------------------------------------------------------


def test_compiled_constants_are_the_python_ones():
    compiled_or_skip()
    for name in ("_heapcore", "_wheelcore"):
        module = importlib.import_module(f"dq_core.{name}")
        assert module.HANDLE_CONSTANTS == _handles.CONSTANTS, name


def test_constants_describe_the_handle_layout():
    assert _handles.SLOT_MASK == (1 << SLOT_BITS) - 1
    assert GEN_LIMIT <= _handles.SLOT_MASK  # a generation fits above the slot
    assert _handles.HANDLE_LIMIT == 1 << (2 * SLOT_BITS)
    assert MAX_SLOTS == 2**31 - 1 and MAX_SLOTS <= _handles.SLOT_MASK
    assert MIN_SLOTS < _handles.RESET_MIN_SLOTS


def python_next_cap(kind):
    return lambda cap: _handles.next_cap(cap, FULL[kind])


def compiled_next_cap(kind):
    compiled_or_skip()
    return importlib.import_module("dq_core._heapcore" if kind == "Heap" else "dq_core._wheelcore")._next_slot_cap


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
@pytest.mark.parametrize("side", [python_next_cap, compiled_next_cap], ids=["py", "c"])
def test_one_slot_limit_for_both_structures(side, kind):
    next_cap = side(kind)
    assert next_cap(MIN_SLOTS) == 2 * MIN_SLOTS
    assert next_cap(2**30 - 1) == 2**31 - 2
    assert next_cap(2**30) == MAX_SLOTS
    for cap in (MAX_SLOTS, MAX_SLOTS + 1, 2**40):
        with pytest.raises(MemoryError) as info:
            next_cap(cap)
        assert str(info.value) == FULL[kind]


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_pure_structures_stop_at_the_limit_and_stay_valid(monkeypatch, kind):
    # the limit made small: the structure refuses the next item and is
    # left as it was
    monkeypatch.setattr(_handles, "MAX_SLOTS", 2 * MIN_SLOTS)
    s = make(_load("py"), kind)
    handles = [add(s, i) for i in range(2 * MIN_SLOTS)]
    with pytest.raises(MemoryError, match=r"2\*\*31 - 1"):
        add(s, 99)
    assert len(s) == 2 * MIN_SLOTS
    s._check()
    drop(s, handles[3])
    add(s, 100)  # a freed slot is still there to take
    s._check()


# -- the rules, seen through both structures on both implementations -------------


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_handles_go_stale_and_slots_are_reused(impl, kind):
    s = make(impl, kind)
    a = add(s, 1)
    b = add(s, 2)
    assert (a, b) == (0, 1)  # generation 0, slots 0 and 1
    drop(s, a)
    assert a not in s and b in s
    c = add(s, 3)
    assert c == (1 << SLOT_BITS) | 0  # slot 0 again, next generation
    assert a not in s and c in s
    s._check()


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
@pytest.mark.parametrize("handle", [-1, 2**64, 2**64 + 1, -(2**64), 2**200, 1 << SLOT_BITS, 5])
def test_unknown_handles_are_refused_alike(impl, kind, handle):
    s = make(impl, kind)
    add(s, 1)
    assert handle not in s


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_slot_at_the_generation_limit_is_retired(impl, kind):
    s = make(impl, kind)
    state = list(s.__getstate__())
    # gens, free: one slot one step from retirement, free
    gi = 3 if kind == "Heap" else 8
    state[gi], state[gi + 1] = [GEN_LIMIT - 1], [0]
    s.__setstate__(tuple(state))
    h = add(s, 1)
    assert h == 1  # slot 0 retired on the way, slot 1 made afresh
    assert s.__getstate__()[gi] == [GEN_LIMIT, 0]
    s._check()


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_an_emptied_big_table_starts_a_new_epoch(impl, kind):
    s = make(impl, kind)
    n = _handles.RESET_MIN_SLOTS + 1
    handles = [add(s, i) for i in range(n)]
    for h in handles[:-1]:
        drop(s, h)
    add(s, 0)  # slot reused: generation 1
    for h in list(handles[-1:]):
        drop(s, h)
    if kind == "Heap":
        s.pop()
    else:
        s.drain()
    epoch = s.__getstate__()[2 if kind == "Heap" else 7]
    assert epoch == 2
    assert add(s, 5) == 2 << SLOT_BITS
    assert all(h not in s for h in handles)
    s._check()


# -- the Python half on its own ----------------------------------------------------


def test_table_take_release_find():
    t = Handles()
    assert [t.take("") for _ in range(3)] == [0, 1, 2]
    assert t.links == [LIVE] * 3
    t.release(1)
    t.release(0)
    assert t.free_slots() == [0, 1] and t.find(0) == NIL and t.find(2) == 2
    assert t.take("") == 0 and t.gens[0] == 1 and t.handle(0) == 1 << SLOT_BITS
    assert t.find(1 << SLOT_BITS) == 0 and t.find(0) == NIL
    with pytest.raises(TypeError, match="handle must be an int, not 'float'"):
        t.find(0.0)
    assert t.find(True) == NIL  # an int subclass: its value, slot 1 is free
    _handles.check_table(t.gens, t.links, t.free, t.epoch, {0, 2})


def test_table_load_round_trips():
    t = Handles.load([3, GEN_LIMIT, 4, 3], [2, 3], 3)
    assert t.free_slots() == [2, 3] and t.links[0] == LIVE and t.links[1] == NIL
    assert t.take("") == 2 and t.gens[2] == 5
    _handles.check_table(t.gens, t.links, t.free, t.epoch, {0, 2})


def test_spent_only_for_big_tables_with_room_for_an_epoch():
    t = Handles()
    for _ in range(_handles.RESET_MIN_SLOTS):
        t.take("")
    assert t.spent() == NIL
    t.take("")
    assert t.spent() == 1
    t.gens[0] = GEN_LIMIT // 2
    assert t.spent() == NIL


def test_state_checks_claim_each_slot_once():
    gens = [0, GEN_LIMIT, 0]
    owner = bytearray(3)
    assert _handles.claim(owner, gens, 0)
    assert not _handles.claim(owner, gens, 0)  # twice
    assert not _handles.claim(owner, gens, 1)  # retired
    assert not _handles.claim(owner, gens, 3) and not _handles.claim(owner, gens, True)
    assert not _handles.all_claimed(owner, gens)
    assert _handles.claim(owner, gens, 2) and _handles.all_claimed(owner, gens)
    assert _handles.gens_valid([0, GEN_LIMIT], 0) and not _handles.gens_valid([1], 2)
    assert not _handles.gens_valid([GEN_LIMIT + 1], 0)
