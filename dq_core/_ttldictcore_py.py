"""The table and the hot paths of TTLDict (pure twin of ``_ttldictcore``).

Every entry ``[key, value, hash, created_at]`` sits in a FIFO ring (a
deque) in the order its key was last set, which with one TTL for all is
expiry order: what is due is at the head, and one comparison tells whether
anything is.  An index maps each hash to its entry (a tuple of them, in
ring order, when hashes collide), so a key's ``__eq__`` runs at the same
points as in the compiled core, whose index meets the keys of one hash in
ring order too.  A key set again or deleted leaves a hole (its entry's key
becomes ``_HOLE``) that goes when it reaches the head.  With ``lru=True``
an ordered dict of the entries (by ``id``, so that no key's ``__hash__``
or ``__eq__`` runs for it) keeps them from the least to the most recently
used, for ``maxsize``, as the compiled core's linked list does.
``dq_core._ttldict.TTLDict`` makes this a MutableMapping.

User code (a key's ``__eq__`` or ``__hash__``, the clock, ``on_expire``, a
finaliser run by the garbage collector) may try to change the mapping
while one of its changes is under way; that re-entry is refused with
``RuntimeError``, so no change ever sees a half-made one.  A lookup that
ran a key's ``__eq__`` starts again if the table changed meanwhile, as a
dict lookup does.  What a change removes is released, and shown to
``on_expire``, once the change is complete.  Changes from several threads
take turns on a lock, as the compiled core's run whole under the GIL (or a
critical section): each operation is atomic in both implementations.
"""

from __future__ import annotations

import threading
import time
import types
from collections import OrderedDict, deque
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generic,
    Iterator,
    Mapping,
    Optional,
    TypeVar,
    Union,
    overload,
)

from ._ringstate import clock_of, reading, real, reentered, ttl_of
from ._ttldictstate import (
    BATCH,
    LRU_STATE_VERSION,
    STATE_VERSION,
    SWEEP,
    attributes_of,
    check_dict_state,
    lru_of,
    maxsize_of,
    on_expire_of,
    set_attributes,
    tell_each,
)

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = types.MappingProxyType({})


__all__ = ["TTLDictCore"]

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

#: The key of a removed entry, until the entry leaves the ring.
_HOLE: Any = object()
#: What _live returns for a key absent or expired.
_ABSENT: Any = object()

Entry = list[Any]  # [key, value, hash, created_at]


class _Table:
    """The ring and the index of one TTLDictCore; ``clear`` replaces it whole."""

    __slots__ = ("ring", "index", "used", "version", "recency")

    def __init__(self, lru: bool = False) -> None:
        self.ring: deque[Entry] = deque()  # oldest first; the head is never a hole
        self.index: dict[int, Union[Entry, tuple[Entry, ...]]] = {}
        self.used = 0
        self.version = 0  # raised by every change: a lookup that ran user code re-checks it
        # lru: id(entry) -> entry, the least recently used first; else None
        self.recency: Optional[OrderedDict[int, Entry]] = OrderedDict() if lru else None


def _find(tab: _Table, key: object, h: int) -> Optional[Entry]:
    # key's entry in tab, or None.  A stored key of the same hash is compared
    # with key by its __eq__: if that changed tab, the search starts again.
    while True:
        version = tab.version
        found = tab.index.get(h)
        if found is None:
            return None
        for e in (found,) if type(found) is list else found:
            stored = e[0]
            if stored is key:
                return e
            if stored == key:
                if tab.version != version:
                    break
                return e
            if tab.version != version:
                break
        else:
            return None


def _append(tab: _Table, e: Entry) -> None:
    # e, complete, goes to the tail and into the index (behind its hash's others)
    ring = tab.ring
    if len(ring) > 2 * tab.used + 8:  # more holes than entries: compacted, as the compiled ring is
        ring = tab.ring = deque([x for x in ring if x[0] is not _HOLE])
    ring.append(e)
    h = e[2]
    index = tab.index
    found = index.setdefault(h, e)
    if found is not e:
        index[h] = (found, e) if type(found) is list else found + (e,)  # type: ignore[operator]
    if tab.recency is not None:
        tab.recency[id(e)] = e  # the most recently used
    tab.used += 1
    tab.version += 1


def _unbucket(index: dict[int, Any], h: int, bucket: tuple[Entry, ...], e: Entry) -> None:
    # e leaves its hash's bucket (it shares the hash with others)
    rest = tuple(x for x in bucket if x is not e)
    index[h] = rest[0] if len(rest) == 1 else rest


def _remove(tab: _Table, e: Entry) -> tuple[Any, Any]:
    # e leaves the index and becomes a hole; its (key, value) go to the caller
    h = e[2]
    index = tab.index
    found = index[h]
    if found is e:
        del index[h]
    else:
        _unbucket(index, h, found, e)  # type: ignore[arg-type]
    if tab.recency is not None:
        del tab.recency[id(e)]
    pair = (e[0], e[1])
    e[0] = _HOLE
    e[1] = None
    tab.used -= 1
    tab.version += 1
    ring = tab.ring
    while ring and ring[0][0] is _HOLE:
        ring.popleft()
    if len(ring) > 2 * tab.used + 8:  # deletes left more holes than entries
        tab.ring = deque([x for x in ring if x[0] is not _HOLE])
    return pair


class TTLDictCore(Generic[K, V]):
    """The table and the hot paths of TTLDict.

    Every entry sits in a FIFO ring in the order its key was last set (with
    one TTL, expiry order: what is due is at the head), and an index over
    the ring finds a key.  Setting a key again moves it to the tail.  With
    ``lru=True`` a recency order (a read or a set makes a key the most
    recently used) decides what ``maxsize`` evicts, ``popitem()`` takes and
    iteration follows; expiry keeps to the ring.  What a change removes is
    released, and shown to ``on_expire``, once the change is complete.

    >>> d = TTLDictCore(10, clock=lambda: 0.0)
    >>> d["a"] = 1
    >>> d["a"], "b" in d
    (1, False)
    >>> d.expire(10.0)
    [('a', 1)]
    """

    __slots__ = ("_tab", "_ttl", "_clock", "_maxsize", "_on_expire", "_lru", "_busy", "_lock", "__weakref__")
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)
    _busy: int  # the ident of the thread whose change is under way, or 0
    _lock: threading.Lock  # held by that change

    def __init__(
        self,
        ttl: float,
        maxsize: Optional[int] = None,
        clock: Callable[[], float] = time.monotonic,
        on_expire: Optional[Callable[[K, V], object]] = None,
        *,
        lru: bool = False,
    ) -> None:
        t = ttl_of(ttl)
        maxsize = maxsize_of(maxsize)
        clock = clock_of(clock)
        on_expire = on_expire_of(on_expire)
        lru = lru_of(lru)
        tab = _Table(lru)
        # what a re-initialised mapping held goes after the change is complete
        old = self._enter_anew()
        self._on_expire = on_expire
        self._maxsize = maxsize
        self._lru = lru
        self._clock: Callable[[], float] = clock
        self._ttl: float = t
        self._tab = tab
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
        return [getattr(self, field, None) for field in ("_tab", "_clock", "_on_expire")]

    def _get_ttl(self, /) -> float:
        return self._ttl

    def _set_ttl(self, /, value: float) -> None:
        self._ttl = ttl_of(value)  # user code (__float__) runs before anything changes

    ttl = property(
        _get_ttl, _set_ttl, doc="Seconds every entry lives; a new value applies to all entries at once."
    )

    @property
    def maxsize(self) -> Optional[int]:
        """Most entries held (an int >= 1), or None for no limit; lowering it evicts at once."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, value: Optional[int]) -> None:
        maxsize = maxsize_of(value)
        # lowered: the entries over it go at once, expired ones first, as at a set
        now = 0.0
        if maxsize is not None and self._tab.used > maxsize:
            now = reading(self._clock)
        self._enter()
        try:
            self._maxsize = maxsize
            removed = self._evict(now, [])
        finally:
            self._leave()
        self._report(removed, None, True)

    @property
    def lru(self) -> bool:
        """Whether ``maxsize`` evicts the least recently used key (else the oldest set); fixed."""
        return self._lru

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

    def _time(self, now: Optional[float]) -> float:
        # ``now`` as a time, the clock's reading when None
        return reading(self._clock) if now is None else real(now, "now")

    # -- reads ------------------------------------------------------------------

    def _live(self, key: object, use: bool) -> Any:
        # key's value if it is held and live, else _ABSENT (the clock is read
        # first, then the hash: the table is read after their user code);
        # ``use``: a hit makes the key the most recently used
        now = self._clock()  # reading(self._clock), its float fast path inline
        if type(now) is not float or now != now:
            now = real(now, "clock()")
        h = hash(key)
        tab = self._tab
        e = tab.index.get(h)
        if e is not None and (type(e) is not list or e[0] is not key):  # not found by identity
            e = _find(tab, key, h)
        if e is None or e[3] + self._ttl <= now:
            return _ABSENT
        if use and tab.recency is not None:
            self._use(tab.recency, e)
        return e[1]

    def _use(self, recency: OrderedDict[int, Entry], e: Entry) -> None:
        # e becomes the most recently used, unless the read is made by user
        # code that a change of this thread runs (a key's __eq__, a
        # finaliser): that change may be walking the order, which stays as it is
        busy = self._busy
        if busy and busy == threading.get_ident():
            return
        try:
            recency.move_to_end(id(e))
        except KeyError:  # removed by another thread's change meanwhile
            pass

    def __getitem__(self, key: K, /) -> V:
        """Return self[key]."""
        # _live(key), inline: the hottest read
        now = self._clock()
        if type(now) is not float or now != now:
            now = real(now, "clock()")
        h = hash(key)
        tab = self._tab
        try:
            e: Any = tab.index[h]
        except KeyError:
            raise KeyError(key) from None
        if type(e) is not list or e[0] is not key:
            e = _find(tab, key, h)
            if e is None:
                raise KeyError(key)
        if e[3] + self._ttl <= now:
            raise KeyError(key)
        if tab.recency is not None:
            self._use(tab.recency, e)
        return e[1]  # type: ignore[no-any-return]

    @overload
    def get(self, /, key: K) -> Optional[V]: ...
    @overload
    def get(self, /, key: K, default: Union[V, D]) -> Union[V, D]: ...

    def get(self, /, key: K, default: object = None) -> object:
        """Return the value of ``key`` if it is held and live, else ``default``.  O(1)."""
        value = self._live(key, True)
        return default if value is _ABSENT else value

    def _peek(self, /, key: K, default: object = None) -> object:
        """As ``get``, leaving the recency order as it is (for the views)."""
        value = self._live(key, False)
        return default if value is _ABSENT else value

    def __contains__(self, key: object, /) -> bool:
        return self._live(key, False) is not _ABSENT

    __contains__.__doc__ = list.__contains__.__doc__  # the compiled slot's, per Python version

    def __len__(self, /) -> int:
        """Return len(self)."""
        self._purge(reading(self._clock))
        return self._tab.used

    def __iter__(self, /) -> Iterator[K]:
        """Implement iter(self)."""
        self._purge(reading(self._clock))
        # The keys live now, copied: a purge while they are walked (time
        # passed, and len() or another read purged) changes nothing here.
        return iter(self._keys())

    def _keys(self, /) -> list[K]:
        """The keys held, oldest first, or least recently used first with ``lru`` (expired ones included)."""
        tab = self._tab
        if tab.recency is not None:
            return [e[0] for e in list(tab.recency.values())]
        return [e[0] for e in list(tab.ring) if e[0] is not _HOLE]

    def _held(self, /) -> int:
        """How many entries are held (expired ones not yet purged included)."""
        return self._tab.used

    def next_expiry(self, /) -> Optional[float]:
        """When the oldest entry held expires, or None if none is held.  O(1).

        ``inf`` for an entry that never expires.
        """
        tab = self._tab
        if not tab.used:
            return None
        e = tab.ring[0][3] + self._ttl
        return e if e == e else float("inf")

    # -- changes ----------------------------------------------------------------

    def __setitem__(self, key: K, value: V, /) -> None:
        """Set self[key] to value."""
        now = self._clock()  # reading(self._clock), its float fast path inline
        if type(now) is not float or now != now:
            now = real(now, "clock()")
        self._enter()
        removed: list[tuple[K, V]] = []
        replaced = None
        try:
            h = hash(key)  # a raising __hash__/__eq__ leaves everything as it was
            tab = self._tab
            e = tab.index.get(h)
            if e is not None and (type(e) is not list or e[0] is not key):
                e = _find(tab, key, h)
            if e is None:
                _append(tab, [key, value, h, now])
            else:
                expired = e[3] + self._ttl <= now
                stored, old = _remove(tab, e)
                if expired:
                    # Expired, so absent from every read: this set is an
                    # insert, and the old entry is reported here and only here.
                    removed.append((stored, old))
                    _append(tab, [key, value, h, now])
                else:
                    # Live: the key keeps its stored object, as a dict's does,
                    # and moves to the tail; its old value goes after the change.
                    replaced = old
                    _append(tab, [stored, value, h, now])
                del stored, old
            ring = tab.ring
            if ring[0][3] + self._ttl <= now:  # the set's bounded work: SWEEP at most
                self._drop_due(now, SWEEP, removed)
            maxsize = self._maxsize
            if maxsize is not None and tab.used > maxsize:
                self._evict(now, removed)
        finally:
            self._leave()
        replaced = None  # noqa: F841 - the old value goes now: a finaliser may run
        if removed:
            self._report(removed, None, True)

    def __delitem__(self, key: K, /) -> None:
        """Delete self[key]."""
        self._take(key)

    def _take(self, /, key: K) -> V:
        """Remove ``key`` and return its value; KeyError if absent or expired."""
        now = reading(self._clock)
        self._enter()
        try:
            h = hash(key)
            tab = self._tab
            e = _find(tab, key, h)
            if e is None or e[3] + self._ttl <= now:
                raise KeyError(key)
            stored, value = _remove(tab, e)
        finally:
            self._leave()
        del stored  # released after the change
        return value  # type: ignore[no-any-return]

    def popitem(self, /) -> tuple[K, V]:
        """Remove and return the oldest live ``(key, value)``; KeyError when there is none.

        With ``lru``, the least recently used one.  O(1), plus O(k) for k
        expired entries purged first.
        """
        self._purge(reading(self._clock))
        now = reading(self._clock)
        self._enter()
        try:
            tab = self._tab
            order = tab.ring if tab.recency is None else tab.recency.values()
            for e in order:  # the first live one: expired ones are left to a purge
                if e[0] is not _HOLE and not e[3] + self._ttl <= now:
                    break
            else:
                raise KeyError("popitem(): dictionary is empty")
            pair = _remove(tab, e)
        finally:
            self._leave()
        return pair

    def clear(self, /) -> None:
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        tab = _Table(self._lru)
        self._enter()
        try:
            old, self._tab = self._tab, tab
        finally:
            self._leave()
        del old  # the old entries go here, after the change is complete

    def expire(self, /, now: Optional[float] = None) -> list[tuple[K, V]]:
        """Remove and return the expired ``(key, value)`` pairs still held, oldest first.

        ``now`` defaults to ``clock()``.  ``on_expire`` is called for each.
        O(1) when nothing is due, O(k) for k expired entries.  ``purge()``
        does the same without building the list.
        """
        t = self._time(now)
        tab = self._tab
        if not tab.used or not tab.ring[0][3] + self._ttl <= t:
            return []  # nothing is due: one comparison, no change
        self._enter()
        try:
            removed = self._drop_due(t, -1, [])
        finally:
            self._leave()
        if removed:
            self._report(removed, None, True)
        return removed

    def purge(self, /, now: Optional[float] = None) -> int:
        """Remove the expired entries still held and return how many; build nothing.

        ``now`` defaults to ``clock()``.  ``on_expire`` is called for each.
        O(1) when nothing is due, O(k) for k expired entries.  As
        ``expire()``, without the list.
        """
        if now is None:
            t = self._clock()  # reading(self._clock), its float fast path inline
            if type(t) is not float or t != t:
                t = real(t, "clock()")
        else:
            t = real(now, "now")
        return self._purge(t)

    def _purge(self, now: float) -> int:
        # Drops the entries due at now, BATCH at a time: each batch is
        # released (and reported) once its change is complete.
        tab = self._tab
        if not tab.used or not tab.ring[0][3] + self._ttl <= now:
            return 0  # nothing is due: one comparison
        count = 0
        error: Optional[BaseException] = None
        while True:
            self._enter()
            try:
                batch = self._drop_due(now, BATCH, [])
            finally:
                self._leave()
            got = len(batch)
            count += got
            error = self._report(batch, error, False)
            del batch  # released after its change
            if got < BATCH:
                break
        if error is not None:
            raise error
        return count

    # -- inside a change (the caller holds it) -----------------------------------

    def _drop_due(self, now: float, most: int, out: list[tuple[K, V]]) -> list[tuple[K, V]]:
        # Moves up to ``most`` (< 0: every) due head entries into out: _remove
        # for each head entry, inline (the entry leaves the ring at once).
        tab = self._tab
        ring, index, recency = tab.ring, tab.index, tab.recency
        popleft, append = ring.popleft, out.append
        done = 0
        while most and ring and ring[0][3] + self._ttl <= now:
            e = popleft()
            h = e[2]
            found = index[h]
            if found is e:
                del index[h]
            else:
                _unbucket(index, h, found, e)  # type: ignore[arg-type]
            if recency is not None:
                del recency[id(e)]
            append((e[0], e[1]))
            done += 1
            most -= 1
            while ring and ring[0][0] is _HOLE:
                popleft()
        if done:
            tab.used -= done
            tab.version += 1
        return out

    def _evict(self, now: float, out: list[tuple[K, V]]) -> list[tuple[K, V]]:
        # Over maxsize: the expired entries go first, then the oldest (with
        # lru, the least recently used).
        tab, maxsize = self._tab, self._maxsize
        if maxsize is None or tab.used <= maxsize:
            return out
        self._drop_due(now, -1, out)
        recency = tab.recency
        while tab.used > maxsize:
            out.append(_remove(tab, tab.ring[0] if recency is None else recency[next(iter(recency))]))
        return out

    # -- after a change -------------------------------------------------------------

    def _report(
        self, removed: list[tuple[K, V]], error: Optional[BaseException], raise_it: bool
    ) -> Optional[BaseException]:
        # on_expire(key, value) for each removed pair, oldest first.  An
        # Exception it raises is kept (the first one, or ``error`` if given)
        # while the rest are told; then raised (raise_it) or returned.
        error = tell_each(self._on_expire, removed, error)
        if raise_it and error is not None:
            raise error
        return error

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        # a change under way has no whole state yet; none starts while it is read
        self._enter()
        try:
            held = [e for e in self._tab.ring if e[0] is not _HOLE]
            entries = [(e[0], e[1], e[3]) for e in held]
            state = (
                STATE_VERSION,
                self._ttl,
                self._maxsize,
                self._clock,
                self._on_expire,
                attributes_of(self),
                entries,
            )
            recency = self._tab.recency
            if recency is None:
                return state
            rank = {id(e): i for i, e in enumerate(held)}
            return (LRU_STATE_VERSION, *state[1:], [rank[i] for i in recency])
        finally:
            self._leave()

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        ttl, maxsize, clock, on_expire, entries, attrs, recency = check_dict_state(state, self)
        tab = _Table(recency is not None)
        for key, value, created_at in entries:  # keys' __hash__ runs before anything changes
            _append(tab, [key, value, hash(key), created_at])
        if tab.recency is not None:
            ring = list(tab.ring)
            tab.recency = OrderedDict((id(ring[i]), ring[i]) for i in recency)
        old = self._enter_anew()
        self._ttl, self._maxsize, self._clock, self._on_expire = ttl, maxsize, clock, on_expire
        self._lru = tab.recency is not None
        self._tab = tab
        self._leave()
        del old  # released after the change
        set_attributes(self, attrs)

    def _check(self, /) -> None:
        """Assert the table's bookkeeping: ring, index, hole-free head, probe order."""
        self._enter()  # nothing changes while it is read
        try:
            tab = self._tab
            ring = list(tab.ring)
            index = dict(tab.index)
            used = tab.used
            recency = None if tab.recency is None else list(tab.recency.items())
            lru = self._lru
        finally:
            self._leave()
        held = [e for e in ring if e[0] is not _HOLE]
        assert len(held) == used and len(ring) <= 2 * used + 9  # holes compacted
        assert (recency is not None) == lru
        if recency is not None:  # the held entries, each once, by their id
            assert all(i == id(e) for i, e in recency)
            assert sorted(id(e) for _, e in recency) == sorted(id(e) for e in held)
        assert not ring or ring[0][0] is not _HOLE  # the head is held
        assert all(type(e) is list and len(e) == 4 and type(e[3]) is float for e in ring)
        assert all(e[1] is None for e in ring if e[0] is _HOLE)
        # each hash's entries, in ring order: one alone, several in a tuple
        by_hash: dict[int, list[Entry]] = {}
        for e in held:
            by_hash.setdefault(e[2], []).append(e)
        assert set(by_hash) == set(index)
        for h, group in by_hash.items():
            found = index[h]
            if len(group) == 1:
                assert found is group[0]
            else:
                assert type(found) is tuple and list(found) == group
