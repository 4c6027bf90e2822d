"""Segmented FIFO ring for expiry when every entry shares one TTL (pure twin of ``_ring``).

Entries (key, created_at) sit in fixed-size segments behind an outer index.
Pushed in creation order, they are already sorted by expiry, so ``expire``
looks only at the head: O(1) when nothing is due, whatever the backlog.
Memory follows the backlog down at three levels: a slot lets go of its key
the moment it expires, a drained segment is freed (one is kept spare), and
the outer index is compacted once its dead front outweighs the live part.
"""

from __future__ import annotations

import time
import types
from typing import TYPE_CHECKING, Any, Callable, Generic, Optional, TypeVar

from ._convert import to_count, to_real

__all__ = ["TTLRing", "TTLDictCore"]

K = TypeVar("K")

#: The outer index is compacted once this many dead segments lead it and
#: they outnumber the live ones.
COMPACT_MIN = 32

Segment = tuple[list[Any], list[float]]  # (keys, created_at) by slot


def _ttl(value: object) -> float:
    ttl = to_real(value, "ttl")
    if ttl < 0:
        raise ValueError(f"ttl must be non-negative, got {ttl!r}")
    return ttl


class TTLRing(Generic[K]):
    """FIFO of keys that all live ``ttl`` seconds from their ``created_at``.

    ``push`` appends at the tail; ``expire`` pops every head entry with
    ``created_at + ttl <= now`` and stops at the first live one.  Entries are
    assumed pushed in ``created_at`` order: an out-of-order ``created_at`` is
    accepted and never lost, but it waits behind older heads and may expire
    late.

    >>> r = TTLRing(10, clock=lambda: 0.0)
    >>> r.push("a", created_at=0.0); r.push("b", created_at=5.0)
    >>> r.expire(now=12.0)
    ['a']
    >>> r.next_expiry()
    15.0
    """

    __slots__ = (
        "_ttl", "_size", "_clock", "_segs", "_first", "_head", "_tail", "_len",
        "_pushed", "_expired", "_spare", "__weakref__",
    )

    def __init__(self, ttl: float, segment_size: int = 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = _ttl(ttl)
        size = to_count(segment_size, "segment_size")
        if size < 1:
            raise ValueError(f"segment_size must be at least 1, got {size!r}")
        self._size = size
        self._clock = clock
        self._segs: list[Segment] = []  # the outer index; [_first:] are live
        self._first = 0  # index of the head segment
        self._head = 0  # slot of the head entry in the head segment
        self._tail = size  # slot after the last entry in the tail segment
        self._len = 0
        self._pushed = 0
        self._expired = 0
        self._spare: Optional[Segment] = None

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
            t = self._clock()
            if type(t) is not float:
                t = to_real(t, "clock()")
        elif type(created_at) is float and created_at == created_at:
            t = created_at
        else:
            t = to_real(created_at, "created_at")
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

    def expire(self, now: Optional[float] = None, max_items: int = -1) -> list[K]:
        """Pop and return every head key with ``created_at + ttl <= now``, oldest first.

        ``now`` defaults to ``clock()``; ``max_items`` >= 0 caps how many.
        O(1) when nothing is due, O(k) for k expired keys.
        """
        if now is None:
            now = self._clock()
        elif not (type(now) is float and now == now):
            now = to_real(now, "now")
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
            if times[head] + ttl > now:
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
        if not self._len:
            raise IndexError("pop from an empty ring")
        keys, times = self._segs[self._first]
        # "now" is the head's own expiry: exactly the head is due
        return self.expire(times[self._head] + self._ttl, 1)[0]

    def next_expiry(self) -> Optional[float]:
        """When the head entry expires (``created_at + ttl``), or None if empty.  O(1)."""
        if not self._len:
            return None
        return self._segs[self._first][1][self._head] + self._ttl

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

    def _check(self) -> None:
        """Assert the ring's bookkeeping: counts, head/tail, released slots."""
        size, segs, first = self._size, self._segs, self._first
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


Entry = tuple[Any, Any, float]  # (key, value, created_at)
V = TypeVar("V")


class TTLDictCore(Generic[K, V]):
    """The dict, the ring and the hot paths of TTLDict.

    Every set pushes its entry ``(key, value, created_at)`` on the ring; the
    dict maps each key to its latest entry, so a ring entry whose key was
    set again since is recognised as stale by identity and skipped.
    """

    __slots__ = ("_ring", "_data", "_ttl", "_clock", "maxsize", "on_expire", "__weakref__")
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, ttl: float, maxsize: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_expire: Optional[Callable[[K, V], Any]] = None) -> None:
        self._ring: TTLRing[Entry] = TTLRing(ttl, clock=clock)
        if maxsize is not None:
            maxsize = to_count(maxsize, "maxsize")
            if maxsize < 1:
                raise ValueError(f"maxsize must be at least 1 or None, got {maxsize!r}")
        self.maxsize = maxsize
        self.on_expire = on_expire
        self._clock = clock
        self._ttl = self._ring.ttl
        self._data: dict[K, Entry] = {}

    @property
    def ttl(self) -> float:
        """Seconds every entry lives; a new value applies to all entries at once."""
        return self._ttl

    @ttl.setter
    def ttl(self, value: float) -> None:
        self._ring.ttl = value
        self._ttl = self._ring.ttl

    def __getitem__(self, key: K) -> V:
        entry = self._data[key]
        if entry[2] + self._ttl <= self._clock():
            raise KeyError(key)
        return entry[1]  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        entry = self._data.get(key)  # type: ignore[arg-type]
        return entry is not None and entry[2] + self._ttl > self._clock()

    def __setitem__(self, key: K, value: V) -> None:
        now = self._clock()
        data = self._data
        removed: list[tuple[K, V]] = []
        maxsize = self.maxsize
        if maxsize is not None and len(data) >= maxsize and key not in data:
            removed = self._purge(now)
            if len(data) >= maxsize:
                removed.append(self._evict_oldest())
        entry = (key, value, now)
        data[key] = entry
        self._ring.push(entry, now)
        if removed:
            self._notify(removed)

    def __delitem__(self, key: K) -> None:
        entry = self._data[key]
        if entry[2] + self._ttl <= self._clock():
            raise KeyError(key)
        del self._data[key]  # its ring entry is stale from now on

    def _purge(self, now: float) -> list[tuple[K, V]]:
        """Drop the expired entries still held; return them as (key, value)."""
        data = self._data
        out = []
        for entry in self._ring.expire(now):
            key = entry[0]
            if data.get(key) is entry:
                del data[key]
                out.append((key, entry[1]))
        return out

    def _evict_oldest(self) -> tuple[K, V]:
        """Drop the oldest entry held, due or not; return it as (key, value)."""
        data = self._data
        while True:
            entry = self._ring.popleft()
            key = entry[0]
            if data.get(key) is entry:
                del data[key]
                return key, entry[1]

    def _notify(self, removed: list[tuple[K, V]]) -> None:
        raise NotImplementedError  # provided by dq_core._ttldict.TTLDict
