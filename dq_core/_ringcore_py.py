"""Segmented FIFO ring for expiry when every entry shares one TTL (pure twin of ``_ringcore``).

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

import time
from types import MappingProxyType
from typing import Any, Callable, Generic, Iterator, Mapping, Optional, TypeVar

from ._final import refuse_subclassing
from ._pickling import copied_by_state
from ._ringstate import (
    BATCH,
    COMPACT_MIN,
    STATE_VERSION,
    check_ring_state,
    clock_of,
    enter,
    enter_anew,
    max_items_of,
    reading,
    real,
    reentered,
    segment_size_of,
    ttl_of,
)

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = MappingProxyType({})


__all__ = ["TTLRing"]

K = TypeVar("K")

Segment = tuple[list[Any], list[float]]  # (keys, created_at) by slot


_FIELDS = ("_segs", "_spare", "_clock")  # what a re-initialisation releases after it


@copied_by_state()
class TTLRing(Generic[K]):
    """FIFO of keys that all live ``ttl`` seconds from their ``created_at``.

    ``push`` appends at the tail; ``expire`` pops every head entry with
    ``created_at + ttl <= now`` and stops at the first live one.  Entries are
    assumed pushed in ``created_at`` order: an out-of-order ``created_at`` is
    accepted and never lost, but it waits behind older heads and may expire
    late.  An entry whose ``created_at + ttl`` is undefined (``-inf`` plus an
    infinite ttl) never expires.  ``segment_size`` (slots a segment holds)
    is an int from 1 to 2**20: a segment is allocated whole.

    ``clock`` must be callable; a reading that is NaN or not a number raises
    an error naming ``clock()``.  A ring supports ``copy.copy``,
    ``copy.deepcopy`` and ``pickle`` (its keys and clock must be picklable: a
    lambda clock makes pickling fail); the copy is independent, and a pickle
    made by either implementation loads in the other.  Not thread-safe; a
    change made from user code (a finaliser) while another change is under
    way raises ``RuntimeError``.  TTLRing cannot be subclassed.

    >>> r = TTLRing(10, clock=lambda: 0.0)
    >>> r.push("a", created_at=0.0); r.push("b", created_at=5.0)
    >>> r.expire(now=12.0)
    ['a']
    >>> r.next_expiry()
    15.0
    """

    __slots__ = (
        "_ttl",
        "_size",
        "_clock",
        "_segs",
        "_first",
        "_head",
        "_tail",
        "_len",
        "_pushed",
        "_expired",
        "_spare",
        "_busy",
        "__weakref__",
    )
    __init_subclass__ = refuse_subclassing("TTLRing")

    def __init__(
        self, ttl: float, segment_size: int = 1024, clock: Callable[[], float] = time.monotonic
    ) -> None:
        ttl = ttl_of(ttl)
        size = segment_size_of(segment_size)
        clock = clock_of(clock)
        # what a re-initialised ring held goes after the change is complete
        old = enter_anew(self, "TTLRing", _FIELDS)
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

    def _time(self, value: Optional[float], name: str) -> float:
        # ``value`` as a time, ``clock()`` when None (user code may run: before _enter)
        return reading(self._clock) if value is None else real(value, name)

    @property
    def ttl(self) -> float:
        """Seconds every entry lives; a new value applies to all from the next ``expire``."""
        return self._ttl

    @ttl.setter
    def ttl(self, value: float) -> None:
        self._ttl = ttl_of(value)

    def push(self, /, key: K, created_at: Optional[float] = None) -> None:
        """Append ``key``, created at ``created_at`` (default ``clock()``).  O(1) amortised."""
        if type(created_at) is float and created_at == created_at:
            t = created_at  # TTLDict's every set: its inline fast path
        else:
            t = self._time(created_at, "created_at")
        if self._busy:
            raise reentered("TTLRing")
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

    def expire(self, /, now: Optional[float] = None, max_items: int = -1) -> list[K]:
        """Pop and return every head key with ``created_at + ttl <= now``, oldest first.

        ``now`` defaults to ``clock()``; ``max_items`` >= 0 caps how many.
        O(1) when nothing is due, O(k) for k expired keys.  ``purge()`` does
        the same without building the list.
        """
        # the check a service makes every tick: its common arguments inline
        if type(now) is float and now == now:
            t = now
        else:
            t = self._time(now, "now")
        cap = -1 if type(max_items) is int and max_items < 0 else max_items_of(max_items)
        if not self._len or not self._segs[self._first][1][self._head] + self._ttl <= t:
            return []  # nothing is due: one comparison, no change
        if self._busy:
            raise reentered("TTLRing")
        self._busy = True
        try:
            return self._expire(t, cap, True)
        finally:
            self._busy = False

    def purge(self, /, now: Optional[float] = None) -> int:
        """Pop every head key with ``created_at + ttl <= now`` and return how many; build nothing.

        ``now`` defaults to ``clock()``.  As ``expire()`` without the list:
        the keys are let go of, a few at a time, once they have left.  O(1)
        when nothing is due, O(k) for k expired keys.
        """
        t = self._time(now, "now")
        count = 0
        while self._len and self._segs[self._first][1][self._head] + self._ttl <= t:
            enter(self, "TTLRing")
            try:
                batch = self._expire(t, BATCH, True)
            finally:
                self._busy = False
            got = len(batch)
            count += got
            del batch  # its keys go now, newest first, once they have left
            if got < BATCH:
                break
        return count

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

    def popleft(self, /) -> K:
        """Pop and return the head key whether it is due or not.  O(1).

        Raises ``IndexError`` when the ring is empty.
        """
        enter(self, "TTLRing")
        try:
            if not self._len:
                raise IndexError("pop from an empty ring")
            return self._expire(0.0, 1, False)[0]
        finally:
            self._busy = False

    def _due(self, now: float) -> Iterator[K]:
        # the due head keys, oldest first, left on the ring (the caller pops
        # those it is done with); nothing may change the ring meanwhile
        ttl, size, segs = self._ttl, self._size, self._segs
        first, head, n = self._first, self._head, self._len
        while n:
            keys, times = segs[first]
            if not times[head] + ttl <= now:
                return
            yield keys[head]
            n -= 1
            head += 1
            if head == size:
                first += 1
                head = 0

    def _peek(self) -> K:
        # the head key; the ring must not be empty
        return self._segs[self._first][0][self._head]  # type: ignore[no-any-return]

    def next_expiry(self, /) -> Optional[float]:
        """When the head entry expires (``created_at + ttl``), or None if empty.  O(1).

        ``inf`` for an entry that never expires.
        """
        if not self._len:
            return None
        e = self._segs[self._first][1][self._head] + self._ttl
        return e if e == e else float("inf")

    def __len__(self, /) -> int:
        """Return len(self)."""
        return self._len

    def stats(self, /) -> dict[str, int]:
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

    def __repr__(self, /) -> str:
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
        # a change under way has no whole state yet; none starts while it is read
        enter(self, "TTLRing")
        try:
            return (
                STATE_VERSION,
                self._ttl,
                self._size,
                self._clock,
                self._pushed,
                self._expired,
                self._head if self._len else 0,
                self._entries(),
            )
        finally:
            self._busy = False

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        ttl, size, clock, pushed, expired, head, keys, times = check_ring_state(state)
        segs: list[Segment] = []
        tail = size
        pos = head
        i = 0
        while i < len(keys):
            seg: Segment = ([None] * size, [0.0] * size)
            take = min(size - pos, len(keys) - i)
            seg[0][pos : pos + take] = keys[i : i + take]
            seg[1][pos : pos + take] = times[i : i + take]
            segs.append(seg)
            i += take
            tail = pos + take
            pos = 0
        old = enter_anew(self, "TTLRing", _FIELDS)
        self._ttl, self._size, self._clock = ttl, size, clock
        self._segs, self._first, self._head, self._tail = segs, 0, head, tail
        self._len, self._pushed, self._expired = len(keys), pushed, expired
        self._spare = None
        self._busy = False
        del old  # released after the change

    def _check(self, /) -> None:
        """Assert the ring's bookkeeping: counts, head/tail, released slots."""
        enter(self, "TTLRing")  # nothing changes while it is checked
        try:
            self._check_held()
        finally:
            self._busy = False

    def _check_held(self) -> None:
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
            assert all(k is None for k in keys[: self._head])
            assert all(k is None for k in live[-1][0][self._tail :])
        assert self._pushed - self._expired == self._len
        if self._spare is not None:
            assert all(k is None for k in self._spare[0])
