"""The number rules every numeric argument follows (dq_core._convert.to_real).

An int (``__index__``) within +-2**53, or any other real number through
``__float__``, is stored as a C double; NaN raises ValueError, a larger
int OverflowError, anything else TypeError, each naming the argument.
An object whose ``__index__`` refuses while its ``__float__`` answers (a
NumPy 0-d float array) is a float.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest


class FloatOnly:
    """A number whose __index__ refuses, as a NumPy float array's does."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __index__(self) -> int:
        raise TypeError("only integer scalar arrays can be converted to a scalar index")

    def __float__(self) -> float:
        return self.value


class IndexOnly:
    def __index__(self) -> int:
        raise TypeError("refused")


def entries(impl):
    """(argument name, a call taking one number) for each structure."""
    return [
        ("priority", lambda x: impl.Heap().push(x, "item")),
        ("delay", lambda x: impl.DelayQueue().put("item", x)),
        ("deadline", lambda x: impl.DelayQueue().put_at("item", x)),
        ("delay", lambda x: impl.TimingWheel(clock=lambda: 0.0).schedule("item", x)),
        ("deadline", lambda x: impl.TimingWheel(clock=lambda: 0.0).schedule_at("item", x)),
        ("tick", lambda x: impl.TimingWheel(tick=x)),
        ("ttl", lambda x: impl.TTLRing(x)),
        ("created_at", lambda x: impl.TTLRing(1.0).push("key", x)),
        ("now", lambda x: impl.TTLRing(1.0, clock=lambda: 0.0).expire(x)),
        ("ttl", lambda x: impl.TTLDict(x)),
    ]


@pytest.mark.parametrize(
    "number",
    [FloatOnly(0.25), np.array(0.25), np.float32(0.25)],
    ids=["float-only", "numpy-0d", "numpy-float32"],
)
def test_a_refused_index_with_a_float_is_a_float(impl, number):
    for name, call in entries(impl):
        call(number)  # accepted as 0.25
    h = impl.Heap()
    h.push(number, "x")
    assert h.peekitem() == (0.25, "x")


def test_a_refused_index_without_a_float_is_a_type_error_naming_the_argument(impl):
    for name, call in entries(impl):
        with pytest.raises(TypeError, match=f"^{name} must be a real number, not 'IndexOnly'$"):
            call(IndexOnly())


def test_a_float_that_cannot_be_made_names_the_argument(impl):
    for name, call in entries(impl):
        with pytest.raises(ValueError, match=f"^{name} must be a number a float can hold: "):
            call(Decimal("sNaN"))
        with pytest.raises(ValueError, match=f"^{name} must not be NaN$"):
            call(Decimal("NaN"))
        with pytest.raises(ValueError, match=f"^{name} must not be NaN$"):
            call(np.array(float("nan")))


def test_push_many_takes_float_only_elements(impl):
    h = impl.Heap()
    h.push_many([FloatOnly(2.0), np.array(1.0)], ["b", "a"])
    assert h.pop_many(2) == ["a", "b"]
