"""Conversion of user numbers to C doubles, shared by both implementations.

The compiled core handles exact ``float`` and small ``int`` inline and calls
:func:`to_real` for everything else, so the rules and the error messages live
in one place.
"""

from __future__ import annotations

import operator
from typing import TypeVar

#: Largest integer magnitude a C double holds exactly.
MAX_EXACT_INT = 2**53


def to_real(value: object, name: str) -> float:
    """Return ``value`` as a float, or raise an error that names ``name``.

    Integers (anything with ``__index__``) must lie within +-2**53, other
    numbers need ``__float__`` (also an object whose ``__index__`` refuses
    while its ``__float__`` answers, as a NumPy float array's does); NaN is
    refused, and so is a value ``float()`` cannot make (``Decimal('sNaN')``).
    """
    tp = type(value)
    if tp is float and value == value:  # the common case first
        return value  # type: ignore[return-value]
    if hasattr(tp, "__index__"):
        try:
            i = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            # an __index__ that refuses (NumPy's 0-d float arrays) while
            # __float__ answers: the number is a float
            if not hasattr(tp, "__float__"):
                raise TypeError(f"{name} must be a real number, not {tp.__name__!r}") from None
        else:
            if -MAX_EXACT_INT <= i <= MAX_EXACT_INT:
                return float(i)
            raise OverflowError(f"{name} must be an integer within +-2**53 to be stored exactly, got {i!r}")
    if hasattr(tp, "__float__"):
        try:
            d = float(value)  # type: ignore[arg-type]
        except TypeError as exc:  # complex on Python 3.9, a bad __float__
            raise TypeError(f"{name} must be a real number, not {tp.__name__!r}") from exc
        except ValueError as exc:  # Decimal('sNaN'): "cannot convert signaling NaN to float"
            raise ValueError(f"{name} must be a number a float can hold: {exc}") from exc
        if d != d:
            raise ValueError(f"{name} must not be NaN")
        return d
    raise TypeError(f"{name} must be a real number, not {tp.__name__!r}")


def to_int(value: object, name: str) -> int:
    """Return ``value`` as an int (anything with ``__index__``), or raise naming ``name``."""
    if not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, not {type(value).__name__!r}")
    return operator.index(value)  # type: ignore[arg-type]


def to_count(value: object, name: str) -> int:
    """Return ``value`` as a non-negative int, or raise naming ``name``."""
    n = to_int(value, name)
    if n < 0:
        raise ValueError(f"{name} must be non-negative, got {n!r}")
    return n


N = TypeVar("N", int, float)


def at_least(value: N, low: N, name: str, rule: str) -> N:
    """``value`` if it is ``>= low``, else ValueError: "``name`` must be ``rule``"."""
    if value < low:
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return value


def keys_of(values: object, name: str) -> list[float]:
    """Convert a sequence, iterable or 1-D buffer of numbers to floats.

    Nothing outside this call sees a partial result: a bad element raises
    before the caller has changed anything.
    """
    try:
        view = memoryview(values)  # type: ignore[arg-type]
    except TypeError:
        # a snapshot: a __float__ further on may change the caller's list
        seq = list(values)  # type: ignore[call-overload]
    else:
        with view:
            if view.ndim != 1:
                raise ValueError(f"{name} must be one-dimensional, got {view.ndim} dimensions")
            try:
                seq = view.tolist()
            except NotImplementedError:
                raise TypeError(f"{name} has an unsupported buffer format {view.format!r}") from None
    out: list[float] = []
    append = out.append
    for i, v in enumerate(seq):
        if type(v) is float and v == v:
            append(v)
        else:
            append(to_real(v, f"{name}[{i}]"))
    return out
