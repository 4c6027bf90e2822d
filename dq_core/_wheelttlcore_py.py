"""The entries and the hot paths of WheelTTLDict (pure twin of ``_wheelttlcore``).

Each key maps to its entry ``[key, value, deadline, handle]``; the entry is
also an item of a TimingWheel (the wheel of the implementation in use,
handed down by ``dq_core._assemble``), scheduled at its deadline, so a set
and an expiry cost O(1) whatever the ttl.  Reads compare the deadline with
the clock, so an expired value is never returned, whether the wheel has
given the entry back yet or not.  An ordered dict keeps the keys from
least to most recently used, for ``maxsize``.
``dq_core._wheelttldict.WheelTTLDict`` makes this a MutableMapping.

A change made from user code that a change under way runs (a key's
``__hash__``/``__eq__``, a finaliser) is refused with ``RuntimeError``, so
no change ever sees a half-made one; reads are allowed.  What a change
removes is shown to ``on_expire`` once the change is complete.
"""

from __future__ import annotations

import math
import types
from collections import OrderedDict
from typing import Any, Callable, Generic, Iterable, Iterator, Mapping, Optional, TypeVar

from ._ringstate import real as _real
from ._ringstate import reentered, ttl_of
from ._ttldictstate import on_expire_of, tell_each

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = types.MappingProxyType({})

__all__ = ["WheelTTLCore", "own_getitem"]

K = TypeVar("K")
V = TypeVar("V")

_INF = math.inf
_KEY, _VALUE, _DEADLINE, _HANDLE = range(4)  # the fields of an entry


C = TypeVar("C", bound=type)


def own_getitem(cls: C) -> C:
    """Give ``cls`` (a class extending WheelTTLCore) a ``__getitem__`` method of its own; return it.

    The inherited one is the slot's wrapper, whose bound call
    (``f = d.__getitem__; f(key)``) builds an argument tuple each time; its
    own is a one-argument C method on the same C function, called without
    one.  The class's ``mp_subscript`` slot (``d[key]``) stays the C
    function: the method goes into the class's dict, not through
    ``setattr``, which would make the slot look the method up.  A class
    that defines its own ``__getitem__`` is left alone; the pure twin's is a
    Python function, which needs nothing.
    """
    if not isinstance(cls, type) or not issubclass(cls, WheelTTLCore):
        raise TypeError(f"cls must be a class extending WheelTTLCore, not {cls!r}")
    return cls


def _deadline_of(e: list[Any]) -> float:
    d: float = e[_DEADLINE]
    return d


class WheelTTLCore(Generic[K, V]):
    """The entries and the hot paths of WheelTTLDict.

    >>> from dq_core import TimingWheel
    >>> d = WheelTTLCore()
    >>> d._setup(10.0, None, lambda: 0.0, None, TimingWheel(clock=lambda: 0.0))
    >>> d.set("a", 1)
    >>> d.get("a"), "b" in d
    (1, False)
    >>> d.expire(10.0)
    [('a', 1)]
    """

    _data: OrderedDict[K, list[Any]]
    _wheel: Any
    _busy: bool = False

    def _setup(
        self,
        /,
        life: float,
        size: Optional[int],
        clock: Callable[[], float],
        on_expire: Optional[Callable[[K, V], object]],
        wheel: Any,
    ) -> None:
        """Start empty with the checked ``life`` (inf: none), ``size``, ``clock``, ``on_expire`` and ``wheel``."""
        if self._busy:
            raise reentered("WheelTTLDict")
        self._ttl: float = life
        self._maxsize: Optional[int] = size
        self._clock: Callable[[], float] = clock
        self._on_expire = on_expire
        self._tick: float = wheel.tick
        self._wheel = wheel
        self._data = OrderedDict()
        self._soon: list[list[Any]] = []  # entries off the wheel, due within two ticks, by deadline
        self._purge_at = -_INF  # a set purges once the clock reaches this

    @property
    def on_expire(self) -> Optional[Callable[[K, V], object]]:
        """Called as ``on_expire(key, value)`` for every expired or evicted entry, or None."""
        return self._on_expire

    @on_expire.setter
    def on_expire(self, value: Optional[Callable[[K, V], object]]) -> None:
        self._on_expire = on_expire_of(value)

    def _enter(self) -> None:
        if self._busy:
            raise reentered("WheelTTLDict")
        self._busy = True

    def _held(self, /) -> int:
        """How many entries are held, expired ones not yet purged included."""
        return len(self._data)

    def _wheel_time(self, /) -> float:
        """The time the wheel's purges have reached (a pickled state keeps it)."""
        t: float = self._wheel.wheel_time
        return t

    # -- reads ----------------------------------------------------------------

    def _now(self) -> float:
        t = self._clock()
        if type(t) is not float or t != t:
            t = _real(t, "clock()")
        return t

    def __getitem__(self, key: K, /) -> V:
        """Return self[key]."""
        e = self._data[key]  # [key, value, deadline, handle], indexed by literals: hot path
        if e[2] != _INF:
            t = self._clock()
            if type(t) is not float or t != t:
                t = _real(t, "clock()")
            if e[2] <= t:
                raise KeyError(key)
        if self._maxsize is not None and self._data.get(key) is e:  # held still: the clock may change it
            self._data.move_to_end(key)
        value: V = e[1]
        return value

    def get(self, /, key: K, default: Any = None) -> Any:
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
        if self._maxsize is not None and self._data.get(key) is e:  # held still: the clock may change it
            self._data.move_to_end(key)
        return e[1]

    def _peek(self, /, key: K, default: Any) -> Any:
        """The value of ``key`` if it is live, else ``default``; recency unchanged."""
        e = self._data.get(key)
        if e is None or (e[_DEADLINE] != _INF and e[_DEADLINE] <= self._now()):
            return default
        return e[_VALUE]

    def __contains__(self, key: object, /) -> bool:
        e = self._data.get(key)  # type: ignore[arg-type]
        return e is not None and (e[_DEADLINE] == _INF or e[_DEADLINE] > self._now())

    __contains__.__doc__ = list.__contains__.__doc__  # the compiled slot's, per Python version

    def deadline(self, /, key: K) -> float:
        """When ``key`` expires on the clock (``math.inf``: never); KeyError if absent.  O(1)."""
        e = self._data[key]
        if e[_DEADLINE] != _INF and e[_DEADLINE] <= self._now():
            raise KeyError(key)
        d: float = e[_DEADLINE]
        return d

    def __len__(self, /) -> int:
        """Return len(self)."""
        self.expire()
        return len(self._data)

    def __iter__(self, /) -> Iterator[K]:
        """Implement iter(self)."""
        self.expire()
        # the keys live now, copied: a purge while they are walked changes nothing here
        return iter([e[_KEY] for e in self._data.values()])

    def _entries(self, /) -> list[tuple[K, V, float]]:
        """The ``(key, value, deadline)`` of every entry held, least recently used first."""
        return [(e[_KEY], e[_VALUE], e[_DEADLINE]) for e in self._data.values()]

    # -- changes --------------------------------------------------------------

    def __setitem__(self, key: K, value: V, /) -> None:
        self.set(key, value)

    def set(self, /, key: K, value: V, ttl: Optional[float] = None) -> None:
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
        self._enter()
        told: list[tuple[K, V]] = []
        try:
            data, wheel = self._data, self._wheel
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
                    told.append((gone[_KEY], gone[_VALUE]))
            if now >= self._purge_at:
                told += self._purge(now)
        finally:
            self._busy = False
        if told:
            self._notify(told)

    def _drop(self, /, key: K) -> V:
        """Remove the live entry of ``key`` and return its value; KeyError if absent or expired."""
        e = self._data[key]
        if e[_DEADLINE] != _INF and e[_DEADLINE] <= self._now():
            raise KeyError(key)  # left for the purge, which tells on_expire
        self._enter()
        try:
            if self._data.get(key) is e:
                del self._data[key]
                if e[_HANDLE] is not None:
                    self._wheel.cancel(e[_HANDLE])
        finally:
            self._busy = False
        value: V = e[_VALUE]
        return value

    def __delitem__(self, key: K, /) -> None:
        self._drop(key)

    def popitem(self, /) -> tuple[K, V]:
        """Remove and return the least recently used live ``(key, value)``; KeyError if none."""
        self.expire()
        self._enter()
        try:
            try:
                _, e = self._data.popitem(last=False)
            except KeyError:
                raise KeyError("popitem(): mapping is empty") from None
            if e[_HANDLE] is not None:
                self._wheel.cancel(e[_HANDLE])
        finally:
            self._busy = False
        pair: tuple[K, V] = (e[_KEY], e[_VALUE])
        return pair

    def clear(self, /) -> None:
        """Remove every entry (``on_expire`` is not called).  O(n)."""
        wheel = type(self._wheel)(tick=self._tick, clock=self._clock)
        self._enter()
        old = (self._data, self._soon, self._wheel)  # released after the change
        self._data = OrderedDict()
        self._soon = []
        self._wheel = wheel
        self._busy = False
        del old

    def _load(self, /, entries: Iterable[tuple[K, V, float]]) -> None:
        """Hold the ``(key, value, deadline)`` triples (from ``_entries``) of an empty mapping."""
        self._enter()
        try:
            for key, value, deadline in entries:
                e: list[Any] = [key, value, deadline, None]
                if deadline != _INF:
                    e[_HANDLE] = self._wheel.schedule_at(e, deadline)
                self._data[key] = e
        finally:
            self._busy = False

    # -- expiry ---------------------------------------------------------------

    def _purge(self, now: float) -> list[tuple[K, V]]:
        """Remove and return every entry whose deadline is <= ``now``, earliest first."""
        tick = self._tick
        self._purge_at = now + tick
        data, soon = self._data, self._soon
        out: list[tuple[K, V]] = []
        deadlines: list[float] = []  # of the pairs of out
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
                    deadlines.append(e[_DEADLINE])
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
                    deadlines.append(e[_DEADLINE])
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
        if len(out) > 1:  # earliest first; one deadline's entries in the order they were scheduled
            out = [out[i] for i in sorted(range(len(out)), key=deadlines.__getitem__)]
        return out

    def _notify(self, removed: list[tuple[K, V]]) -> None:
        error = tell_each(self._on_expire, removed)
        if error is not None:
            raise error

    def expire(self, /, now: Optional[float] = None) -> list[tuple[K, V]]:
        """Remove and return the expired ``(key, value)`` pairs still held.

        ``now`` defaults to ``clock()``.  O(k + s) for k expired entries and
        s occupied wheel slots passed; O(1) when nothing is due.  Entries
        come out earliest deadline first (to the ``tick``), and are also
        passed to ``on_expire`` (when given), one call each, before this
        returns.
        """
        t = self._now() if now is None else _real(now, "now")
        self._enter()
        try:
            removed = self._purge(t)
        finally:
            self._busy = False
        if removed:
            self._notify(removed)
        return removed

    def purge(self, /, now: Optional[float] = None) -> int:
        """Remove the expired entries still held and return how many; build nothing.

        ``now`` defaults to ``clock()``.  O(k + s) for k expired entries and
        s occupied wheel slots passed; O(1) when nothing is due.  As
        ``expire()``, without the list: each pair still goes to
        ``on_expire`` (when given), in the same order, before this returns.
        """
        return len(self.expire(now))  # the pure twin's saving is only the caller's

    def next_expiry(self, /) -> Optional[float]:
        """A time before which no entry expires (a lower bound), or None.  O(levels)."""
        d: Optional[float] = self._wheel.next_deadline()
        return d

    def _check(self, /) -> None:
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
