"""The compiled Heap and its pure twin agree on API surface and odd calls."""

from __future__ import annotations

import inspect
import re

import pytest

from dq_core._handles import handle_of
from helpers import assert_same_methods, bare, cid_of, help_text, twin_ids


def outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - compared between the twins
        return (type(exc), str(exc))


def agree(both, make_call):
    answers = [outcome(make_call(impl)) for impl in both]
    assert answers[0] == answers[1]
    return answers[0]


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((1, 2, 3), {}),
        (([(1, "a")],), {}),
        ((), {"key": len}),
        ((None,), {"key": 1}),
    ],
)
def test_constructor_refuses_arguments_alike(both, args, kwargs):
    kind, message = agree(both, lambda impl: lambda: impl.Heap(*args, **kwargs))
    assert kind is TypeError and message.startswith("Heap.__init__()")


def test_init_again_changes_nothing(both):
    def run(impl):
        h = impl.Heap()
        h.push(1, "a")
        h.__init__()
        h._check()
        return len(h), h.pop()

    assert agree(both, lambda impl: lambda: run(impl)) == ("ok", (1, "a"))


def test_subclassing_refused_alike(both):
    def subclass(impl):
        return lambda: type("Sub", (impl.Heap,), {})

    kind, message = agree(both, subclass)
    assert kind is TypeError and message == "type 'Heap' is not an acceptable base type"
    kind, _ = agree(both, lambda impl: lambda: type("Sub", (impl.Heap[int],), {}))
    assert kind is TypeError


@pytest.mark.parametrize(
    "n", [2**70, 2**63, 2**64 + 1, -1, -(2**70), 1.5, float("inf"), True, False, "2", None, 0, 3]
)
def test_pop_many_counts_alike(both, n):
    def run(impl):
        h = impl.Heap()
        h.push_many([3, 1, 2], "cab")
        return lambda: (h.pop_many(n), len(h))

    agree(both, run)


def test_pop_many_numpy_count(both):
    np = pytest.importorskip("numpy")

    def run(impl):
        h = impl.Heap()
        h.push_many([3, 1, 2], "cab")
        return lambda: h.pop_many(np.int64(2))

    assert agree(both, run) == ("ok", ["a", "b"])


class IntSub(int):
    """An int subclass whose operators would lie if they were called."""

    def __lt__(self, other):
        raise AssertionError("handle compared with user code")

    __gt__ = __le__ = __ge__ = __lt__

    def __and__(self, other):
        raise AssertionError("handle masked with user code")

    def __rshift__(self, other):
        raise AssertionError("handle shifted with user code")

    def __index__(self):
        raise AssertionError("handle converted with user code")


@pytest.mark.parametrize(
    "handle",
    [IntSub(0), IntSub(-1), IntSub(2**40), True, False, 2**64, 2**64 - 1, -(2**64), 2**200, 1.0, "0", None],
)
def test_odd_handles_alike(both, handle):
    def run(impl):
        h = impl.Heap()
        h.push(1, "a")
        h.push(2, "b")
        return lambda: (
            handle in h,
            outcome(lambda: h.priority(handle)),
            outcome(lambda: h.update(handle, 0)),
            outcome(lambda: h.remove(handle)),
            h.pop_many(5),
        )

    agree(both, run)


# -- signatures and help ---------------------------------------------------------

PUBLIC = [
    "push",
    "push_many",
    "pop",
    "popitem",
    "pop_many",
    "peek",
    "peekitem",
    "update",
    "remove",
    "priority",
    "clear",
    "__len__",
    "__bool__",
    "__contains__",
    "__repr__",
    "__getstate__",
    "__setstate__",
    "__reduce__",
    "__copy__",
    "__deepcopy__",
    "__init__",
    "__init_subclass__",
    "_check",
]


def test_signatures_identical(both):
    c, py = (impl.Heap for impl in both)
    assert bare(inspect.signature(c)) == bare(inspect.signature(py)) == "()"
    assert_same_methods(c, py, PUBLIC)


def help_sections(cls) -> str:
    """pydoc's text for ``cls``: its docstring and the methods it defines.

    Left out: the class line and MRO (the pure class is also typing.Generic,
    for type checkers), ``__new__``, and data attributes, which differ by
    construction; module paths and annotations are dropped.
    """
    text = help_text(cls).replace(cls.__module__, "MOD")
    text = re.sub(r" \|  Method resolution order:\n( \|      .*\n)+ \| *\n", "", text)
    doc = text[text.index("Min-heap of items") :]
    blocks = re.split(r"\n \|  -{20,}\n", doc)
    keep = [b for b in blocks[1:] if b.startswith(" |  Class methods defined here")]
    return "\n".join([blocks[0], *keep])


def test_help_text_identical(both):
    c, py = (help_sections(impl.Heap) for impl in both)
    assert "Methods defined here" in c and "push_many(self, /, priorities, items)" in c
    assert c == py


def test_generic_alias(both):
    for impl in both:
        alias = impl.Heap[str]
        assert alias.__origin__ is impl.Heap
        h: object = alias()
        assert type(h) is impl.Heap


def test_new_without_init_is_an_empty_heap_alike(both):
    # what copy, pickle (dq_core._pickling.restore) and __deepcopy__ start from
    def run(impl):
        h = impl.Heap.__new__(impl.Heap)
        assert len(h) == 0 and not h and repr(h) == "<Heap len=0>"
        with pytest.raises(IndexError):
            h.pop()
        a = h.push(2, "a")
        b = h.push(1, "b")
        h._check()
        h.__init__()  # a late __init__ changes nothing
        return a, b, h.__getstate__(), h.pop(), len(h)

    with twin_ids():  # both heaps get the same container id
        kind, (a, b, state, *rest) = agree(both, lambda impl: lambda: run(impl))
    cid = cid_of(a)
    assert kind == "ok" and cid > 0 and (a, b) == (handle_of(cid, 0, 0), handle_of(cid, 0, 1))
    assert state == (2, 2, 0, [cid << 32, cid << 32], [], [(1, 1.0, 1, "b"), (0, 2.0, 0, "a")])
    assert rest == ["b", 1]
