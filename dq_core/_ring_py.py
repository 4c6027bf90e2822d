"""Segmented FIFO ring for expiry when every entry shares one TTL (pure twin of ``_ring``).

Entries (key, created_at) sit in fixed-size segments behind an outer index.
Pushed in creation order, they are already sorted by expiry, so ``expire``
looks only at the head: O(1) when nothing is due, whatever the backlog.
Memory follows the backlog down at three levels: a slot lets go of its key
the moment it expires, a drained segment is freed (one is kept spare), and
the outer index is compacted once its dead front outweighs the live part.

User code (a finaliser run by the garbage collector, a key's ``__eq__`` or
``__hash__`` inside TTLDictCore) may try to change a structure while one of
its changes is under way; that re-entry is refused with ``RuntimeError``,
so no change ever sees a half-made one.
"""

from __future__ import annotations

import copy
import operator
import sys
import time
import types
from typing import TYPE_CHECKING, Any, Callable, Generic, Optional, TypeVar

from ._convert import to_count, to_real

__all__ = ["TTLRing", "TTLDictCore", "check_ring_state", "check_dict_state"]

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

#: The outer index is compacted once this many dead segments lead it and
#: they outnumber the live ones.
COMPACT_MIN = 32
#: Version of the state both implementations pickle to.
STATE_VERSION = 1
#: The pushed/expired counters are 64-bit unsigned in the compiled core.
MAX_COUNT = 2**64 - 1

Segment = tuple[list[Any], list[float]]  # (keys, created_at) by slot
Entry = tuple[Any, Any, float]  # (key, value, created_at)


def _ttl(value: object) -> float:
    ttl = to_real(value, "ttl")
    if ttl < 0:
        raise ValueError(f"ttl must be non-negative, got {ttl!r}")
    return ttl


def _real(value: object, name: str) -> float:
    if type(value) is float and value == value:
        return value
    return to_real(value, name)


def _clock_of(clock: T) -> T:
    if not callable(clock):
        raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")
    return clock


def _reading(clock: Callable[[], object]) -> float:
    """One reading of ``clock``; a NaN or a non-number raises naming ``clock()``."""
    return _real(clock(), "clock()")


def _cap(value: object) -> int:
    """``max_items`` as a count; a negative one means no cap."""
    if not hasattr(type(value), "__index__"):
        raise TypeError(f"max_items must be an int, not {type(value).__name__!r}")
    n = operator.index(value)  # type: ignore[arg-type]
    return -1 if n < 0 else min(n, sys.maxsize)


def _maxsize(value: object) -> Optional[int]:
    if value is None:
        return None
    n = to_count(value, "maxsize")
    if n < 1:
        raise ValueError(f"maxsize must be at least 1 or None, got {n!r}")
    return n


def _callback(value: T) -> T:
    if value is not None and not callable(value):
        raise TypeError(f"on_expire must be callable or None, not {type(value).__name__!r}")
    return value


def _reentered(name: str) -> RuntimeError:
    return RuntimeError(f"{name} was re-entered while it was being changed")


def check_ring_state(state: object) -> tuple[Any, ...]:
    """Validate a TTLRing state; return (ttl, size, clock, pushed, expired, head, keys, times).

    Runs before anything is changed, so a refused state leaves the ring as it was.
    """
    if type(state) is not tuple or len(state) != 8:
        raise TypeError("TTLRing state must be a tuple of 8 items")
    version, ttl, size, clock, pushed, expired, head, entries = state
    if type(version) is not int or version != STATE_VERSION:
        raise ValueError(f"unsupported TTLRing state version {version!r}")
    ttl = _ttl(ttl)
    size = to_count(size, "segment_size")
    if size < 1:
        raise ValueError(f"segment_size must be at least 1, got {size!r}")
    clock = _clock_of(clock)
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
        times.append(_real(e[1], f"created_at of entry {i}"))
    if pushed > MAX_COUNT or pushed - expired != len(keys):
        raise ValueError("TTLRing state counters do not match its entries")
    return ttl, size, clock, pushed, expired, head if keys else 0, keys, times


def check_dict_state(state: object) -> tuple[Any, ...]:
    """Validate a TTLDictCore state; return (ttl, maxsize, clock, on_expire, entries, data).

    ``entries`` are the ``(key, value, created_at)`` tuples to push, oldest
    first, and ``data`` the new dict of them: built here (keys' ``__hash__``
    and ``__eq__`` run here), before anything is changed.
    """
    if type(state) is not tuple or len(state) != 6:
        raise TypeError("TTLDict state must be a tuple of 6 items")
    version, ttl, maxsize, clock, on_expire, items = state
    if type(version) is not int or version != STATE_VERSION:
        raise ValueError(f"unsupported TTLDict state version {version!r}")
    ttl = _ttl(ttl)
    maxsize = _maxsize(maxsize)
    clock = _clock_of(clock)
    on_expire = _callback(on_expire)
    if type(items) is not list:
        raise TypeError("TTLDict state entries must be a list")
    entries: list[Entry] = []
    for i, e in enumerate(list(items)):
        if type(e) is not tuple or len(e) != 3:
            raise TypeError(f"TTLDict state entry {i} must be a (key, value, created_at) tuple")
        entries.append((e[0], e[1], _real(e[2], f"created_at of entry {i}")))
    if maxsize is not None and len(entries) > maxsize:
        raise ValueError(f"TTLDict state holds {len(entries)} entries, over maxsize {maxsize}")
    data: dict[Any, Entry] = {}
    for e in entries:
        data[e[0]] = e
    if len(data) != len(entries):
        raise ValueError("TTLDict state holds a key twice")
    return ttl, maxsize, clock, on_expire, entries, data


class TTLRing(Generic[K]):
    """FIFO of keys that all live ``ttl`` seconds from their ``created_at``.

    ``push`` appends at the tail; ``expire`` pops every head entry with
    ``created_at + ttl <= now`` and stops at the first live one.  Entries are
    assumed pushed in ``created_at`` order: an out-of-order ``created_at`` is
    accepted and never lost, but it waits behind older heads and may expire
    late.  An entry whose ``created_at + ttl`` is undefined (``-inf`` plus an
    infinite ttl) never expires.

    ``clock`` must be callable; a reading that is NaN or not a number raises
    an error naming ``clock()``.  A ring supports ``copy.copy``,
    ``copy.deepcopy`` and ``pickle`` (its keys and clock must be picklable: a
    lambda clock makes pickling fail); the copy is independent, and a pickle
    made by either implementation loads in the other.  Not thread-safe; a
    change made from user code (a finaliser) while another change is under
    way raises ``RuntimeError``.

    >>> r = TTLRing(10, clock=lambda: 0.0)
    >>> r.push("a", created_at=0.0); r.push("b", created_at=5.0)
    >>> r.expire(now=12.0)
    ['a']
    >>> r.next_expiry()
    15.0
    """

    __slots__ = (
        "_ttl", "_size", "_clock", "_segs", "_first", "_head", "_tail", "_len",
        "_pushed", "_expired", "_spare", "_busy", "__weakref__",
    )

    def __init__(self, ttl: float, segment_size: int = 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        ttl = _ttl(ttl)
        size = to_count(segment_size, "segment_size")
        if size < 1:
            raise ValueError(f"segment_size must be at least 1, got {size!r}")
        clock = _clock_of(clock)
        if getattr(self, "_busy", False):
            raise _reentered("TTLRing")
        # what a re-initialised ring held goes after the change is complete
        old = [getattr(self, name, None) for name in ("_segs", "_spare", "_clock")]
        self._busy = True
        self._clock = clock
        self._ttl = ttl
        self._size = size
        self._segs: list[Segment] = []  # the outer index; [_first:] are live
        self._first = 0  # index of the head segment
        self._head = 0  # slot of the head entry in the head segment
        self._tail = size  # slot after the last entry in the tail segment
        self._len = 0
        self._pushed = 0
        self._expired = 0
        self._spare: Optional[Segment] = None
        self._busy = False
        del old

    @property
    def ttl(self) -> float:
        """Seconds every entry lives; a new value applies to all from the next ``expire``."""
        return self._ttl

    @ttl.setter
    def ttl(self, value: float) -> None:
        self._ttl = _ttl(value)

    def push(self, key: K, created_at: Optional[float] = None) -> None:
        """Append ``key``, created at ``created_at`` (default ``clock()``).  O(1) amortised."""
        if created_at is None:
            t = _reading(self._clock)
        elif type(created_at) is float and created_at == created_at:
            t = created_at
        else:
            t = to_real(created_at, "created_at")
        if self._busy:
            raise _reentered("TTLRing")
        self._busy = True
        try:
            tail = self._tail
            if tail == self._size:
                seg = self._spare
                if seg is None:
                    seg = ([None] * self._size, [0.0] * self._size)
                self._spare = None
                self._segs.append(seg)
                tail = 0
            keys, times = self._segs[-1]
            keys[tail] = key
            times[tail] = t
            self._tail = tail + 1
            self._len += 1
            self._pushed += 1
        finally:
            self._busy = False

    def expire(self, now: Optional[float] = None, max_items: int = -1) -> list[K]:
        """Pop and return every head key with ``created_at + ttl <= now``, oldest first.

        ``now`` defaults to ``clock()``; ``max_items`` >= 0 caps how many.
        O(1) when nothing is due, O(k) for k expired keys.
        """
        if now is None:
            t = _reading(self._clock)
        elif type(now) is float and now == now:
            t = now
        else:
            t = to_real(now, "now")
        cap = _cap(max_items)
        if self._busy:
            raise _reentered("TTLRing")
        self._busy = True
        try:
            return self._expire(t, cap, True)
        finally:
            self._busy = False

    def _expire(self, now: float, max_items: int, due_only: bool) -> list[K]:
        # pops up to max_items (< 0: no cap) head keys, only due ones if due_only
        out: list[K] = []
        if not self._len:
            return out
        ttl = self._ttl
        size = self._size
        segs = self._segs
        first = self._first
        head = self._head
        keys, times = segs[first]
        n = self._len
        while n and max_items:
            if due_only and not times[head] + ttl <= now:
                break
            max_items -= 1
            out.append(keys[head])
            keys[head] = None  # let go of the key at once
            head += 1
            n -= 1
            if head == size:
                segs[first] = None  # type: ignore[call-overload]
                if self._spare is None:
                    self._spare = (keys, times)
                first += 1
                head = 0
                if first == len(segs):
                    break
                keys, times = segs[first]
        self._len = n
        self._first = first
        self._head = head
        self._expired += len(out)
        if first >= COMPACT_MIN and 2 * first > len(segs):
            del segs[:first]
            self._first = 0
        return out

    def popleft(self) -> K:
        """Pop and return the head key whether it is due or not.  O(1).

        Raises ``IndexError`` when the ring is empty.
        """
        if self._busy:
            raise _reentered("TTLRing")
        if not self._len:
            raise IndexError("pop from an empty ring")
        self._busy = True
        try:
            return self._expire(0.0, 1, False)[0]
        finally:
            self._busy = False

    def _peek(self) -> K:
        # the head key; the ring must not be empty
        return self._segs[self._first][0][self._head]  # type: ignore[no-any-return]

    def next_expiry(self) -> Optional[float]:
        """When the head entry expires (``created_at + ttl``), or None if empty.  O(1).

        ``inf`` for an entry that never expires.
        """
        if not self._len:
            return None
        e = self._segs[self._first][1][self._head] + self._ttl
        return e if e == e else float("inf")

    def __len__(self) -> int:
        return self._len

    def stats(self) -> dict[str, int]:
        """Counters: pushed, expired, length, segments (allocated, spare included)."""
        live = len(self._segs) - self._first
        return {
            "pushed": self._pushed,
            "expired": self._expired,
            "length": self._len,
            "segments": live + (self._spare is not None),
            "segment_size": self._size,
            "index_slots": len(self._segs),
        }

    def __repr__(self) -> str:
        nxt = self.next_expiry()
        tail = "" if nxt is None else f" next_expiry={nxt!r}"
        return f"<{type(self).__name__} len={self._len} ttl={self._ttl!r}{tail}>"

    # -- copying, pickling, invariants --------------------------------------

    def _entries(self) -> list[tuple[K, float]]:
        # (key, created_at) of every entry, oldest first
        out = []
        head, tail, last = self._head, self._tail, len(self._segs) - 1
        for i in range(self._first, len(self._segs)):
            keys, times = self._segs[i]
            for j in range(head, tail if i == last else self._size):
                out.append((keys[j], times[j]))
            head = 0
        return out

    def __getstate__(self) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        return (STATE_VERSION, self._ttl, self._size, self._clock, self._pushed,
                self._expired, self._head if self._len else 0, self._entries())

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        ttl, size, clock, pushed, expired, head, keys, times = check_ring_state(state)
        segs: list[Segment] = []
        tail = size
        pos = head
        i = 0
        while i < len(keys):
            seg: Segment = ([None] * size, [0.0] * size)
            take = min(size - pos, len(keys) - i)
            seg[0][pos:pos + take] = keys[i:i + take]
            seg[1][pos:pos + take] = times[i:i + take]
            segs.append(seg)
            i += take
            tail = pos + take
            pos = 0
        if getattr(self, "_busy", False):
            raise _reentered("TTLRing")
        old = [getattr(self, name, None) for name in ("_segs", "_spare", "_clock")]
        self._busy = True
        self._ttl, self._size, self._clock = ttl, size, clock
        self._segs, self._first, self._head, self._tail = segs, 0, head, tail
        self._len, self._pushed, self._expired = len(keys), pushed, expired
        self._spare = None
        self._busy = False
        del old  # released after the change

    def __reduce__(self) -> tuple[Any, ...]:
        from ._compat import restore

        return restore, ("TTLRing", self.__getstate__())

    def __copy__(self) -> TTLRing[K]:
        new = type(self).__new__(type(self))
        new.__setstate__(self.__getstate__())
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> TTLRing[K]:
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new

    def _check(self) -> None:
        """Assert the ring's bookkeeping: counts, head/tail, released slots."""
        size, segs, first = self._size, self._segs, self._first
        assert not self._busy
        assert 0 <= first <= len(segs)
        assert all(s is None for s in segs[:first])
        live = segs[first:]
        assert 0 <= self._head < size or (self._head == 0 and not live)
        assert 0 <= self._tail <= size
        if not live:
            assert self._len == 0 and self._tail == size
        else:
            count = (len(live) - 1) * size + self._tail - self._head
            assert count == self._len, (count, self._len)
            keys = live[0][0]
            assert all(k is None for k in keys[:self._head])
            assert all(k is None for k in live[-1][0][self._tail:])
        assert self._pushed - self._expired == self._len
        if self._spare is not None:
            assert all(k is None for k in self._spare[0])


class TTLDictCore(Generic[K, V]):
    """The dict, the ring and the hot paths of TTLDict.

    Every set pushes its entry ``(key, value, created_at)`` on the ring; the
    dict maps each key to its latest entry, so a ring entry whose key was
    set again since is recognised as stale by identity and skipped.  Every
    entry the dict holds is on the ring, at every point where user code
    (a key's ``__hash__`` or ``__eq__``, the clock) can run.
    """

    __slots__ = ("_ring", "_data", "_ttl", "_clock", "_maxsize", "_on_expire", "_busy",
                 "__weakref__")
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, ttl: float, maxsize: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_expire: Optional[Callable[[K, V], object]] = None) -> None:
        ring: TTLRing[Entry] = TTLRing(ttl, clock=clock)
        maxsize = _maxsize(maxsize)
        on_expire = _callback(on_expire)
        if getattr(self, "_busy", False):
            raise _reentered("TTLDict")
        # what a re-initialised mapping held goes after the change is complete
        old = [getattr(self, name, None) for name in ("_ring", "_data", "_clock", "_on_expire")]
        self._busy = True
        self._on_expire = on_expire
        self._maxsize = maxsize
        self._clock = clock
        self._ttl = ring.ttl
        self._ring = ring
        self._data: dict[K, Entry] = {}
        self._busy = False
        del old

    @property
    def ttl(self) -> float:
        """Seconds every entry lives; a new value applies to all entries at once."""
        return self._ttl

    @ttl.setter
    def ttl(self, value: float) -> None:
        ttl = _ttl(value)  # user code (__float__) runs before anything changes
        self._ring._ttl = ttl
        self._ttl = ttl

    @property
    def maxsize(self) -> Optional[int]:
        """Most entries held (an int >= 1), or None for no limit; checked at the next set."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, value: Optional[int]) -> None:
        self._maxsize = _maxsize(value)

    @property
    def on_expire(self) -> Optional[Callable[[K, V], object]]:
        """Called as ``on_expire(key, value)`` for every expired or evicted entry, or None."""
        return self._on_expire

    @on_expire.setter
    def on_expire(self, value: Optional[Callable[[K, V], object]]) -> None:
        self._on_expire = _callback(value)

    @property
    def clock(self) -> Callable[[], float]:
        """The callable read for every "now"."""
        return self._clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self._clock = _clock_of(value)

    def __getitem__(self, key: K) -> V:
        entry = self._data[key]
        now = _reading(self._clock)
        if entry[2] + self._ttl <= now:
            raise KeyError(key)
        return entry[1]  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        entry = self._data.get(key)  # type: ignore[arg-type]
        if entry is None:
            return False
        now = _reading(self._clock)
        return not entry[2] + self._ttl <= now

    def __setitem__(self, key: K, value: V) -> None:
        now = _reading(self._clock)
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            data = self._data
            entry = (key, value, now)
            data[key] = entry  # a raising __hash__/__eq__ leaves everything as it was
            self._ring.push(entry, now)
            maxsize = self._maxsize
            removed: list[tuple[K, V]] = []
            if maxsize is not None and len(data) > maxsize:
                removed = self._drop_due(now)
                while len(data) > maxsize and len(self._ring):
                    self._drop_head(removed)
        finally:
            self._busy = False
        if removed:
            self._notify(removed)

    def __delitem__(self, key: K) -> None:
        self._take(key)

    def _take(self, key: K) -> V:
        """Remove ``key`` and return its value; KeyError if absent or expired."""
        now = _reading(self._clock)
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            data = self._data
            entry = data[key]
            if entry[2] + self._ttl <= now:
                raise KeyError(key)
            del data[key]  # its ring entry is stale from now on
        finally:
            self._busy = False
        return entry[1]  # type: ignore[no-any-return]

    def _popfirst(self) -> tuple[K, V]:
        """Remove and return the first live ``(key, value)`` in insertion order."""
        now = _reading(self._clock)
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
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
            self._busy = False
        return key, entry[1]

    def clear(self) -> None:
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            ring, data = self._ring, self._data
            self._ring = TTLRing(self._ttl, clock=self._clock)
            self._data = {}
        finally:
            self._busy = False
        del ring, data  # the old entries go here, after the change is complete

    def _purge(self, now: float) -> list[tuple[K, V]]:
        """Drop the expired entries still held; return them as (key, value)."""
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            return self._drop_due(now)
        finally:
            self._busy = False

    def _drop_due(self, now: float) -> list[tuple[K, V]]:
        # Each head entry leaves the dict before it leaves the ring, so a
        # key's __hash__/__eq__ raising here leaves every held entry on the ring.
        out: list[tuple[K, V]] = []
        ring = self._ring
        ttl = self._ttl
        while len(ring):
            entry = ring._peek()
            if not entry[2] + ttl <= now:
                break
            self._drop_head(out)
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
        held = {id(e) for e in self._data.values()}
        entries = [e for e, _ in self._ring._entries() if id(e) in held]
        return (STATE_VERSION, self._ttl, self._maxsize, self._clock, self._on_expire,
                entries)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        ttl, maxsize, clock, on_expire, entries, data = check_dict_state(state)
        ring: TTLRing[Entry] = TTLRing(ttl, clock=clock)
        for e in entries:
            ring.push(e, e[2])
        if getattr(self, "_busy", False):
            raise _reentered("TTLDict")
        old = [getattr(self, name, None) for name in ("_ring", "_data", "_clock", "_on_expire")]
        self._busy = True
        self._ttl, self._maxsize, self._clock, self._on_expire = ttl, maxsize, clock, on_expire
        self._ring, self._data = ring, data
        self._busy = False
        del old  # released after the change

    def _check(self) -> None:
        """Assert every held entry is on the ring, and the bookkeeping around it."""
        assert not self._busy
        self._ring._check()
        assert self._ring.ttl == self._ttl
        on_ring = {id(e) for e, _ in self._ring._entries()}
        for e in self._data.values():
            assert type(e) is tuple and len(e) == 3 and type(e[2]) is float, e
            assert id(e) in on_ring, e
