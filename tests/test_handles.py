"""The handle table shared by Heap and TimingWheel: one set of rules, two halves.

``dq_core._handles`` (Python, used by the pure twins) and ``src/_handles.pxd``
(C, cimported by the compiled cores) must hold the same constants and apply
the same guards to both structures.
"""

from __future__ import annotations

import copy
import gc
import importlib
import pickle
import sys
import threading

import pytest

from clocks import FakeClock
from conftest import _load, compiled_or_skip
from dq_core import _handles
from dq_core._handles import (
    COMPACT_LIMIT,
    GEN_BITS,
    GEN_LIMIT,
    GEN_MASK,
    LIVE,
    MAX_SLOTS,
    MIN_SLOTS,
    NIL,
    SLOT_BITS,
    Handles,
    handle_of,
    new_cid,
    parts,
)
from helpers import cid_of, local_handle, run_together

FULL = {
    "Heap": "a Heap holds at most 2**31 - 1 items",
    "TimingWheel": "a TimingWheel holds at most 2**31 - 1 timers",
}


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
    assert GEN_LIMIT == _handles.GEN_MASK == (1 << GEN_BITS) - 1  # a generation fits above the slot
    assert SLOT_BITS + GEN_BITS == 64 and _handles.CID_LIMIT == 1 << 64
    assert _handles.TAG_LIMIT == _handles.CID_LIMIT << GEN_BITS
    assert _handles.HANDLE_LIMIT == 1 << 128 == _handles.TAG_LIMIT << SLOT_BITS
    assert MAX_SLOTS == 2**31 - 1 and MAX_SLOTS <= _handles.SLOT_MASK
    assert MIN_SLOTS < _handles.RESET_MIN_SLOTS
    # compact handles: an int of two 30-bit digits, below every wide one (no id is 0)
    c_bits = _handles.COMPACT_CID_BITS + _handles.COMPACT_GEN_BITS + _handles.COMPACT_SLOT_BITS
    assert COMPACT_LIMIT == 1 << c_bits == 1 << 60 and COMPACT_LIMIT < 1 << (GEN_BITS + SLOT_BITS)
    assert _handles.COMPACT_GEN_BITS <= GEN_BITS and _handles.COMPACT_SLOT_BITS <= SLOT_BITS
    assert _handles._C_SLOT_MASK == 0xFFFFFF  # the literal in Handles.find


def python_next_cap(kind):
    return lambda cap: _handles.next_cap(cap, FULL[kind])


def compiled_next_cap(kind):
    compiled_or_skip()
    return importlib.import_module(
        "dq_core._heapcore" if kind == "Heap" else "dq_core._wheelcore"
    )._next_slot_cap


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
    cid = cid_of(a)  # the container's id, above the generation and the slot
    assert cid > 0 and (a, b) == (handle_of(cid, 0, 0), handle_of(cid, 0, 1))  # generation 0, slots 0 and 1
    drop(s, a)
    assert a not in s and b in s
    c = add(s, 3)
    assert c == handle_of(cid, 1, 0)  # slot 0 again, next generation
    assert a not in s and c in s
    s._check()


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
@pytest.mark.parametrize(
    "handle",
    [
        -1,
        2**64,
        2**64 + 1,
        -(2**64),
        2**128,
        2**128 + 1,
        2**200,
        1 << SLOT_BITS,
        5,
        0,
        1 << 24,
        2**60,
        2**60 - 1,
    ],
)
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
    state[gi], state[gi + 1] = [1 << GEN_BITS | GEN_LIMIT - 1], [0]
    s.__setstate__(tuple(state))
    h = add(s, 1)
    cid = cid_of(h)  # the loaded container's own id
    assert local_handle(h) == (0, 1)  # slot 0 retired on the way, slot 1 made afresh
    assert s.__getstate__()[gi] == [cid << GEN_BITS | GEN_LIMIT, cid << GEN_BITS]
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
    assert add(s, 5) == handle_of(cid_of(handles[0]), 2, 0)
    assert all(h not in s for h in handles)
    s._check()


# -- the Python half on its own ----------------------------------------------------


def test_table_take_release_find():
    t = Handles(7)
    assert [t.take("") for _ in range(3)] == [0, 1, 2]
    assert t.links == [LIVE] * 3
    t.release(1)
    t.release(0)
    base = 7 << 44  # compact: cid << 44 | gen << 24 | slot
    assert t.free_slots() == [0, 1] and t.find(base) == NIL and t.find(base | 2) == 2
    assert t.find(2) == NIL  # slot 2 and generation 0, but no container id
    assert t.take("") == 0 and t.gens[0] == 1 and t.handle(0) == base | 1 << 24
    assert t.find(base | 1 << 24) == 0 and t.find(base) == NIL
    assert t.find(7 << 64 | 1 << SLOT_BITS) == 0  # its wide form names it too
    assert t.find(7 << 64 | 1 << 24) == NIL  # the compact layout under a wide id: no item
    assert t.find(8 << 44 | 1 << 24) == NIL and t.find(8 << 64 | 1 << SLOT_BITS) == NIL  # another container's
    with pytest.raises(TypeError, match="handle must be an int, not 'float'"):
        t.find(0.0)
    assert t.find(True) == NIL  # an int subclass: its value, slot 1 is free
    _handles.check_table(t.tags, t.links, t.free, t.epoch, {0, 2}, t.cid)


def test_table_load_round_trips():
    # ids 6 and 5 (copied items) in the tags, loaded by 9
    tags = [6 << GEN_BITS | 3, 6 << GEN_BITS | GEN_LIMIT, 6 << GEN_BITS | 4, 5 << GEN_BITS | 3]
    t = Handles.load(tags, [2, 3], 3, 9)
    assert t.free_slots() == [2, 3] and t.links[0] == LIVE and t.links[1] == NIL
    assert t.find(handle_of(6, 3, 0)) == 0  # the copied handle still names its item
    assert t.find(6 << 64 | 3 << SLOT_BITS) == 0  # in its wide form too
    assert t.take("") == 2 and t.gens[2] == 5 and t.tags[2] == 9 << GEN_BITS | 5
    assert t.take("") == 3 and t.tags[3] == 9 << GEN_BITS | 4  # ours from now on
    _handles.check_table(t.tags, t.links, t.free, t.epoch, {0, 2, 3}, t.cid)


def test_spent_only_for_big_tables_with_room_for_an_epoch():
    t = Handles(1)
    for _ in range(_handles.RESET_MIN_SLOTS):
        t.take("")
    assert t.spent() == NIL
    t.take("")
    assert t.spent() == 1
    t.handles[0] = (1 << GEN_BITS | GEN_LIMIT // 2) << SLOT_BITS
    assert t.spent() == NIL


@pytest.mark.parametrize("foreign_cid", [None, 0, 3, 9])
def test_spent_is_above_every_generation_copied_items_included(foreign_cid):
    # Container 5's table; slot 7 holds a copied item's tag (of container
    # foreign_cid) with the highest generation, slot 3 our own highest
    # handle: the epoch must clear the copied generation, whatever its id.
    n = _handles.RESET_MIN_SLOTS + 1
    tags = [5 << GEN_BITS | (s % 4) for s in range(n)]
    tags[3] = 5 << GEN_BITS | 20
    if foreign_cid is not None:
        tags[7] = foreign_cid << GEN_BITS | 30
    t = Handles.load(tags, list(range(n)), 0, 5)
    top = max(tag & GEN_MASK for tag in tags)
    assert t.spent() == top + 1 == (31 if foreign_cid is not None else 21)


def test_container_ids_are_never_given_twice():
    a, b = new_cid(), new_cid()
    assert 0 < a < b
    assert new_cid(above=b + 10) == b + 11  # past the ids of a loaded state
    assert new_cid() == b + 12


def test_state_checks_claim_each_slot_once():
    gens = [0, GEN_LIMIT, 0]
    owner = bytearray(3)
    assert _handles.claim(owner, gens, 0)
    assert not _handles.claim(owner, gens, 0)  # twice
    assert not _handles.claim(owner, gens, 1)  # retired
    assert not _handles.claim(owner, gens, 3) and not _handles.claim(owner, gens, True)
    assert not _handles.all_claimed(owner, gens)
    assert _handles.claim(owner, gens, 2) and _handles.all_claimed(owner, gens)
    one = 1 << GEN_BITS  # container id 1
    assert _handles.tags_valid([one, one | GEN_LIMIT], 0) and not _handles.tags_valid([one | 1], 2)
    assert _handles.tags_valid([3 << GEN_BITS | GEN_LIMIT], 0)
    assert not _handles.tags_valid([-1], 0) and not _handles.tags_valid([_handles.TAG_LIMIT], 0)
    assert not _handles.tags_valid([0], 0) and not _handles.tags_valid([GEN_LIMIT], 0)  # no id 0


# -- a handle names an item of the container that issued it, and of no other --------


def fill_alike(impl, kind, n=20):
    """A container fed ``n`` items, every third one taken out again: its handles."""
    s = make(impl, kind)
    handles = [add(s, i) for i in range(n)]
    for h in handles[::3]:
        drop(s, h)
    handles += [add(s, 100 + i) for i in range(3)]  # slots reused: later generations
    return s, handles


def untouched(s):
    return sorted(map(repr, s.__getstate__()[5 if type(s).__name__ == "Heap" else 10]))


def refuse_all(s, handles):
    """Every handle is refused by ``s`` the way a stale one is, and ``s`` stays as it was."""
    before = untouched(s)
    for h in handles:
        assert h not in s
        if type(s).__name__ == "Heap":
            for call in (s.remove, s.priority, lambda h: s.update(h, -1)):
                with pytest.raises(KeyError, match="stale or foreign handle"):
                    call(h)
        else:
            assert s.cancel(h) is False
    assert untouched(s) == before
    s._check()


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_another_container_s_handles_name_nothing_here(impl, kind):
    # two containers fed alike hold their items in the same slots and
    # generations; only the container id in a handle tells them apart
    a, mine = fill_alike(impl, kind)
    b, theirs = fill_alike(impl, kind)
    assert [local_handle(h) for h in mine] == [local_handle(h) for h in theirs]
    refuse_all(a, theirs)
    refuse_all(b, mine)
    live = [h for h in mine if h in a]
    assert len(live) == len(a) == 16
    for h in live:
        drop(a, h)  # a's own handles still work, every one
    assert len(a) == 0 and len(b) == 16


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_a_dead_container_s_handles_name_nothing_in_a_new_one(impl, kind):
    # ids are never given twice: a container made after another died is no heir
    s, old = fill_alike(impl, kind)
    del s
    gc.collect()
    new, _ = fill_alike(impl, kind)
    refuse_all(new, old)


def test_handles_do_not_cross_between_kinds_or_implementations(both):
    # one id counter for every structure of both implementations
    containers = []
    for impl in both:
        for kind in ("Heap", "TimingWheel"):
            containers.append(fill_alike(impl, kind))
    for i, (s, _) in enumerate(containers):
        refuse_all(s, [h for j, (_, hs) in enumerate(containers) if j != i for h in hs])


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_a_copy_keeps_the_old_handles_and_issues_its_own(impl, kind, how):
    s, handles = fill_alike(impl, kind)
    c = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": lambda x: pickle.loads(pickle.dumps(x))}[
        how
    ](s)
    live = [h for h in handles if h in s]
    assert [h in c for h in handles] == [h in s for h in handles]
    # both go on from the same slots and generations, under ids of their own
    new_s = [add(s, 200 + i) for i in range(8)]
    new_c = [add(c, 200 + i) for i in range(8)]
    assert [local_handle(h) for h in new_s] == [local_handle(h) for h in new_c]
    refuse_all(s, new_c)
    refuse_all(c, new_s)
    for h in live:  # an old handle takes out the item from each, separately
        drop(c, h)
        assert h not in c and h in s
    s._check()
    c._check()


def test_the_stale_or_foreign_message_is_the_same_on_both(both):
    messages = []
    for impl in both:
        h = impl.Heap()
        gone = h.push(1, "x")
        h.pop()
        out = []
        bare = handle_of(0, *local_handle(gone))  # its generation and slot, no container id
        for handle in (bare, 12345, -1, 2**200):
            with pytest.raises(KeyError) as info:
                h.remove(handle)
            out.append(info.value.args[0])
        messages.append(out)
        assert out[0] == (
            f"stale or foreign handle {bare}: its item has left this heap, or another container issued it"
        )
    assert messages[0] == messages[1]


def test_container_ids_are_unique_across_threads():
    got: list[int] = []
    lock = threading.Lock()

    def take():
        mine = [new_cid() for _ in range(2000)]
        with lock:
            got.extend(mine)

    run_together([take] * 4, timeout=30)
    assert len(set(got)) == len(got) == 8000


# -- the two forms: compact while the parts fit, wide past them ---------------------


def issued_under(monkeypatch, impl, kind, cid):
    """A new ``kind`` of ``impl`` whose container id is ``cid`` (made up: only its size matters here)."""
    core = ("_heapcore" if kind == "Heap" else "_wheelcore") + ("" if impl.name == "c" else "_py")
    monkeypatch.setattr(importlib.import_module(f"dq_core.{core}"), "new_cid", lambda above=0: cid)
    s = make(impl, kind)
    monkeypatch.undo()
    return s


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
@pytest.mark.parametrize("cid", [1, 2**16 - 1, 2**16, 2**64 - 1])
def test_a_handle_is_compact_while_its_parts_fit(monkeypatch, impl, kind, cid):
    s = issued_under(monkeypatch, impl, kind, cid)
    a, b = add(s, 1), add(s, 2)
    assert (a, b) == (handle_of(cid, 0, 0), handle_of(cid, 0, 1))
    if cid < 2**16:  # compact: an int of two digits, as small as an int below 2**60 gets
        assert a == cid << 44 and a < COMPACT_LIMIT and sys.getsizeof(a) == sys.getsizeof(2**59)
    else:
        assert a == cid << 64 and a >= 2**64
    drop(s, a)
    c = add(s, 3)  # slot 0 again, next generation, same form
    assert c == handle_of(cid, 1, 0) and parts(c) == (cid, 1, 0) and a not in s
    # the generation past compact's 20 bits: the wide form, which still names the item
    state = list(s.__getstate__())
    gi = 3 if kind == "Heap" else 8
    state[gi] = [cid << GEN_BITS | 2**20 - 2] + state[gi][1:]
    state[gi + 1] = [0] + [x for x in state[gi + 1] if x != 0]
    live = state[gi + 2]
    state[gi + 2] = [e for e in live if e[0] != 0]  # c's item leaves: slot 0 free
    s.__setstate__(tuple(state))
    assert b in s  # b's item was loaded with its tag: its handle still names it
    last_compact = add(s, 5)  # slot 0 at generation 2**20 - 1
    assert parts(last_compact)[1:] == (2**20 - 1, 0)
    drop(s, last_compact)
    wide = add(s, 6)  # generation 2**20: wide, whatever the id
    assert parts(wide)[1:] == (2**20, 0) and wide >= 2**64 and wide in s and last_compact not in s
    drop(s, wide)
    assert wide not in s
    s._check()


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_the_wide_form_of_a_compact_handle_names_its_item(monkeypatch, impl, kind):
    # a version 2 state pickled before compact handles: its handles were wide
    s = issued_under(monkeypatch, impl, kind, 77)
    h = add(s, 1)
    cid, gen, slot = parts(h)
    wide = cid << 64 | gen << 32 | slot
    assert h < COMPACT_LIMIT and wide in s
    assert (78 << 64 | gen << 32 | slot) not in s and (cid << 64 | (gen + 1) << 32 | slot) not in s
    drop(s, wide)
    assert h not in s and wide not in s
    s._check()


@pytest.mark.parametrize("kind", ["Heap", "TimingWheel"])
def test_a_version_1_state_is_refused_with_a_reason(impl, kind):
    # version 1 held bare generations (handles gen << 32 | slot): those could be
    # another container's compact handles, so such a state cannot be loaded
    s = make(impl, kind)
    add(s, 1)
    before = s.__getstate__()
    state = (1,) + before[1:]
    with pytest.raises(ValueError, match=rf"unsupported {kind} state version 1: its handles, made before"):
        s.__setstate__(state)
    assert s.__getstate__() == before
    # nor does a version 2 state with a tag of container id 0
    gi = 3 if kind == "Heap" else 8
    bad = list(before)
    bad[gi] = [before[gi][0] & GEN_MASK] + before[gi][1:]
    with pytest.raises(ValueError, match="invalid"):
        s.__setstate__(tuple(bad))
    assert s.__getstate__() == before


def test_load_plan_indexes_every_id_in_the_tags():
    tags = [5 << GEN_BITS | 1, 6 << GEN_BITS | GEN_LIMIT, 5 << GEN_BITS | 2, 9 << GEN_BITS]
    assert _handles.load_plan(tags) == ([5, 6, 9], [LIVE - 1, 2, LIVE - 1, LIVE - 3])
