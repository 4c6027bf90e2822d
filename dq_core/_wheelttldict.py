"""WheelTTLDict: a mapping with a TTL per key, expiring on a TimingWheel.

The entries and the hot paths (``[]``, ``get``, ``in``, setting, ``del``,
``len``, iteration, ``expire``, ``purge``, ``popitem``) live in ``WheelTTLCore``,
compiled or pure; this module makes it a MutableMapping and adds what is
shared by both implementations: the constructor's checks, views, ``pop``,
copying and pickling.
"""

from __future__ import annotations

import copyreg
import math
import time
import types
from collections.abc import ItemsView, ValuesView
from typing import TYPE_CHECKING, Any, Callable, Generic, MutableMapping, Optional, TypeVar, Union

from ._pickling import copied_by_state
from ._ringstate import clock_of, ttl_of
from ._ttldictstate import LiveItems, LiveValues, maxsize_of, on_expire_of

__all__ = ["WheelTTLDict"]

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

if TYPE_CHECKING:
    from ._wheelttlcore_py import WheelTTLCore

    class _Base(WheelTTLCore[K, V], MutableMapping[K, V]):
        pass
else:
    _Base = Generic  # dq_core._assemble adds an implementation's WheelTTLCore and MutableMapping

_INF = math.inf
_MISSING: Any = object()


@copied_by_state()
class WheelTTLDict(_Base[K, V]):
    """A mapping whose keys each live their own ttl, expiring on a TimingWheel.

    ``d[key] = value`` gives the entry the default ``ttl`` of the
    constructor; ``d.set(key, value, ttl)`` gives it its own.  A ttl is a
    number of seconds >= 0 (``math.inf``, or a default ``ttl`` of None,
    for an entry that never expires); setting a key (new or existing)
    restarts its life.  An expired key is absent from every read (``in``,
    ``[]``, ``get``, ``len``, iteration) even before ``expire()`` runs:
    reads compare its deadline with ``clock()``.  ``len()`` and iteration
    purge expired entries first, and every set purges those that came due
    (at most once a ``tick``), so memory follows the live entries.

    ``maxsize`` (an int >= 1, or None for no limit) evicts the least
    recently used key when a new key would exceed it, after dropping the
    expired ones; a read (``[]``, ``get``, ``setdefault``) or a set makes
    a key the most recently used (``in``, iteration and the views do
    not).  Iteration goes from the least to the most recently used key
    (in set order when ``maxsize`` is None).

    ``on_expire(key, value)`` is called once for every entry removed
    because it expired or was evicted by ``maxsize`` (not for ``del``,
    ``pop``, ``popitem``, ``clear`` or overwrite), once the mapping is
    consistent; the first exception it raises propagates after all calls
    are made.  Setting a key whose entry has expired is an insert: that
    entry goes to ``on_expire`` then (the new value set), and never to
    ``expire()``.  ``expire()`` returns the pairs it removed; ``purge()``
    removes the same ones and returns only how many.

    ``tick`` is the wheel's resolution: it only decides how often the
    wheel hands entries back, never when a read sees them expire.  Not
    thread-safe: share it between threads under a lock (``dq_core.cached``
    does).  ``copy.copy``, ``copy.deepcopy`` and ``pickle`` work (the
    clock and ``on_expire`` are pickled too); a pickle made by either
    implementation loads in the other.

    >>> now = [0.0]
    >>> d = WheelTTLDict(10, clock=lambda: now[0])
    >>> d["session"] = "alice"
    >>> d.set("token", "t1", ttl=2)
    >>> now[0] = 2.0; sorted(d)
    ['session']
    >>> now[0] = 10.0; "session" in d
    False
    >>> d.expire()
    [('session', 'alice')]
    """

    if not TYPE_CHECKING:  # a plain alias, as TTLDict's
        __class_getitem__ = classmethod(types.GenericAlias)

    #: the TimingWheel class of the implementation (``dq_core._assemble`` sets it)
    _TimingWheel: Any = None

    def __init__(
        self,
        ttl: Optional[float] = None,
        maxsize: Optional[int] = None,
        clock: Callable[[], float] = time.monotonic,
        on_expire: Optional[Callable[[K, V], object]] = None,
        *,
        tick: float = 0.01,
    ) -> None:
        life = _INF if ttl is None else ttl_of(ttl)
        size = maxsize_of(maxsize)
        on_expire = on_expire_of(on_expire)
        clock_of(clock)
        wheel = self._TimingWheel(tick=tick, clock=clock)  # checks tick, reads the clock
        self._setup(life, size, clock, on_expire, wheel)

    def items(self) -> ItemsView[K, V]:
        """A view of the live ``(key, value)`` pairs (one expiring meanwhile is skipped)."""
        return LiveItems(self)

    def values(self) -> ValuesView[V]:
        """A view of the live values (one expiring meanwhile is skipped)."""
        return LiveValues(self)

    def pop(self, key: K, default: Union[V, T] = _MISSING) -> Union[V, T]:
        """Remove ``key`` and return its value, else ``default`` (KeyError if not given).  O(1)."""
        try:
            value: V = self._drop(key)
        except KeyError:
            if default is _MISSING:
                raise
            return default
        return value

    @property
    def ttl(self) -> Optional[float]:
        """The default ttl of ``d[key] = value`` and ``set`` (None: never expires)."""
        return None if self._ttl == _INF else self._ttl

    @property
    def maxsize(self) -> Optional[int]:
        """The most keys held (None: no limit); the least recently used go first."""
        return self._maxsize

    @property
    def tick(self) -> float:
        """The wheel's tick: how often it hands expired entries back."""
        return self._tick

    def __repr__(self) -> str:
        return f"<{type(self).__name__} held={self._held()} ttl={self.ttl!r} maxsize={self._maxsize!r}>"

    # -- copying, pickling, invariants ---------------------------------------

    def __getstate__(self) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        return (
            1,
            self._ttl,
            self._maxsize,
            self._clock,
            self.on_expire,
            self._tick,
            self._wheel_time(),
            self._entries(),
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        version, life, size, clock, on_expire, tick, _, entries = state
        if version != 1:
            raise ValueError(f"unknown WheelTTLDict state version {version!r}")
        wheel = self._TimingWheel(tick=tick, clock=clock)
        self._setup(life, size, clock, on_expire, wheel)
        self._load(entries)

    def __reduce__(self) -> tuple[Any, ...]:
        cls = type(self)
        if cls.__module__ == "dq_core" and cls.__qualname__ == "WheelTTLDict":
            from ._pickling import restore

            return restore, ("WheelTTLDict",), self.__getstate__()
        return copyreg.__newobj__, (cls,), self.__getstate__()  # type: ignore[attr-defined]
