"""ItemHeap: the object-compared heap under PriorityQueue, step for step heapq."""

from __future__ import annotations

import heapq
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


class Tied:
    """Compares by key only; two with the same key are neither less nor more."""

    def __init__(self, key, tag):
        self.key = key
        self.tag = tag

    def __lt__(self, other):
        return self.key < other.key

    def __repr__(self):
        return f"Tied({self.key}, {self.tag})"


class Erratic:
    """An inconsistent order: the answer depends on a shared coin."""

    rng = random.Random(0)

    def __init__(self, tag):
        self.tag = tag

    def __lt__(self, other):
        return self.rng.random() < 0.5


def run(heap_push, heap_pop, program):
    out = []
    for op, item in program:
        if op == "push":
            heap_push(item)
        else:
            try:
                out.append(heap_pop())
            except IndexError:
                out.append(None)
    return out


kinds = [
    st.tuples(st.integers(-3, 3), st.text(max_size=2)),
    st.tuples(st.floats(-3, 3, width=16), st.integers(0, 3)),
    st.tuples(st.sampled_from([2**53, 2**53 + 1, -(2**60), 1, 1.0, True, 0.0, -0.0]), st.integers(0, 1)),
    st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(0, 1)),
    st.integers(-5, 5),
    st.floats(allow_nan=False, width=16),
]
programs = st.one_of(
    *[st.lists(st.tuples(st.sampled_from(["push", "push", "pop"]), kind), max_size=80) for kind in kinds]
)


@given(programs)
@settings(max_examples=300)
def test_same_order_as_heapq(impl, program):
    h = impl.ItemHeap()
    ref: list = []
    ours = run(h.push, h.pop, program)
    theirs = run(lambda x: heapq.heappush(ref, x), lambda: heapq.heappop(ref), program)
    assert ours == theirs
    assert [type(x) for x in ours] == [type(x) for x in theirs]
    assert h.snapshot() == ref
    h._check()


def test_mixed_kinds_raise_as_heapq_does(impl):
    # A cached key must never decide between a tuple and a bare number.
    for first, second in [((0, ""), 5), (5, (0, "")), ((1, "a"), (2.5,)), ((1,), "x")]:
        h = impl.ItemHeap()
        h.push(first)
        ref = [first]
        try:
            heapq.heappush(ref, second)
        except TypeError:
            with pytest.raises(TypeError):
                h.push(second)
            assert h.snapshot() == [first]
        else:
            h.push(second)
            assert h.snapshot() == ref


@given(st.lists(st.tuples(st.sampled_from(["push", "push", "pop"]), st.integers(0, 3)), max_size=60))
def test_ties_come_out_as_heapq_gives_them(impl, program):
    h = impl.ItemHeap()
    ref: list = []
    prog = [(op, Tied(k, i)) for i, (op, k) in enumerate(program)]
    ours = run(h.push, h.pop, prog)
    theirs = run(lambda x: heapq.heappush(ref, x), lambda: heapq.heappop(ref), prog)
    assert [x and x.tag for x in ours] == [x and x.tag for x in theirs]


def test_inconsistent_order_matches_heapq(impl):
    h = impl.ItemHeap()
    ref: list = []
    objs = [Erratic(i) for i in range(200)]
    Erratic.rng.seed(5)
    for o in objs:
        h.push(o)
    ours = [h.pop().tag for _ in range(200)]
    Erratic.rng.seed(5)
    for o in objs:
        heapq.heappush(ref, o)
    theirs = [heapq.heappop(ref).tag for _ in range(200)]
    assert ours == theirs


def test_nan_first_elements_compare_as_heapq(impl):
    nan = float("nan")
    seq = [(nan, 1), (1.0, 2), (nan, 3), (0.0, 4), (nan, 0)]
    h = impl.ItemHeap()
    ref: list = []
    for x in seq:
        h.push(x)
        heapq.heappush(ref, x)
    assert [h.pop()[1] for _ in seq] == [heapq.heappop(ref)[1] for _ in seq]


class Bomb:
    """Raises when compared after the fuse burns down."""

    fuse = 0

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        Bomb.fuse -= 1
        if Bomb.fuse == 0:
            raise ZeroDivisionError("bomb")
        return self.key < other.key


@pytest.mark.parametrize("n", [1, 2, 7, 64, 300])
def test_raising_comparison_leaves_heap_exactly_as_it_was(impl, n):
    rng = random.Random(n)
    for fuse in range(1, 25):
        h = impl.ItemHeap()
        Bomb.fuse = -1
        for _ in range(n):
            h.push(Bomb(rng.random()))
        before = h.snapshot()
        Bomb.fuse = fuse
        try:
            h.push(Bomb(rng.random()))
        except ZeroDivisionError:
            assert h.snapshot() == before
        else:
            before = h.snapshot()
        Bomb.fuse = fuse
        try:
            top = h.pop()
        except ZeroDivisionError:
            assert h.snapshot() == before  # nothing lost, nothing moved
        else:
            assert top is min(before, key=lambda b: b.key)
        Bomb.fuse = -1
        h._check()
        keys = [h.pop().key for _ in range(len(h))]
        assert keys == sorted(keys)


def test_reentry_from_comparison_raises(impl):
    h = impl.ItemHeap()

    class Meddler:
        def __init__(self, key):
            self.key = key

        def __lt__(self, other):
            with pytest.raises(RuntimeError, match="re-entered"):
                h.push(Meddler(0))
            with pytest.raises(RuntimeError, match="re-entered"):
                h.pop()
            assert len(h) >= 1  # reading is fine
            return self.key < other.key

    for k in [5, 3, 8, 1]:
        h.push(Meddler(k))
    assert [h.pop().key for _ in range(4)] == [1, 3, 5, 8]


def test_empty_and_misc(impl):
    h = impl.ItemHeap()
    with pytest.raises(IndexError):
        h.pop()
    with pytest.raises(IndexError):
        h.peek()
    h.push((1, "a"))
    assert h.peek() == (1, "a") and len(h) == 1 and h
    assert repr(h) == "<ItemHeap len=1>"
    assert h.clear() == [(1, "a")]
    assert not h and len(h) == 0


# -- tuples tied on their first element: the rest is compared in C where exact --

NAN = float("nan")
tail_elements = st.one_of(
    st.integers(-2, 2),
    st.floats(-2, 2, width=16),
    st.floats(width=16),  # inf and NaN (a fresh NaN object each time)
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**64, 2.0**53, 2.0**53 + 2, True, False, -0.0, NAN]),
    st.text(alphabet="ab\u00e9\U0001f600", max_size=2),
    st.sampled_from([None, b"a", (1,), 1j]),
)
tied_tuples = st.tuples(st.sampled_from([0, 1, 1.0, True]), st.lists(tail_elements, max_size=3)).map(
    lambda t: (t[0], *t[1])
)


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:
        return ("raised", type(exc), str(exc))


def lockstep_with_heapq(h, program):
    # Run program on h and on a heapq list: the same items (objects, not
    # copies), the same errors, the same list after every step (a step that
    # raises leaves ours as it was before; heapq's list is left half-sifted).
    ref: list = []
    for op, item in program:
        before = list(ref)
        if op == "push":
            ours = outcome(lambda: h.push(item))
            theirs = outcome(lambda: heapq.heappush(ref, item))
        elif ref:
            ours = outcome(h.pop)
            theirs = outcome(lambda: heapq.heappop(ref))
        else:
            continue
        assert ours[0] == theirs[0]
        assert ours[1] is theirs[1] if ours[0] == "ok" else ours[1:] == theirs[1:]
        if theirs[0] == "raised":
            ref = before
        snap = h.snapshot()
        assert len(snap) == len(ref) and all(a is b for a, b in zip(snap, ref))
    return h


@given(st.lists(st.tuples(st.sampled_from(["push", "push", "pop"]), tied_tuples), max_size=60))
@settings(max_examples=400)
def test_tied_tuples_come_out_as_heapq_gives_them(impl, program):
    h = lockstep_with_heapq(impl.ItemHeap(), program)
    if any(x != x for _, item in program for x in item):
        # NaN breaks the transitivity heap order rests on: heapq's list, which
        # ours matches item for item (above), need not be in heap order either
        return
    try:
        h._check()
    except TypeError:  # _check compares with <: mixed kinds raise there too
        pass


long_texts = st.text(alphabet="a\x00\xff\u0100", max_size=11)
second_elements = st.one_of(
    long_texts,
    st.integers(-3, 3),
    st.floats(-2, 2, width=16),
    st.sampled_from([2**53, 2**53 + 1, -0.0, float("inf"), True]),
)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["push", "push", "pop"]),
            st.tuples(st.integers(0, 1), second_elements, st.integers(0, 1)),
        ),
        max_size=60,
    )
)
@settings(max_examples=300)
def test_second_elements_order_as_heapq(impl, program):
    # Tuples tied on their first number are ordered by the cached second
    # element where it differs: long strs sharing prefixes, NULs, numbers.
    h = lockstep_with_heapq(impl.ItemHeap(), program)
    try:
        h._check()
    except TypeError:
        pass


class Loud:
    """Mixed into str, int or float: logs every == and < the tuples make."""

    log: list = []

    def __eq__(self, other):
        Loud.log.append(("eq", str(self), str(other)))
        return super().__eq__(other)

    def __lt__(self, other):
        Loud.log.append(("lt", str(self), str(other)))
        return super().__lt__(other)

    __hash__ = None


class LoudStr(Loud, str):
    pass


class LoudInt(Loud, int):
    pass


class LoudFloat(Loud, float):
    pass


def loud_run(push, pop, items):
    Loud.log = []
    out = []
    for i, x in enumerate(items):
        push(x)
        if i % 3 == 2:
            out.append(pop())
    return Loud.log, out


def test_subclasses_in_a_tie_run_their_own_comparisons(impl):
    # Only exact ints, floats and strs are compared in C: a subclass's
    # __eq__ and __lt__ run exactly as under heapq.
    rng = random.Random(7)
    items = []
    for i in range(150):
        kind = (LoudStr, LoudInt, LoudFloat)[i % 3]
        second = kind("ab"[rng.randrange(2)] if kind is LoudStr else rng.randrange(4))
        items.append((rng.randrange(3) + 10 * (kind is LoudStr), second))  # strs tie with strs
    h = impl.ItemHeap()
    ref: list = []
    ours = loud_run(h.push, h.pop, items)
    theirs = loud_run(lambda x: heapq.heappush(ref, x), lambda: heapq.heappop(ref), items)
    assert ours[0] and ours == theirs


@pytest.mark.parametrize(
    "a, b",
    [
        ((1, 2**53 + 1), (1, 2.0**53)),  # beyond 2**53: never through a double
        ((1, 2**53), (1, 2**53 + 1)),
        ((1, 2**64), (1, float("inf"))),
        ((1, NAN), (1, NAN)),  # the same NaN object: equal by identity
        ((1, float("nan")), (1, float("nan"))),
        ((1, True), (1, 1)),
        ((1, "b"), (1, "a\U0001f600")),
        ((1, "\u00e9"), (1, "e")),
        # strs of one byte per code point compare by memcmp in C: prefixes, NULs,
        # bytes past 0x7f (unsigned), and a one-byte str against a wider one
        ((1, "ab"), (1, "a")),
        ((1, "a\x00"), (1, "a")),
        ((1, "\x80"), (1, "\x7f")),
        ((1, "\u00ff"), (1, "\u0100")),
        ((1, "job-10"), (1, "job-9")),
        ((1, 2), (1, 2, 0)),
        ((1, 2, "x"), (1, 2.0, "y")),
        ((1, -0.0), (1, 0)),
        ((1,), (1.0,)),
        ((1, "a"), (1, 2)),  # TypeError, as heapq raises it
        # the second element's first 7 code points are cached: a difference
        # there, at the 7th, past it, a NUL against the end, wider kinds
        ((1, "abcdefg"), (1, "abcdefh")),
        ((1, "abcdefgh"), (1, "abcdefgi")),
        # numbers are cached without their order's low 8 bits: neighbours
        # that differ only there are compared exactly
        ((1, 1.0), (1, 1.0000000000000002)),
        ((1, 2**53 - 1), (1, 2**53 - 2)),
        ((1, 5e-324), (1, 0.0)),
        ((1, -5e-324), (1, -0.0)),
        ((1, "abcdefgh1"), (1, "abcdefgh0")),
        ((1, "abcdefgh"), (1, "abcdefgh\x00")),
        ((1, "abcdefg"), (1, "abcdefg\x00")),
        ((1, "\xff" * 9), (1, "\xff" * 8 + "\u0100")),
        ((1, ""), (1, "\x00")),
        ((1, float("inf")), (1, 2**53)),
        ((1, -float("inf")), (1, -(2**53))),
        ((1, -1.5), (1, -2)),
        ((1, 2**53), (1, 2**53 + 1, 0)),
        ((1, 1, None), (1, 1, None)),
    ],
)
def test_edge_ties_as_heapq(impl, a, b):
    for first, second in [(a, b), (b, a)]:
        h = impl.ItemHeap()
        ref: list = []
        ours = [outcome(lambda: h.push(x)) for x in (first, second)]
        theirs = [outcome(lambda: heapq.heappush(ref, x)) for x in (first, second)]
        assert ours == theirs
        if theirs[1][0] == "raised":  # heapq keeps the item it could not sift; ours undoes
            del ref[1:]
        snap = h.snapshot()
        assert len(snap) == len(ref) and all(x is y for x, y in zip(snap, ref))


# -- the cache of what orders a tied tuple's second element -----------------------------------


def _differ_at(i, n, a, b, fill="abcdefghijk"):
    """Two strs of length n, equal but at index i (a, b there), ordered the other
    way after it (so a wrong index decides the wrong way)."""
    base = fill[:n]
    s = base[:i] + a + base[i + 1 :]
    t = base[:i] + b + base[i + 1 :]
    if i + 1 < n:
        s, t = s[: i + 1] + "z" + s[i + 2 :], t[: i + 1] + "a" + t[i + 2 :]
    return s, t


def _pairs():
    yield "abcdefYa", "abcdefXb"  # the 7th character decides
    for n in range(1, 10):  # around the 7 cached characters: 6, 7, 8 and more
        for i in range(n):
            for a, b in (("Y", "X"), ("é", "e"), ("ÿ", "é"), ("Ā", "A"), ("😀", "Z"), ("b", "bb")):
                s, t = _differ_at(i, n, a, b)
                yield s, t
    for s in ("abcdefg", "abcdefgh", "abc", "abcdefghij"):  # a prefix orders first
        for k in range(len(s)):
            yield s, s[:k]
    for x in (0, 1, 255, 256, 1000, 2**52, 2**53 - 1, -257, -(2**53 - 1)):
        yield x, x + 1  # equal in all but their low bits as doubles
        yield float(x), float(x) + 0.5
    for x in (1.0, -1.0, 1e300, 5e-324, 0.1, -0.0):
        y = math.nextafter(x, math.inf)
        yield x, y
        yield y, math.nextafter(y, math.inf)


def test_tied_first_elements_order_by_the_second_across_the_cache_s_bounds(impl):
    for s, t in _pairs():
        for first in (0, 0.5):
            items = [(first, s), (first, t)]
            for order in (items, items[::-1]):
                h = impl.ItemHeap()
                for item in order:
                    h.push(item)
                got = [h.pop(), h.pop()]
                assert got == sorted(order), (order, got)
