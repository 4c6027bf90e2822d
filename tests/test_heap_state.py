"""Heap state: __setstate__ validation, copy, deepcopy and pickle on both twins."""

from __future__ import annotations

import copy
import pickle

import pytest

from dq_core._handles import GEN_LIMIT, TAG_LIMIT, handle_of
from helpers import cid_of, comparable_state, local_handle


def sample(impl):
    """A heap with a free slot, a live entry pair of equal keys and a gap."""
    h = impl.Heap()
    hs = [h.push(p, ("item", p)) for p in [4, 2, 2, 8, 1]]
    h.remove(hs[3])
    h.pop()
    return h, hs


def good_state(impl):
    return sample(impl)[0].__getstate__()


def with_field(st, i, value):
    return st[:i] + (value,) + st[i + 1 :]


def with_entry(st, j, **changes):
    live = [list(e) for e in st[5]]
    for k, v in changes.items():
        live[j]["slot key seq item".split().index(k)] = v
    return with_field(st, 5, [tuple(e) for e in live])


# state: (version, seq, epoch, tags, free, live); the sample has slots 0..4,
# free [3, 4], live [(1, 2.0, 1), (2, 2.0, 2), (0, 4.0, 0)]
BAD_STATES = {
    "not a tuple": lambda st: None,
    "a string": lambda st: "abcdef",
    "too short": lambda st: st[:5],
    "too long": lambda st: st + (0,),
    "version 3": lambda st: with_field(st, 0, 3),
    "version 1 with container ids": lambda st: with_field(st, 0, 1),
    "version True": lambda st: with_field(st, 0, True),
    "version '1'": lambda st: with_field(st, 0, "1"),
    "seq float": lambda st: with_field(st, 1, 5.0),
    "seq negative": lambda st: with_field(st, 1, -1),
    "seq huge": lambda st: with_field(st, 1, 2**64),
    "seq below an entry's": lambda st: with_field(st, 1, 2),
    "epoch huge": lambda st: with_field(st, 2, GEN_LIMIT),
    "epoch above a generation": lambda st: with_field(st, 2, 1),
    "gens not a list": lambda st: with_field(st, 3, 5),
    "gen not an int": lambda st: with_field(st, 3, [0, 0, 0, "0", 0]),
    "gen bool": lambda st: with_field(st, 3, [0, 0, 0, True, 0]),
    "tag beyond the limit": lambda st: with_field(st, 3, [0, 0, 0, TAG_LIMIT, 0]),
    "tag negative": lambda st: with_field(st, 3, [0, 0, 0, -1, 0]),
    "tag huge int": lambda st: with_field(st, 3, [0, 0, 0, 2**200, 0]),
    "live slot at the limit": lambda st: with_field(st, 3, [GEN_LIMIT, 0, 0, 0, 0]),
    "free slot at the limit": lambda st: with_field(st, 3, [0, 0, 0, GEN_LIMIT, 0]),
    "free slot out of range": lambda st: with_field(st, 4, [3, 99]),
    "free slot negative": lambda st: with_field(st, 4, [3, -1]),
    "free slot float": lambda st: with_field(st, 4, [3, 4.0]),
    "free slot bool": lambda st: with_field(st, 4, [3, True]),
    "free slot twice": lambda st: with_field(st, 4, [3, 3]),
    "free slot also live": lambda st: with_field(st, 4, [3, 0]),
    "slot neither free nor live": lambda st: with_field(st, 4, [3]),
    "free not a list": lambda st: with_field(st, 4, {3, 4}),
    "live not a list": lambda st: with_field(st, 5, iter(st[5])),
    "entry not a tuple": lambda st: with_field(st, 5, [0, 1, 2]),
    "entry too short": lambda st: with_field(st, 5, [e[:3] for e in st[5]]),
    "entry slot twice": lambda st: with_entry(st, 1, slot=1),
    "entry slot str": lambda st: with_entry(st, 0, slot="1"),
    "entry slot huge": lambda st: with_entry(st, 0, slot=2**70),
    "key str": lambda st: with_entry(st, 0, key="2.0"),
    "key bool": lambda st: with_entry(st, 0, key=False),
    "key int": lambda st: with_entry(st, 0, key=2),
    "key huge int": lambda st: with_entry(st, 0, key=2**70),
    "key NaN": lambda st: with_entry(st, 0, key=float("nan")),
    "key None": lambda st: with_entry(st, 0, key=None),
    "entry seq at the counter": lambda st: with_entry(st, 2, seq=st[1]),
    "entry seq bool": lambda st: with_entry(st, 0, seq=True),
    "entry seq float": lambda st: with_entry(st, 0, seq=1.0),
    "unsorted keys": lambda st: with_field(st, 5, st[5][::-1]),
    "unsorted seqs": lambda st: with_entry(with_entry(st, 0, seq=2), 1, seq=1),
    "equal (key, seq)": lambda st: with_entry(st, 1, seq=1),
    "-0.0 equal to 0.0": lambda st: with_entry(with_entry(st, 0, key=-0.0), 1, key=0.0, seq=1),
}


@pytest.mark.parametrize("name", BAD_STATES)
def test_bad_state_refused_alike_and_heap_untouched(both, name):
    answers = []
    for impl in both:
        h, hs = sample(impl)
        before = h.__getstate__()
        bad = BAD_STATES[name](good_state(impl))
        with pytest.raises((ValueError, TypeError)) as info:
            h.__setstate__(bad)
        answers.append((type(info.value), str(info.value)))
        assert "Heap state" in str(info.value)
        # exactly as it was, and fully usable
        h._check()
        assert h.__getstate__() == before
        assert h.priority(hs[0]) == 4.0 and hs[4] not in h
        h.push_many(range(100), range(100))
        h.push(-1, "first")
        assert h.remove(hs[1]) == ("item", 2)
        assert h.pop() == "first"
        h._check()
    assert answers[0] == answers[1]


def test_bad_state_on_a_fresh_heap(both):
    # the issue: a refused state left len 0 with handle 0 "in" the heap,
    # remove() returning NULL and later pushes aborting in free()
    for impl in both:
        h = impl.Heap()
        st = good_state(impl)
        with pytest.raises(ValueError):
            h.__setstate__(with_entry(st, 2, key="x"))
        assert len(h) == 0 and 0 not in h
        with pytest.raises(KeyError):
            h.remove(0)
        for i in range(1000):
            h.push(i, i)
        h._check()
        assert h.pop_many(2000) == list(range(1000))


@pytest.mark.parametrize("name", ["inf keys", "retired slot", "empty", "max values", "far container ids"])
def test_unusual_but_valid_states_load_alike(both, name):
    cid = 5 << 32  # a container id in a tag
    st = (
        2,
        10,
        3,
        [cid | 3, 7 << 32 | 4, cid | 5, 9 << 32 | GEN_LIMIT],  # items of two containers
        [2],
        [(1, -float("inf"), 7, "a"), (0, float("inf"), 2, "b")],
    )
    if name == "retired slot":
        st = (2, 5, 0, [cid | GEN_LIMIT, 9 << 32 | 7], [], [(1, 1.5, 4, "x")])
    elif name == "empty":
        st = (2, 0, 0, [], [], [])
    elif name == "max values":
        st = (2, 2**63 - 1, GEN_LIMIT - 1, [TAG_LIMIT - 2], [], [(0, 0.0, 2**63 - 2, "z")])
    elif name == "far container ids":  # made in another process: ids this one never gave
        st = (2, 10, 0, [2**40 << 32 | 1, 2**39 << 32], [], [(0, 1.0, 7, "a"), (1, 2.0, 2, "b")])
    outcomes = []
    for impl in both:
        h = impl.Heap()
        h.push(1, "old")
        h.__setstate__(list(st))  # a list is accepted as well as a tuple
        h._check()
        if name == "max values":  # a counter past SEQ_SPAN: numbered afresh, in pop order
            assert h.__getstate__() == (2, 1) + st[2:5] + ([(0, 0.0, 0, "z")],)
        else:
            assert h.__getstate__() == (2,) + st[1:]
        for slot, _, _, item in st[5]:  # the handles of the state's items name them, in both forms
            tag = st[3][slot]
            for handle in (handle_of(tag >> 32, tag & GEN_LIMIT, slot), tag << 32 | slot):
                assert handle in h and h.priority(handle) == dict((e[3], e[1]) for e in st[5])[item]
        new = [h.push(0, "new"), h.push(0, "new2")]
        copied = {t >> 32 for t in st[3]}
        assert all(cid_of(n) not in copied and n not in impl.Heap() for n in new)  # an id of its own
        trace = [[local_handle(n) for n in new], len(h), comparable_state(h.__getstate__(), 3, copied)]
        trace.append(h.pop_many(10))
        h._check()
        outcomes.append(trace)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("how", ["push", "push_many", "update"])
def test_sequence_numbers_run_out_alike_and_keep_fifo(both, how):
    # The compiled core keeps a sequence number in 33 bits: at SEQ_SPAN both
    # twins number the live items afresh, in pop order, and go on alike.
    span = 2**33
    st = (2, span - 2, 0, [1 << 32] * 3, [2], [(1, 1.0, span - 5, "b"), (0, 1.0, span - 3, "c")])
    outcomes = []
    for impl in both:
        h = impl.Heap()
        h.__setstate__(st)
        if how == "push":
            [h.push(1.0, x) for x in "def"]
        elif how == "push_many":
            h.push_many([1.0, 0.5, 1.0, 1.0], "dxef")
        else:
            h.update(handle_of(1, 0, 0), 1.0)  # "c" goes behind its equals (items of container 1)
            h.update(handle_of(1, 0, 1), 1.0)  # and "b" behind it
            h.push(1.0, "d")
        h._check()
        state = h.__getstate__()
        assert state[1] < 10  # numbered afresh
        outcomes.append((comparable_state(state, 3, {1}), h.pop_many(10)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][1] == {"push": list("bcdef"), "push_many": list("xbcdef"), "update": list("cbd")}[how]


def test_setstate_replaces_a_nonempty_heap_and_drops_old_payloads_last(impl):
    log = []
    h = impl.Heap()

    class Watch:
        def __del__(self):
            # the heap is already the new one, and consistent
            log.append((len(h), h.peek()))
            h._check()

    h.push(1, Watch())
    h.push(2, "b")
    src = impl.Heap()
    src.push(5, "new")
    h.__setstate__(src.__getstate__())
    assert log == [(1, "new")]
    assert h.pop_many(5) == ["new"]


# -- copy, deepcopy, pickle --------------------------------------------------


def test_copy_shares_payloads_not_structure(impl):
    h, hs = sample(impl)
    c = copy.copy(h)
    assert type(c) is type(h)
    c._check()
    assert c.__getstate__() == h.__getstate__()
    assert c.peek() is h.peek()
    # independent structure: changes to one leave the other alone
    c.update(hs[0], -5)
    new = c.push(0, "only in copy")
    assert h.priority(hs[0]) == 4.0 and new not in h
    h.clear()
    assert len(c) == 4 and c.pop() == ("item", 4)
    c._check()


def test_deepcopy_copies_payloads_and_keeps_cycles(impl):
    h = impl.Heap()
    box = {"heap": h}
    handle = h.push(1, box)
    h.push(2, [1, 2])
    d = copy.deepcopy(h)
    assert type(d) is type(h)
    d._check()
    assert d.priority(handle) == 1.0
    copied = d.remove(handle)
    assert copied == {"heap": d} and copied is not box
    assert copied["heap"] is d  # the payload's reference to the heap follows it
    assert h.peek() is box and len(h) == 2
    assert d.pop() == [1, 2] and d.pop_many(1) == []


def test_pickle_round_trip_and_across_implementations_both_ways(both):
    c, py = both
    for src, dst in ((c, py), (py, c), (c, c), (py, py)):
        h, hs = sample(src)
        st = h.__getstate__()
        other = dst.Heap()
        other.__setstate__(st)
        other._check()
        assert type(other) is dst.Heap
        assert other.__getstate__() == st
        mine, theirs = other.push(0, "x"), h.push(0, "x")
        # the same slot and generation, each under its own container's id
        assert local_handle(mine) == local_handle(theirs)
        assert mine not in h and theirs not in other
        loaded = pickle.loads(pickle.dumps(h, protocol=pickle.HIGHEST_PROTOCOL))
        loaded._check()
        assert loaded.__getstate__() == h.__getstate__()
        assert loaded.pop_many(10) == other.pop_many(10) == h.pop_many(10)


def test_generic_alias_at_run_time(impl):
    alias = impl.Heap[str]
    assert alias.__origin__ is impl.Heap and alias.__args__ == (str,)
    assert type(alias()) is impl.Heap
