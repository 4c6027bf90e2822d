"""The rules of TTLRing, shared by both implementations and the structures built on it.

``TTLRing.__getstate__`` returns ``(version, ttl, segment_size, clock,
pushed, expired, head, entries)``, ``entries`` being ``(key, created_at)``
oldest first.  Both implementations load through :func:`check_ring_state`,
so they accept and refuse the same states with the same errors.  The
argument checks (``ttl``, ``clock``, ``max_items``) and the reading of a
clock live here too: TTLDictCore (compiled and pure) and the TTLDict face
follow the same rules.
"""

from __future__ import annotations

import operator
import sys
from typing import Any, Callable, TypeVar

from ._convert import at_least, to_count, to_real
from ._validate import check_clock

__all__ = [
    "BATCH",
    "COMPACT_MIN",
    "STATE_VERSION",
    "MAX_COUNT",
    "MAX_SEGMENT_SIZE",
    "ttl_of",
    "segment_size_of",
    "real",
    "clock_of",
    "reading",
    "max_items_of",
    "reentered",
    "check_ring_state",
]

T = TypeVar("T")

#: The outer index is compacted once this many dead segments lead it and
#: they outnumber the live ones.
COMPACT_MIN = 32
#: Version of the state both implementations pickle to.
STATE_VERSION = 1
#: A purge (TTLRing's and TTLDict's) lets go of what it removed this many at
#: a time, once each batch has left: its memory stays bounded, and what the
#: keys' finalisers do meets a structure that is whole.
BATCH = 16
#: The most slots a segment may have.  A segment is allocated whole at the
#: push that opens it (a key list and a float array: 16 bytes a slot, so
#: 16 MiB at this bound) and one drained segment is kept spare; larger ones
#: only delay memory's return, since expire's cost never depends on the
#: segment size.  The bound also keeps every size a C Py_ssize_t.
MAX_SEGMENT_SIZE = 2**20
#: The pushed/expired counters are 64-bit unsigned in the compiled core.
MAX_COUNT = 2**64 - 1


def ttl_of(value: object) -> float:
    """``value`` as a ttl: a real number >= 0."""
    return at_least(to_real(value, "ttl"), 0.0, "ttl", "non-negative")


def segment_size_of(value: object) -> int:
    """``value`` as a segment size: an int from 1 to ``MAX_SEGMENT_SIZE``."""
    size = at_least(to_count(value, "segment_size"), 1, "segment_size", "at least 1")
    if size > MAX_SEGMENT_SIZE:
        raise ValueError(f"segment_size must be at most {MAX_SEGMENT_SIZE}, got {size!r}")
    return size


def real(value: object, name: str) -> float:
    """``to_real`` with the fast path of an exact float first."""
    if type(value) is float and value == value:
        return value
    return to_real(value, name)


def clock_of(clock: T) -> T:
    """``clock`` if it is callable (``_validate.check_clock``'s rule)."""
    check_clock(clock)
    return clock


def reading(clock: Callable[[], object]) -> float:
    """One reading of ``clock``; a NaN or a non-number raises naming ``clock()``."""
    return real(clock(), "clock()")


def max_items_of(value: object) -> int:
    """``max_items`` as a count; a negative one means no cap."""
    if not hasattr(type(value), "__index__"):
        raise TypeError(f"max_items must be an int, not {type(value).__name__!r}")
    n = operator.index(value)  # type: ignore[arg-type]
    return -1 if n < 0 else min(n, sys.maxsize)


def reentered(name: str) -> RuntimeError:
    """The error for a change made while another change of ``name`` is under way."""
    return RuntimeError(f"{name} was re-entered while it was being changed")


def enter(obj: Any, name: str) -> None:
    """Begin a change of ``obj`` (a pure ``name``); RuntimeError if one is under way.

    A clock, ``__float__``, ``__hash__`` or finaliser calling back into the
    structure meets the error instead of a half-made change.  The caller
    sets ``obj._busy = False`` when its change is complete.
    """
    if getattr(obj, "_busy", False):
        raise reentered(name)
    obj._busy = True


def enter_anew(obj: Any, name: str, fields: tuple[str, ...]) -> list[Any]:
    """``enter`` for a change replacing all of ``obj``: returns what ``fields`` held.

    The caller releases that list after its change, so no finaliser runs
    in the middle of it.
    """
    enter(obj, name)
    return [getattr(obj, field, None) for field in fields]


def check_ring_state(state: object) -> tuple[Any, ...]:
    """Validate a TTLRing state; return (ttl, size, clock, pushed, expired, head, keys, times).

    Runs before anything is changed, so a refused state leaves the ring as it was.
    """
    if type(state) is not tuple or len(state) != 8:
        raise TypeError("TTLRing state must be a tuple of 8 items")
    version, ttl, size, clock, pushed, expired, head, entries = state
    if type(version) is not int or version != STATE_VERSION:
        raise ValueError(f"unsupported TTLRing state version {version!r}")
    ttl = ttl_of(ttl)
    size = segment_size_of(size)
    clock = clock_of(clock)
    pushed = to_count(pushed, "pushed")
    expired = to_count(expired, "expired")
    head = to_count(head, "head")
    if head >= size:
        raise ValueError(f"head must be below segment_size, got {head!r}")
    if type(entries) is not list:
        raise TypeError("TTLRing state entries must be a list")
    keys: list[Any] = []
    times: list[float] = []
    for i, e in enumerate(list(entries)):
        if type(e) is not tuple or len(e) != 2:
            raise TypeError(f"TTLRing state entry {i} must be a (key, created_at) tuple")
        keys.append(e[0])
        times.append(real(e[1], f"created_at of entry {i}"))
    if pushed > MAX_COUNT or pushed - expired != len(keys):
        raise ValueError("TTLRing state counters do not match its entries")
    return ttl, size, clock, pushed, expired, head if keys else 0, keys, times
