"""The rules of TTLDictCore, shared by both implementations.

``TTLDictCore.__getstate__`` returns ``(version, ttl, maxsize, clock,
on_expire, attributes, entries)``, ``attributes`` being a copy of the
instance ``__dict__`` (a subclass's attributes; None for an object without
one) and ``entries`` the ``(key, value, created_at)`` held, oldest first.
A mapping made with ``lru=True`` returns version 3, which adds
``recency``: the indexes of ``entries`` from the least to the most
recently used (a mapping without it keeps writing version 2, which older
releases load).  A version 1 state (no ``attributes``) still loads.  Both implementations load through
:func:`check_dict_state`, so they accept and refuse the same states with the
same errors; ``ttl`` and ``clock`` follow TTLRing's rules
(:mod:`dq_core._ringstate`).
"""

from __future__ import annotations

from collections.abc import ItemsView, ValuesView
from typing import Any, Iterator, Optional, TypeVar

from ._convert import at_least, to_int
from ._ringstate import BATCH, clock_of, real, ttl_of

__all__ = [
    "STATE_VERSION",
    "LRU_STATE_VERSION",
    "SWEEP",
    "BATCH",
    "Entry",
    "maxsize_of",
    "on_expire_of",
    "lru_of",
    "attributes_of",
    "set_attributes",
    "check_dict_state",
    "tell_each",
    "LiveItems",
    "LiveValues",
]

T = TypeVar("T")

#: Version of the state both implementations pickle to (1: without attributes).
STATE_VERSION = 2
#: Version of the state of a mapping made with ``lru=True`` (2 and its recency order).
LRU_STATE_VERSION = 3
#: The most expired entries a set drops (its bounded work): two would do to
#: keep up with sets of new keys; more catch up sooner after a burst.
SWEEP = 8

Entry = tuple[Any, Any, float]  # (key, value, created_at)


def maxsize_of(value: object) -> Optional[int]:
    """``value`` as a maxsize: an int >= 1, or None for no limit (one rule, one message)."""
    if value is None:
        return None
    return at_least(to_int(value, "maxsize"), 1, "maxsize", "at least 1 or None")


def on_expire_of(value: T) -> T:
    """``value`` if it is callable or None."""
    if value is not None and not callable(value):
        raise TypeError(f"on_expire must be callable or None, not {type(value).__name__!r}")
    return value


def lru_of(value: object) -> bool:
    """``value`` as the ``lru`` option: True or False."""
    if type(value) is not bool:
        raise TypeError(f"lru must be True or False, not {type(value).__name__!r}")
    return value


def attributes_of(obj: object) -> Optional[dict[str, Any]]:
    """A copy of ``obj``'s instance ``__dict__``, None if it has none: a state's last item."""
    attrs = getattr(obj, "__dict__", None)
    return None if attrs is None else dict(attrs)


def set_attributes(obj: object, attrs: Optional[dict[str, Any]]) -> None:
    """Make ``obj``'s instance ``__dict__`` hold exactly ``attrs`` (None: leave it)."""
    held = getattr(obj, "__dict__", None)  # None: attrs is empty (check_dict_state)
    if attrs is not None and held is not None:
        if held is not attrs:
            old = dict(held)  # the old values go after the new ones are in place
            held.clear()
            held.update(attrs)
            del old


def check_dict_state(state: object, obj: object = None) -> tuple[Any, ...]:
    """Validate a TTLDictCore state; return (ttl, maxsize, clock, on_expire, entries, attrs, recency).

    ``entries`` are the ``(key, value, created_at)`` tuples to hold, oldest
    first, with no key twice (keys' ``__hash__`` and ``__eq__`` run here),
    checked before anything is changed.  ``attrs`` is the state's
    attributes, for ``obj`` (the object loading it) to take, or None.
    ``recency`` is None (a mapping without ``lru``), or the indexes of
    ``entries`` from the least to the most recently used (``lru=True``).
    """
    if type(state) is not tuple or not state:
        raise TypeError(f"TTLDict state must be a tuple of {STATE_VERSION + 5} items")
    version = state[0]
    if type(version) is not int or version not in (1, STATE_VERSION, LRU_STATE_VERSION):
        raise ValueError(f"unsupported TTLDict state version {version!r}")
    if len(state) != version + 5:
        raise TypeError(f"TTLDict state must be a tuple of {version + 5} items")
    recency = None
    if version == 1:
        version, ttl, maxsize, clock, on_expire, items = state
        attrs = None
    elif version == STATE_VERSION:
        version, ttl, maxsize, clock, on_expire, attrs, items = state
    else:
        version, ttl, maxsize, clock, on_expire, attrs, items, recency = state
    if attrs is not None:
        if type(attrs) is not dict:
            raise TypeError("TTLDict state attributes must be a dict or None")
        if attrs and getattr(obj, "__dict__", None) is None:
            raise TypeError(f"{type(obj).__name__!r} object has no __dict__ for the state's attributes")
    ttl = ttl_of(ttl)
    maxsize = maxsize_of(maxsize)
    clock = clock_of(clock)
    on_expire = on_expire_of(on_expire)
    if type(items) is not list:
        raise TypeError("TTLDict state entries must be a list")
    entries: list[Entry] = []
    for i, e in enumerate(list(items)):
        if type(e) is not tuple or len(e) != 3:
            raise TypeError(f"TTLDict state entry {i} must be a (key, value, created_at) tuple")
        entries.append((e[0], e[1], real(e[2], f"created_at of entry {i}")))
    if maxsize is not None and len(entries) > maxsize:
        raise ValueError(f"TTLDict state holds {len(entries)} entries, over maxsize {maxsize}")
    if len({e[0]: None for e in entries}) != len(entries):
        raise ValueError("TTLDict state holds a key twice")
    if version == LRU_STATE_VERSION:
        if type(recency) is not list or not all(type(i) is int for i in recency):
            raise TypeError("TTLDict state recency must be a list of entry indexes")
        recency = list(recency)
        if sorted(recency) != list(range(len(entries))):
            raise ValueError("TTLDict state recency must list every entry once")
    return ttl, maxsize, clock, on_expire, entries, attrs, recency


def tell_each(callback: Any, removed: Any, error: Optional[BaseException] = None) -> Optional[BaseException]:
    """``callback(key, value)`` for each removed pair, in order (``on_expire``).

    An Exception it raises is kept (the first one, or ``error`` if given)
    while the rest are still told, and returned; nothing is called when
    ``callback`` is None.
    """
    if callback is not None:
        for key, value in removed:
            try:
                callback(key, value)
            except Exception as exc:  # the rest are still told
                if error is None:
                    error = exc
    return error


_NONE: Any = object()


class LiveItems(ItemsView[Any, Any]):
    """``items()`` of TTLDict and WheelTTLDict: each pair read through the
    mapping's ``_peek``, so an entry that expires while the view is iterated
    is skipped and the recency order (lru) is left as it is."""

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        mapping: Any = self._mapping  # type: ignore[attr-defined]
        for key in mapping:
            value = mapping._peek(key, _NONE)
            if value is not _NONE:
                yield key, value


class LiveValues(ValuesView[Any]):
    """``values()`` of TTLDict and WheelTTLDict, read as ``LiveItems`` reads."""

    def __iter__(self) -> Iterator[Any]:
        for _, value in LiveItems(self._mapping):  # type: ignore[attr-defined]
            yield value
