"""What the TTLRing and TTLDict tests share: hostile objects, leak checks."""

from __future__ import annotations

import gc
import inspect
import math
import sys
from typing import Any, Callable

import pytest

from helpers import traced_growth


class Finaliser:
    """Garbage in a reference cycle whose __del__ runs ``action``.

    What ``action`` raises (a refused re-entry, most often) goes into
    ``errors`` as ``"Type: message"``: a finaliser cannot raise.
    """

    def __init__(self, action, errors: list) -> None:
        self.cycle = self
        self.action = action
        self.errors = errors

    def __del__(self) -> None:
        try:
            self.action()
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")


#: The clock readings TTLRing and TTLDict refuse, with the error naming the clock:
#: a test taking ``reading``, ``exc`` and ``msg``.
bad_clock_readings = pytest.mark.parametrize(
    "reading, exc, msg",
    [
        (math.nan, ValueError, "clock\\(\\) must not be NaN"),
        ("soon", TypeError, "clock\\(\\) must be a real number, not 'str'"),
    ],
)


@pytest.fixture
def eager_gc():
    old = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1, 1000, 1000)  # a young collection on (almost) every allocation
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.collect()


class PushOnDel:
    """A key whose __del__ pushes onto (or sets in) ``target``."""

    def __init__(self, target, log: list) -> None:
        self.target = target
        self.log = log

    def __del__(self) -> None:
        try:
            if hasattr(self.target, "push"):
                self.target.push("from __del__", 0.0)
            else:
                self.target["from __del__"] = 0
            self.log.append("done")
        except RuntimeError as exc:
            self.log.append(str(exc))


def params(obj: Any) -> list[tuple[str, Any, Any]]:
    # names, kinds and defaults; the compiled self is positional-only and
    # carries no annotations
    return [
        (p.name, p.kind, p.default) for p in inspect.signature(obj).parameters.values() if p.name != "self"
    ]


def assert_same_signatures_and_docstrings(a: type, b: type, names: list[str], props: tuple[str, ...]) -> None:
    assert params(a) == params(b)
    assert inspect.cleandoc(a.__doc__) == inspect.cleandoc(b.__doc__)
    for name in names:
        ma, mb = getattr(a, name), getattr(b, name)
        assert params(ma) == params(mb), name
        assert (ma.__doc__ is None) == (mb.__doc__ is None), name
        if ma.__doc__:
            assert inspect.cleandoc(ma.__doc__) == inspect.cleandoc(mb.__doc__), name
    for prop in props:
        da, db = getattr(a, prop).__doc__, getattr(b, prop).__doc__
        assert inspect.cleandoc(da) == inspect.cleandoc(db), prop


def assert_no_leaks(round_trip: Callable[[object], None]) -> None:
    """``round_trip(value)`` run 31 times leaks neither ``value`` nor memory."""
    value = object()
    base = sys.getrefcount(value)
    grown = traced_growth(lambda: round_trip(value), 30)
    assert sys.getrefcount(value) == base
    assert grown < 64 * 1024, grown


def assert_refuses_state(obj: Any, state: Any, exc: type[Exception], msg: str) -> None:
    """``obj.__setstate__(state)`` raises ``exc`` matching ``msg`` and leaves ``obj`` as it was."""
    before = obj.__getstate__()
    with pytest.raises(exc, match=msg):
        obj.__setstate__(state)
    assert obj.__getstate__() == before
    obj._check()


class Colliding:
    """A key hashing like every other Colliding; comparing it runs ``action``."""

    def __init__(self, name: str, action=None) -> None:
        self.name = name
        self.action = action

    def __hash__(self) -> int:
        return 42

    def __eq__(self, other: object) -> bool:
        action, self.action = self.action, None
        if action is not None:
            action()
        return isinstance(other, Colliding) and other.name == self.name

    def __repr__(self) -> str:
        return f"Colliding({self.name!r})"
