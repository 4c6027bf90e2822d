"""The dict, the ring and the hot paths of TTLDict (pure twin of ``_ttldictcore``).

Every set pushes its entry ``(key, value, created_at)`` on a TTLRing (the
ring of this implementation) and maps the key to it in a dict; the ring
gives the expiry order, the dict the current entry of each key.
``dq_core._ttldict.TTLDict`` makes this a MutableMapping.

User code (a key's ``__eq__`` or ``__hash__``, a finaliser run by the
garbage collector) may try to change the mapping while one of its changes
is under way; that re-entry is refused with ``RuntimeError``, so no change
ever sees a half-made one.  Changes from several threads take turns on a
lock, as the compiled core's run whole under the GIL (or a critical
section): each operation is atomic in both implementations.
"""

from __future__ import annotations

import threading
import time
import types
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Optional, TypeVar

from ._ringcore_py import TTLRing
from ._ringstate import clock_of, reading, real, reentered, ttl_of
from ._ttldictstate import (
    STATE_VERSION, Entry, attributes_of, check_dict_state, maxsize_of, on_expire_of, set_attributes,
)

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = types.MappingProxyType({})


__all__ = ["TTLDictCore"]

K = TypeVar("K")
V = TypeVar("V")


_FIELDS = ("_ring", "_data", "_clock", "_on_expire")  # what a re-initialisation releases after it


class TTLDictCore(Generic[K, V]):
    """The dict, the ring and the hot paths of TTLDict.

    Every set pushes its entry ``(key, value, created_at)`` on the ring; the
    dict maps each key to its latest entry, so a ring entry whose key was
    set again since is recognised as stale by identity and skipped.  Every
    entry the dict holds is on the ring, at every point where user code
    (a key's ``__hash__`` or ``__eq__``, the clock) can run.

    >>> d = TTLDictCore(10, clock=lambda: 0.0)
    >>> d["a"] = 1
    >>> d["a"], "b" in d
    (1, False)
    >>> d._purge(10.0)
    [('a', 1)]
    """

    __slots__ = ("_ring", "_data", "_ttl", "_clock", "_maxsize", "_on_expire", "_busy", "_lock",
                 "__weakref__")
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)
    _busy: int  # the ident of the thread whose change is under way, or 0
    _lock: threading.Lock  # held by that change

    def __init__(self, ttl: float, maxsize: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_expire: Optional[Callable[[K, V], object]] = None) -> None:
        ring: TTLRing[Entry] = TTLRing(ttl, clock=clock)
        maxsize = maxsize_of(maxsize)
        on_expire = on_expire_of(on_expire)
        # what a re-initialised mapping held goes after the change is complete
        old = self._enter_anew()
        self._on_expire = on_expire
        self._maxsize = maxsize
        self._clock: Callable[[], float] = clock
        self._ttl: float = ring.ttl
        self._ring: TTLRing[Entry] = ring
        self._data: dict[K, Entry] = {}
        self._leave()
        del old

    # One change at a time.  Another thread's change waits for the lock; a
    # change from user code that the change under way runs (a key's
    # __hash__/__eq__, a finaliser: the same thread) is refused, never
    # waited for, so it cannot deadlock nor see a half-made change.

    def _enter(self, /) -> None:
        me = threading.get_ident()
        if self._busy == me:
            raise reentered("TTLDict")
        self._lock.acquire()
        self._busy = me

    def _leave(self, /) -> None:
        self._busy = 0
        self._lock.release()

    def _enter_anew(self, /) -> list[Any]:
        """``_enter`` for a change replacing all of self (a fresh object gets its lock)."""
        try:
            self._lock
        except AttributeError:
            self._lock = threading.Lock()
            self._busy = 0
        self._enter()
        return [getattr(self, field, None) for field in _FIELDS]

    def _get_ttl(self, /) -> float:
        return self._ttl

    def _set_ttl(self, /, value: float) -> None:
        ttl = ttl_of(value)  # user code (__float__) runs before anything changes
        self._ring._ttl = ttl
        self._ttl = ttl

    ttl = property(_get_ttl, _set_ttl,
                   doc="Seconds every entry lives; a new value applies to all entries at once.")

    @property
    def maxsize(self) -> Optional[int]:
        """Most entries held (an int >= 1), or None for no limit; lowering it evicts at once."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, value: Optional[int]) -> None:
        maxsize = maxsize_of(value)
        # lowered: the entries over it go at once, expired ones first, as at a set
        now = 0.0
        if maxsize is not None and len(self._data) > maxsize:
            now = reading(self._clock)
        self._enter()
        removed: Optional[list[tuple[K, V]]] = None
        try:
            self._maxsize = maxsize
            if maxsize is not None and len(self._data) > maxsize:
                removed = self._shrink(now, [])
        finally:
            self._leave()
        if removed:
            self._notify(removed)

    @property
    def on_expire(self) -> Optional[Callable[[K, V], object]]:
        """Called as ``on_expire(key, value)`` for every expired or evicted entry, or None."""
        return self._on_expire

    @on_expire.setter
    def on_expire(self, value: Optional[Callable[[K, V], object]]) -> None:
        self._on_expire = on_expire_of(value)

    @property
    def clock(self) -> Callable[[], float]:
        """The callable read for every "now"."""
        return self._clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self._clock = clock_of(value)

    def __getitem__(self, key: K, /) -> V:
        """Return self[key]."""
        entry = self._data[key]
        now = self._clock()  # reading(self._clock), its float fast path inline
        if type(now) is not float or now != now:
            now = real(now, "clock()")
        if entry[2] + self._ttl <= now:
            raise KeyError(key)
        return entry[1]  # type: ignore[no-any-return]

    def __contains__(self, key: object, /) -> bool:
        entry = self._data.get(key)  # type: ignore[arg-type]
        if entry is None:
            return False
        now = self._clock()  # reading(self._clock), its float fast path inline
        if type(now) is not float or now != now:
            now = real(now, "clock()")
        return not entry[2] + self._ttl <= now

    __contains__.__doc__ = list.__contains__.__doc__  # the compiled slot's, per Python version

    def __setitem__(self, key: K, value: V) -> None:
        now = self._clock()  # reading(self._clock), its float fast path inline
        if type(now) is not float or now != now:
            now = real(now, "clock()")
        self._enter()
        removed: Optional[list[tuple[K, V]]] = None
        try:
            data = self._data
            entry = (key, value, now)
            old = data.setdefault(key, entry)  # a raising __hash__/__eq__ leaves everything as it was
            if old is not entry:
                data[key] = entry
            self._ring.push(entry, now)
            if old is not entry and old[2] + self._ttl <= now:
                # Expired, so absent from every read: this set is an insert.
                # The old entry, stale on the ring from now on (expire skips
                # it), is reported here and only here.
                removed = [(old[0], old[1])]
            maxsize = self._maxsize
            if maxsize is not None and len(data) > maxsize:
                removed = self._shrink(now, [] if removed is None else removed)
        finally:
            self._leave()
        if removed:
            self._notify(removed)

    def __delitem__(self, key: K) -> None:
        self._take(key)

    def _take(self, /, key: K) -> V:
        """Remove ``key`` and return its value; KeyError if absent or expired."""
        now = reading(self._clock)
        self._enter()
        try:
            data = self._data
            entry = data[key]
            if entry[2] + self._ttl <= now:
                raise KeyError(key)
            del data[key]  # its ring entry is stale from now on
        finally:
            self._leave()
        return entry[1]  # type: ignore[no-any-return]

    def _popfirst(self, /) -> tuple[K, V]:
        """Remove and return the first live ``(key, value)`` in insertion order."""
        now = reading(self._clock)
        self._enter()
        try:
            data = self._data
            ttl = self._ttl
            for key, entry in data.items():
                if not entry[2] + ttl <= now:
                    break
            else:
                raise KeyError("popitem(): dictionary is empty")
            del data[key]
        finally:
            self._leave()
        return key, entry[1]

    def clear(self, /) -> None:
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        self._enter()
        try:
            ring, data = self._ring, self._data
            self._ring = TTLRing(self._ttl, clock=self._clock)
            self._data = {}
        finally:
            self._leave()
        del ring, data  # the old entries go here, after the change is complete

    def _next_expiry(self, /) -> Optional[float]:
        """When the oldest entry held expires, or None (a stale one may answer early)."""
        return self._ring.next_expiry()

    def _purge(self, /, now: float) -> list[tuple[K, V]]:
        """Drop the expired entries still held; return them as (key, value)."""
        self._enter()
        try:
            return self._drop_due(now, [])
        finally:
            self._leave()

    def _shrink(self, now: float, out: list[tuple[K, V]]) -> list[tuple[K, V]]:
        # maxsize is exceeded: expired entries go first, then the oldest, into out
        self._drop_due(now, out)
        data, ring, maxsize = self._data, self._ring, self._maxsize
        while len(data) > maxsize and len(ring):  # type: ignore[operator]
            self._drop_head(out)
        return out

    def _drop_due(self, now: float, out: list[tuple[K, V]]) -> list[tuple[K, V]]:
        # Each due head entry leaves the dict before it leaves the ring (the
        # ones done, in one pop at the end), so a key's __hash__/__eq__ raising
        # here leaves every held entry on the ring.  Appended to out.
        data = self._data
        done = 0
        try:
            for entry in self._ring._due(now):
                key = entry[0]
                if data.get(key) is entry:
                    del data[key]
                    out.append((key, entry[1]))
                done += 1
        finally:
            if done:
                self._ring._expire(0.0, done, False)
        return out

    def _drop_head(self, out: list[tuple[K, V]]) -> None:
        # drop the ring's head entry, and from the dict if it is current there
        entry = self._ring._peek()
        key = entry[0]
        data = self._data
        if data.get(key) is entry:
            del data[key]
            out.append((key, entry[1]))
        self._ring._expire(0.0, 1, False)

    def _notify(self, removed: list[tuple[K, V]]) -> None:
        raise NotImplementedError  # provided by dq_core._ttldict.TTLDict

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        # a change under way has no whole state yet; none starts while it is read
        self._enter()
        try:
            held = {id(e) for e in self._data.values()}
            entries = [e for e, _ in self._ring._entries() if id(e) in held]
            return (STATE_VERSION, self._ttl, self._maxsize, self._clock, self._on_expire,
                    attributes_of(self), entries)
        finally:
            self._leave()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        ttl, maxsize, clock, on_expire, entries, data, attrs = check_dict_state(state, self)
        ring: TTLRing[Entry] = TTLRing(ttl, clock=clock)
        for e in entries:
            ring.push(e, e[2])
        old = self._enter_anew()
        self._ttl, self._maxsize, self._clock, self._on_expire = ttl, maxsize, clock, on_expire
        self._ring, self._data = ring, data
        self._leave()
        del old  # released after the change
        set_attributes(self, attrs)

    def _check(self, /) -> None:
        """Assert every held entry is on the ring, and the bookkeeping around it."""
        self._enter()  # nothing changes while it is read
        try:
            ring, ttl = self._ring, self._ttl
            entries = ring._entries()
            values = list(self._data.values())
            ring._check()
        finally:
            self._leave()
        assert ring.ttl == ttl
        on_ring = {id(e) for e, _ in entries}
        for e in values:
            assert type(e) is tuple and len(e) == 3 and type(e[2]) is float, e
            assert id(e) in on_ring, e
