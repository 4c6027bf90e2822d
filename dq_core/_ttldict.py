"""TTLDict: a mapping whose entries all live ``ttl`` seconds, built on TTLRing.

Every set pushes its entry ``(key, value, created_at)`` on the ring; the dict
maps each key to its latest entry, so a ring entry whose key was set again
since is recognised as stale by identity and skipped.  Expiry therefore
costs O(1) when nothing is due and O(k) for k expired entries.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator, MutableMapping, Optional, TypeVar

from ._compat import core
from ._convert import to_count

if TYPE_CHECKING:
    from ._ring_py import TTLRing
else:
    TTLRing = core("_ring").TTLRing

__all__ = ["TTLDict"]

K = TypeVar("K")
V = TypeVar("V")
Entry = tuple[Any, Any, float]  # (key, value, created_at)


class TTLDict(MutableMapping[K, V]):
    """A mapping whose entries all live ``ttl`` seconds from when they were set.

    Setting a key (new or existing) restarts its life.  An expired key is
    absent from every read (``in``, ``[]``, ``get``, ``len``, iteration) even
    before ``expire()`` runs; ``len()`` and iteration purge expired entries
    first.  ``maxsize`` evicts the oldest entry when a new key would exceed
    it.  ``on_expire(key, value)`` is called for every entry removed because
    it expired or was evicted (not for ``del`` or overwrite), once the
    mapping is consistent; the first exception it raises propagates after
    all calls are made.

    >>> now = [0.0]
    >>> d = TTLDict(10, clock=lambda: now[0])
    >>> d["session"] = "alice"
    >>> now[0] = 9.0; d["session"]
    'alice'
    >>> now[0] = 10.0; "session" in d
    False
    >>> d.expire()
    [('session', 'alice')]
    """

    #: The ring class; the test matrix swaps in each implementation's.
    _ring_class: ClassVar[Any] = TTLRing

    def __init__(self, ttl: float, maxsize: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_expire: Optional[Callable[[K, V], Any]] = None) -> None:
        self._ring: TTLRing[Entry] = self._ring_class(ttl, clock=clock)
        if maxsize is not None:
            maxsize = to_count(maxsize, "maxsize")
            if maxsize < 1:
                raise ValueError(f"maxsize must be at least 1 or None, got {maxsize!r}")
        self.maxsize = maxsize
        self.on_expire = on_expire
        self._clock = clock
        self._data: dict[K, Entry] = {}

    @property
    def ttl(self) -> float:
        """Seconds every entry lives; a new value applies to all entries at once."""
        return self._ring.ttl

    @ttl.setter
    def ttl(self, value: float) -> None:
        self._ring.ttl = value

    def _live(self, key: object) -> Entry:
        entry = self._data[key]  # type: ignore[index]
        if entry[2] + self._ring.ttl <= self._clock():
            raise KeyError(key)
        return entry

    def __getitem__(self, key: K) -> V:
        return self._live(key)[1]  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        try:
            self._live(key)
        except KeyError:
            return False
        return True

    def __setitem__(self, key: K, value: V) -> None:
        now = self._clock()
        data = self._data
        removed: list[tuple[K, V]] = []
        if self.maxsize is not None and key not in data and len(data) >= self.maxsize:
            removed = self._purge(now)
            if len(data) >= self.maxsize:
                removed.append(self._evict_oldest())
        entry = (key, value, now)
        data[key] = entry
        self._ring.push(entry, now)
        if removed:
            self._notify(removed)

    def __delitem__(self, key: K) -> None:
        self._live(key)
        del self._data[key]  # its ring entry is stale from now on

    def __len__(self) -> int:
        self.expire()
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        self.expire()
        return iter(self._data)

    def clear(self) -> None:
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        ring = self._ring
        self._ring = type(ring)(ring.ttl, clock=self._clock)
        self._data = {}

    def _purge(self, now: float) -> list[tuple[K, V]]:
        data = self._data
        out = []
        for entry in self._ring.expire(now):
            key = entry[0]
            if data.get(key) is entry:
                del data[key]
                out.append((key, entry[1]))
        return out

    def _evict_oldest(self) -> tuple[K, V]:
        data = self._data
        while True:
            entry = self._ring.popleft()
            key = entry[0]
            if data.get(key) is entry:
                del data[key]
                return key, entry[1]

    def _notify(self, removed: list[tuple[K, V]]) -> None:
        callback = self.on_expire
        if callback is None:
            return
        error: Optional[BaseException] = None
        for key, value in removed:
            try:
                callback(key, value)
            except Exception as exc:  # the rest are still told
                if error is None:
                    error = exc
        if error is not None:
            raise error

    def expire(self, now: Optional[float] = None) -> list[tuple[K, V]]:
        """Remove and return the expired ``(key, value)`` pairs still held, oldest first.

        ``now`` defaults to ``clock()``.  O(1) when nothing is due, O(k) for
        k expired entries (entries overwritten since count among k).
        """
        removed = self._purge(self._clock() if now is None else now)
        if removed:
            self._notify(removed)
        return removed

    def next_expiry(self) -> Optional[float]:
        """When the oldest entry held expires, or None (a stale one may answer early).  O(1)."""
        return self._ring.next_expiry()

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} held={len(self._data)} ttl={self._ring.ttl!r} "
                f"maxsize={self.maxsize!r}>")
