"""TTLDict: a mapping whose entries all live ``ttl`` seconds, built on TTLRing.

The hot paths (``[]``, ``in``, ``del``, setting, the purge loop) live in
``TTLDictCore``, compiled or pure; this module makes it a MutableMapping and
adds what is shared by both implementations: ``expire``, ``len``,
iteration, ``on_expire`` dispatch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, MutableMapping, Optional, TypeVar

from ._compat import core

if TYPE_CHECKING:
    from ._ring_py import TTLDictCore
else:
    TTLDictCore = core("_ring").TTLDictCore

__all__ = ["TTLDict", "TTLDictMethods"]

K = TypeVar("K")
V = TypeVar("V")


class TTLDictMethods:
    """What TTLDict adds to either implementation's TTLDictCore."""

    if TYPE_CHECKING:
        _ring: Any
        _data: dict[Any, Any]
        _ttl: float
        _clock: Any
        on_expire: Any

        def _purge(self, now: float) -> list[tuple[Any, Any]]: ...

    def __len__(self) -> int:
        self.expire()
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        self.expire()
        return iter(self._data)

    def clear(self) -> None:
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        self._ring = type(self._ring)(self._ttl, clock=self._clock)
        self._data = {}

    def _notify(self, removed: list[tuple[Any, Any]]) -> None:
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

    def expire(self, now: Optional[float] = None) -> list[tuple[Any, Any]]:
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
        return self._ring.next_expiry()  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} held={len(self._data)} ttl={self._ttl!r} "
                f"maxsize={getattr(self, 'maxsize', None)!r}>")


class TTLDict(TTLDictMethods, TTLDictCore[K, V], MutableMapping[K, V]):
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
