"""WheelTTLDict: a mapping with a TTL per key, expiring on a TimingWheel.

Each key maps to its entry ``[key, value, deadline, handle]``; the entry is
also an item of a TimingWheel (the wheel of the implementation in use,
handed down by ``dq_core._assemble``), scheduled at its deadline, so a set
and an expiry cost O(1) whatever the ttl.  Reads compare the deadline with
the clock, so an expired value is never returned, whether the wheel has
given the entry back yet or not.  An ordered dict keeps the keys from
least to most recently used, for ``maxsize``.
"""

from __future__ import annotations

import copyreg
import math
import time
import types
from collections import OrderedDict
from collections.abc import ItemsView, ValuesView
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterator,
    MutableMapping,
    Optional,
    TypeVar,
    Union,
)

from ._pickling import copied_by_state
from ._ringstate import clock_of, ttl_of
from ._ringstate import real as _real
from ._ttldictstate import maxsize_of, on_expire_of, tell_each

__all__ = ["WheelTTLDict"]

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

_INF = math.inf
_MISSING: Any = object()
_KEY, _VALUE, _DEADLINE, _HANDLE = range(4)  # the fields of an entry


def _deadline_of(e: list[Any]) -> float:
    d: float = e[_DEADLINE]
    return d


class _Items(ItemsView[K, V]):
    # Reads without refreshing recency; an entry that expires meanwhile is skipped.
    def __iter__(self) -> Iterator[tuple[K, V]]:
        mapping: Any = self._mapping  # type: ignore[attr-defined]
        for key in mapping:
            value = mapping._peek(key)
            if value is not _MISSING:
                yield key, value


class _Values(ValuesView[V]):
    def __iter__(self) -> Iterator[V]:
        for _, value in _Items(self._mapping):  # type: ignore[attr-defined]
            yield value


@copied_by_state()
class WheelTTLDict(MutableMapping[K, V]):
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
    ``expire()``.

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

    _data: OrderedDict[K, list[Any]]
    _wheel: Any

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

    def _setup(
        self,
        life: float,
        size: Optional[int],
        clock: Callable[[], float],
        on_expire: Optional[Callable[[K, V], object]],
        wheel: Any,
    ) -> None:
        self._ttl = life
        self._maxsize = size
        self._clock = clock
        self.on_expire = on_expire
        self._tick: float = wheel.tick
        self._wheel = wheel
        self._data = OrderedDict()
        self._soon: list[list[Any]] = []  # entries off the wheel, due within two ticks, by deadline
        self._purge_at = -_INF  # a set purges once the clock reaches this

    # -- reads ----------------------------------------------------------------

    def _now(self) -> float:
        t = self._clock()
        if type(t) is not float or t != t:
            t = _real(t, "clock()")
        return t

    def __getitem__(self, key: K) -> V:
        e = self._data[key]  # [key, value, deadline, handle], indexed by literals: hot path
        if e[2] != _INF:
            t = self._clock()
            if type(t) is not float or t != t:
                t = _real(t, "clock()")
            if e[2] <= t:
                raise KeyError(key)
        if self._maxsize is not None:
            self._data.move_to_end(key)
        value: V = e[1]
        return value

    def get(self, key: K, default: Any = None) -> Any:
        """The value of ``key`` if it is live, else ``default`` (a hit refreshes it).  O(1)."""
        e = self._data.get(key)
        if e is None:
            return default
        if e[2] != _INF:
            t = self._clock()
            if type(t) is not float or t != t:
                t = _real(t, "clock()")
            if e[2] <= t:
                return default
        if self._maxsize is not None:
            self._data.move_to_end(key)
        return e[1]

    def _peek(self, key: K) -> Any:
        """The value of ``key`` if it is live, else ``_MISSING``; recency unchanged."""
        e = self._data.get(key)
        if e is None or (e[_DEADLINE] != _INF and e[_DEADLINE] <= self._now()):
            return _MISSING
        return e[_VALUE]

    def __contains__(self, key: object) -> bool:
        e = self._data.get(key)  # type: ignore[arg-type]
        return e is not None and (e[_DEADLINE] == _INF or e[_DEADLINE] > self._now())

    def deadline(self, key: K) -> float:
        """When ``key`` expires on the clock (``math.inf``: never); KeyError if absent.  O(1)."""
        e = self._data[key]
        if e[_DEADLINE] != _INF and e[_DEADLINE] <= self._now():
            raise KeyError(key)
        d: float = e[_DEADLINE]
        return d

    def __len__(self) -> int:
        self.expire()
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        self.expire()
        # the keys live now, copied: a purge while they are walked changes nothing here
        return iter(list(self._data))

    def items(self) -> ItemsView[K, V]:
        """A view of the live ``(key, value)`` pairs (one expiring meanwhile is skipped)."""
        return _Items(self)

    def values(self) -> ValuesView[V]:
        """A view of the live values (one expiring meanwhile is skipped)."""
        return _Values(self)

    # -- changes --------------------------------------------------------------

    def __setitem__(self, key: K, value: V) -> None:
        self.set(key, value)

    def set(self, key: K, value: V, ttl: Optional[float] = None) -> None:
        """Map ``key`` to ``value`` for ``ttl`` seconds (None: the default ttl).  O(1) amortised.

        A ttl of ``math.inf`` never expires; 0 expires at once.
        """
        if ttl is None:
            life = self._ttl
        elif type(ttl) is float and ttl >= 0.0:  # the common case, without a call
            life = ttl
        else:
            life = ttl_of(ttl)
        now = self._clock()
        if type(now) is not float or now != now:
            now = _real(now, "clock()")
        deadline = now + life
        data, wheel = self._data, self._wheel
        told: list[tuple[K, V]] = []
        old = data.get(key)
        if old is not None:
            if old[_HANDLE] is not None:
                wheel.cancel(old[_HANDLE])
                old[_HANDLE] = None
            if old[_DEADLINE] <= now:  # expired, never handed back: on_expire sees it now
                told.append((key, old[_VALUE]))
        elif self._maxsize is not None and len(data) >= self._maxsize:
            told += self._purge(now)  # expired entries go before a live one is evicted
        e: list[Any] = [key, value, deadline, None]
        if deadline != _INF:
            e[_HANDLE] = wheel.schedule_at(e, deadline)
        try:
            data[key] = e
        except BaseException:  # a key's __hash__/__eq__ raised: the wheel lets it go
            if e[_HANDLE] is not None:
                wheel.cancel(e[_HANDLE])
            raise
        if self._maxsize is not None:
            data.move_to_end(key)
            while len(data) > self._maxsize:
                k, gone = data.popitem(last=False)
                if gone[_HANDLE] is not None:
                    wheel.cancel(gone[_HANDLE])
                told.append((k, gone[_VALUE]))
        if now >= self._purge_at:
            told += self._purge(now)
        if told:
            self._notify(told)

    def _drop(self, key: K) -> list[Any]:
        """Remove the live entry of ``key`` and return it; KeyError if absent or expired."""
        e = self._data[key]
        if e[_DEADLINE] != _INF and e[_DEADLINE] <= self._now():
            raise KeyError(key)  # left for the purge, which tells on_expire
        del self._data[key]
        if e[_HANDLE] is not None:
            self._wheel.cancel(e[_HANDLE])
        return e

    def __delitem__(self, key: K) -> None:
        self._drop(key)

    def pop(self, key: K, default: Union[V, T] = _MISSING) -> Union[V, T]:
        """Remove ``key`` and return its value, else ``default`` (KeyError if not given).  O(1)."""
        try:
            value: V = self._drop(key)[_VALUE]
        except KeyError:
            if default is _MISSING:
                raise
            return default
        return value

    def popitem(self) -> tuple[K, V]:
        """Remove and return the least recently used live ``(key, value)``; KeyError if none."""
        self.expire()
        try:
            key, e = self._data.popitem(last=False)
        except KeyError:
            raise KeyError("popitem(): mapping is empty") from None
        if e[_HANDLE] is not None:
            self._wheel.cancel(e[_HANDLE])
        return key, e[_VALUE]

    def clear(self) -> None:
        """Remove every entry (``on_expire`` is not called).  O(n)."""
        self._data = OrderedDict()
        self._soon = []
        self._wheel = self._TimingWheel(tick=self._tick, clock=self._clock)

    # -- expiry ---------------------------------------------------------------

    def _purge(self, now: float) -> list[tuple[K, V]]:
        """Remove and return every entry whose deadline is <= ``now``, earliest first."""
        tick = self._tick
        self._purge_at = now + tick
        data, soon = self._data, self._soon
        out: list[tuple[K, V]] = []
        if soon and soon[0][_DEADLINE] <= now:
            i, n = 0, len(soon)
            while i < n and soon[i][_DEADLINE] <= now:
                i += 1
            gone = soon[:i]
            del soon[:i]
            for e in gone:
                if data.get(e[_KEY]) is e:  # not removed or set again since
                    del data[e[_KEY]]
                    out.append((e[_KEY], e[_VALUE]))
        wheel = self._wheel
        if not len(wheel):
            return out
        # The wheel gives an item back up to a tick after its deadline: looking
        # two ticks ahead returns all that expired.  The few live ones it gives
        # too wait in ``soon``, sorted, so that calls more frequent than ticks
        # never hand them back and forth.
        due = wheel.advance(now + 2 * tick)
        early: list[list[Any]] = []
        i = 0
        try:
            for i, e in enumerate(due):
                if e[_DEADLINE] <= now:
                    del data[e[_KEY]]
                    e[_HANDLE] = None
                    out.append((e[_KEY], e[_VALUE]))
                else:
                    e[_HANDLE] = None
                    early.append(e)
        except BaseException:  # a key's __eq__ raised: the rest wait in soon
            for e in due[i:]:
                e[_HANDLE] = None
                early.append(e)
            raise
        finally:
            if early:
                soon += early
                soon.sort(key=_deadline_of)
        return out

    def _notify(self, removed: list[tuple[K, V]]) -> None:
        error = tell_each(self.on_expire, removed)
        if error is not None:
            raise error

    def expire(self, now: Optional[float] = None) -> list[tuple[K, V]]:
        """Remove and return the expired ``(key, value)`` pairs still held.

        ``now`` defaults to ``clock()``.  O(k + s) for k expired entries and
        s occupied wheel slots passed; O(1) when nothing is due.  Entries
        come out earliest deadline first (to the ``tick``), and are also
        passed to ``on_expire`` (when given), one call each, before this
        returns.
        """
        t = self._now() if now is None else _real(now, "now")
        removed = self._purge(t)
        if removed:
            self._notify(removed)
        return removed

    def next_expiry(self) -> Optional[float]:
        """A time before which no entry expires (a lower bound), or None.  O(levels)."""
        d: Optional[float] = self._wheel.next_deadline()
        return d

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
        return f"<{type(self).__name__} held={len(self._data)} ttl={self.ttl!r} maxsize={self._maxsize!r}>"

    # -- copying, pickling, invariants ---------------------------------------

    def __getstate__(self) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        entries = [(e[_KEY], e[_VALUE], e[_DEADLINE]) for e in self._data.values()]
        return (
            1,
            self._ttl,
            self._maxsize,
            self._clock,
            self.on_expire,
            self._tick,
            self._wheel.wheel_time,
            entries,
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        version, life, size, clock, on_expire, tick, _, entries = state
        if version != 1:
            raise ValueError(f"unknown WheelTTLDict state version {version!r}")
        wheel = self._TimingWheel(tick=tick, clock=clock)
        self._setup(life, size, clock, on_expire, wheel)
        for key, value, deadline in entries:
            e: list[Any] = [key, value, deadline, None]
            if deadline != _INF:
                e[_HANDLE] = wheel.schedule_at(e, deadline)
            self._data[key] = e

    def __reduce__(self) -> tuple[Any, ...]:
        cls = type(self)
        if cls.__module__ == "dq_core" and cls.__qualname__ == "WheelTTLDict":
            from ._pickling import restore

            return restore, ("WheelTTLDict",), self.__getstate__()
        return copyreg.__newobj__, (cls,), self.__getstate__()  # type: ignore[attr-defined]

    def _check(self) -> None:
        """Assert the invariants: each entry with a finite deadline is on the wheel or in soon."""
        self._wheel._check()
        on_wheel = sum(1 for e in self._data.values() if e[_HANDLE] is not None)
        assert on_wheel == len(self._wheel), (on_wheel, len(self._wheel))
        soon = {id(e) for e in self._soon}
        deadlines = [e[_DEADLINE] for e in self._soon]
        assert deadlines == sorted(deadlines)
        for key, e in self._data.items():
            assert e[_KEY] is key or e[_KEY] == key
            if e[_HANDLE] is not None:
                assert e[_HANDLE] in self._wheel
            else:
                assert e[_DEADLINE] == _INF or id(e) in soon, e
