"""TimingWheel: the compiled and pure classes look the same from outside.

Signatures (inspect), help() text, docstrings, run-time generics and the
construction errors agree.
"""

from __future__ import annotations

import inspect
import re
import time
import types

import pytest

from helpers import assert_same_methods, bare, cid_of, help_text, local_handle

PUBLIC = [
    "schedule",
    "schedule_at",
    "cancel",
    "advance",
    "drain",
    "next_deadline",
    "stats",
    "_check",
    "__len__",
    "__contains__",
    "__repr__",
    "__getstate__",
    "__setstate__",
    "__reduce__",
    "__copy__",
    "__deepcopy__",
]


def test_signatures_identical(both):
    c, py = (impl.TimingWheel for impl in both)
    assert (
        bare(inspect.signature(c))
        == bare(inspect.signature(py))
        == ("(tick=0.001, wheel_size=256, clock=<built-in function monotonic>)")
    )
    assert inspect.signature(c).parameters["clock"].default is time.monotonic
    assert_same_methods(c, py, PUBLIC)


def help_sections(cls) -> str:
    """pydoc's text for ``cls``: its docstring and the methods it defines.

    Left out: the class line and MRO (the pure class is also typing.Generic,
    for type checkers), ``__new__``, data attributes and properties (the
    compiled ones are "data descriptors"), which differ by construction;
    and the signature line of ``__init__``, which a compiled class cannot
    give with ``clock=time.monotonic`` (text signatures hold only literals;
    the class's own signature is the same).  Annotations are dropped.
    """
    text = help_text(cls).replace(cls.__module__, "MOD")
    text = re.sub(r" \|  __init__\(.*?\)\n(?= \|      Initialize)", " |  __init__\n", text, flags=re.S)
    text = re.sub(r" \|  Method resolution order:\n( \|      .*\n)+ \|[ ]*\n", "", text)
    doc = text[text.index("Hierarchical hashed") :]
    blocks = re.split(r"\n \|  -{20,}\n", doc)
    return blocks[0]


def test_help_text_identical(both):
    c, py = (help_sections(impl.TimingWheel) for impl in both)
    assert "Methods defined here" in c and "schedule_at(self, /, item, deadline)" in c
    assert "__deepcopy__(self, /, memo)" in c
    assert c == py


def test_generic_alias(both):
    for impl in both:
        alias = impl.TimingWheel[str]
        assert alias.__origin__ is impl.TimingWheel and alias.__args__ == (str,)
        w = alias(tick=1.0)
        assert type(w) is impl.TimingWheel


@pytest.mark.parametrize(
    "kwargs",
    [
        {"clock": 5},
        {"clock": None},
        {"clock": "monotonic"},
        {"tick": "1"},
        {"tick": 0},
        {"tick": float("nan")},
        {"tick": 2**60},
        {"wheel_size": 3},
        {"wheel_size": 2.0},
        {"wheel_size": -4},
        {"wheel_size": 2**20},
        {"clock": lambda: float("nan")},
        {"clock": lambda: "now"},
        {"clock": lambda: None},
        {"clock": lambda: float("inf")},
        {"clock": lambda: 2**60},
        {"tick": 1e-300, "clock": lambda: 1.0},
    ],
)
def test_construction_errors_alike(both, kwargs):
    got = []
    for impl in both:
        with pytest.raises((TypeError, ValueError, OverflowError)) as info:
            impl.TimingWheel(**kwargs)
        got.append((type(info.value), str(info.value)))
    assert got[0] == got[1]
    name = next(iter(kwargs))
    assert name in got[0][1]  # the message names the argument


def test_subclassing_refused_alike(both):
    for impl in both:
        for base in (impl.TimingWheel, impl.TimingWheel[int]):
            with pytest.raises(TypeError) as info:
                types.new_class("Sub", (base,))
            assert str(info.value) == "type 'TimingWheel' is not an acceptable base type"


def test_new_without_init_is_an_empty_wheel_alike(both):
    # what copy and pickle (dq_core._pickling.restore) start from: an empty
    # wheel of 1 s ticks and 2 slots, usable; a late __init__ still runs once
    out = []
    for impl in both:
        w = impl.TimingWheel.__new__(impl.TimingWheel)
        first = w.schedule_at("first", 0.0)  # the wheel's first handle: slot 0 of its own id
        assert cid_of(first) > 0 and local_handle(first) == (0, 0) and w.cancel(first)
        assert (len(w), w.tick, w.wheel_size, repr(w)) == (0, 1.0, 2, "<TimingWheel len=0 tick=1.0>")
        h = w.schedule_at("a", 3.0)
        w._check()
        due = w.advance(5.0)
        w.__init__(0.5)  # never run yet: it runs, once
        with pytest.raises(RuntimeError, match="may run only once"):
            w.__init__()
        out.append((local_handle(h), due, w.tick, len(w)))
    assert out[0] == out[1] == ((1, 0), ["a"], 0.5, 0)
