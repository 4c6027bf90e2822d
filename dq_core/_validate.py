"""The checks of what users pass: timeouts, clocks and their readings, maxsize.

Each returns the value as the structure keeps it, or raises the
``TypeError``/``ValueError`` that names the argument, worded as the
standard library's queues word them.
"""

from __future__ import annotations

import operator
from typing import Callable

from ._convert import to_real

__all__ = [
    "check_timeout",
    "check_clock",
    "read_clock",
    "check_reading",
    "check_maxsize",
    "check_real_maxsize",
]

_INF = float("inf")


def check_timeout(timeout: object) -> float:
    """Return ``timeout`` as a float; ``ValueError`` if negative or NaN, worded as queue does.

    An integer too large for a float is infinite: a wait that long never ends.
    """
    tp = type(timeout)
    if tp is float:
        t: float = timeout  # type: ignore[assignment]
    elif hasattr(tp, "__index__"):
        i = operator.index(timeout)  # type: ignore[arg-type]
        t = float(i) if -(2**1000) < i < 2**1000 else (_INF if i > 0 else -_INF)
    elif hasattr(tp, "__float__"):
        try:
            t = float(timeout)  # type: ignore[arg-type]
        except TypeError as exc:
            raise TypeError(f"timeout must be a real number, not {tp.__name__!r}") from exc
    else:
        raise TypeError(f"timeout must be a real number, not {tp.__name__!r}")
    if not t >= 0.0:
        raise ValueError("'timeout' must be a non-negative number")
    return t


def check_clock(clock: object) -> None:
    """``TypeError`` naming ``clock`` unless it is callable."""
    if not callable(clock):
        raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")


def read_clock(clock: Callable[[], float]) -> float:
    """Call ``clock`` and return its reading; a non-number or non-finite one names ``clock()``."""
    return check_reading(clock())


def check_reading(reading: object) -> float:
    """A clock's ``reading`` as a finite float; else ``TypeError``/``ValueError`` naming ``clock()``."""
    if type(reading) is float:
        t: float = reading
    else:
        t = to_real(reading, "clock()")
    if t - t != 0.0:  # inf or NaN
        raise ValueError(f"clock() must return a finite number, got {t!r}")
    return t


def check_maxsize(maxsize: object) -> int:
    """``maxsize`` as an int; ``TypeError`` naming ``maxsize`` unless it is one."""
    if not hasattr(type(maxsize), "__index__"):
        raise TypeError(f"maxsize must be an int, not {type(maxsize).__name__!r}")
    return operator.index(maxsize)  # type: ignore[arg-type]


def check_real_maxsize(maxsize: object) -> float:
    """``maxsize`` of a drop-in queue: an int as an int, another real number as given.

    The standard library's queues take any number (``full()`` is ``qsize() >= maxsize >
    0``: a float 1.5 holds two items, NaN or infinity never fills); anything
    else raises ``TypeError`` naming ``maxsize``.
    """
    tp = type(maxsize)
    if hasattr(tp, "__index__"):
        return operator.index(maxsize)  # type: ignore[arg-type]
    try:
        if hasattr(tp, "__float__"):
            maxsize > 0  # type: ignore[operator]  # noqa: B015 -- what full() will compare, once now
            return maxsize  # type: ignore[return-value]
    except TypeError:
        pass
    raise TypeError(f"maxsize must be an int, not {tp.__name__!r}")  # as check_maxsize says
