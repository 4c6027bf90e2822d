"""Hierarchical hashed timing wheel (pure twin of ``_wheelcore``).

Time is cut into ticks, and a tick number into base-``wheel_size`` digits.
Level ``L`` of the wheel has ``wheel_size`` slots, one per value of digit
``L``; a timer sits at the level of the highest digit in which its tick
differs from the current tick, in the slot named by that digit.  When the
current tick enters a slot of an upper level, the slot's timers move down
(cascade); when it enters a level-0 slot, the slot's timers are due.  A
bitmap of occupied slots per level lets ``advance`` jump straight to the
next occupied slot, so idle time costs nothing.

Timers live in a slab of parallel arrays (tick, links, generation), linked
into per-slot doubly linked lists: schedule and cancel are O(1), and a
handle (container id, generation and slot, ``cid << 44 | gen << 24 | slot``
while they fit) goes stale once its slot is reused
and names nothing in another container (``dq_core._handles``).

A deadline ``d`` belongs to tick ``floor(prev(d) / tick) + 1``, where
``prev(d)`` is the double just below ``d``: for every ``now < d``,
``floor(now / tick)`` is smaller, so a timer never comes out early, and it
comes out at most one tick late.
"""

from __future__ import annotations

import math
import time
import types
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Optional, TypeVar

from ._convert import to_count, to_real
from ._final import refuse_subclassing
from ._handles import NIL, Handles, new_cid, top_cid
from ._pickling import copied_by_state
from ._signature import InitSignature
from ._wheelstate import (
    DUE,
    DUE_LIST,
    FAR,
    FAR_LIST,
    FREE,
    MAX_WHEEL_SIZE,
    ORIGIN_LIMIT,
    STATE_VERSION,
    TICK_LIMIT,
    WHEEL_LISTS,
    check_raw,
    check_state,
)

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = types.MappingProxyType({})


__all__ = ["TimingWheel"]

T = TypeVar("T")

REENTERED = "the wheel was re-entered while it was changing (from a __del__ or GC finaliser)"
_FULL = "a TimingWheel holds at most 2**31 - 1 timers"


def _real(value: object, name: str) -> float:
    if type(value) is float and value == value:
        return value
    return to_real(value, name)


def _ticks_at(t: float, tick: float) -> int:
    """The absolute tick reached at time ``t``, clamped to +-TICK_LIMIT."""
    q = t / tick
    if q >= TICK_LIMIT:
        return TICK_LIMIT
    if q <= -TICK_LIMIT:
        return -TICK_LIMIT
    return math.floor(q)


_nextafter = math.nextafter
_floor = math.floor
_NEG_INF = -math.inf


def _lowest_bit(x: int) -> int:
    return (x & -x).bit_length() - 1


@copied_by_state()
class TimingWheel(Generic[T]):
    """Hierarchical hashed timing wheel: O(1) schedule and cancel of timers.

    ``advance`` returns the items whose deadline has passed, earliest tick
    first and first-in first-out within a tick; an item never comes out
    before its deadline and at most one ``tick`` after it.  Upper levels
    are added as needed, so any delay works.  Not thread-safe; a call
    from a finaliser that runs while the wheel is changing raises
    RuntimeError.  TimingWheel cannot be subclassed.

    ``copy.copy``, ``copy.deepcopy`` and ``pickle`` work, and handles stay
    valid in the copy; a pickle made by either implementation loads in the
    other.  The clock is pickled too, so it must be picklable
    (``time.monotonic`` is, a lambda is not).

    >>> w = TimingWheel(tick=0.5, clock=lambda: 0.0)
    >>> a = w.schedule("a", 2.0)
    >>> b = w.schedule_at("b", 1.2)
    >>> w.advance(1.0), w.advance(1.5)
    ([], ['b'])
    >>> w.cancel(a), w.cancel(a), len(w)
    (True, False, 0)
    """

    __slots__ = (
        "_tick",
        "_size",
        "_bits",
        "_mask",
        "_clock",
        "_origin",
        "_cur",
        "_time",
        "_tk",
        "_next",
        "_prev",
        "_items",
        "_t",
        "_len",
        "_head",
        "_tail",
        "_occ",
        "_far",
        "_visited",
        "_cascaded",
        "_busy",
        "_ready",
        "__weakref__",
    )

    if not TYPE_CHECKING:  # same alias type as the compiled class's
        __class_getitem__ = classmethod(types.GenericAlias)
        # __new__ takes any arguments, for __init__ to refuse them
        __signature__ = InitSignature()

    _ready: bool  # __init__ or __setstate__ has run
    _t: Handles  # the handle table; the lists of _reset_slots are by slot

    def __new__(cls, /, *args: object, **kwargs: object) -> TimingWheel[T]:
        # An empty wheel of 1 s ticks on time.monotonic, as the compiled
        # twin's: usable even if __init__ never runs (copy, pickle).
        self = super().__new__(cls)
        self._t = Handles(new_cid())
        self._setup(1.0, 2, time.monotonic, 0, 0.0)
        self._ready = False
        return self

    def __init__(
        self, /, tick: float = 0.001, wheel_size: int = 256, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if self._ready:
            raise RuntimeError("TimingWheel.__init__ may run only once")
        tk = to_real(tick, "tick")
        if not 0 < tk < math.inf:
            raise ValueError(f"tick must be a positive finite number, got {tk!r}")
        size = to_count(wheel_size, "wheel_size")
        if not 2 <= size <= MAX_WHEEL_SIZE or size & (size - 1):
            raise ValueError(f"wheel_size must be a power of two from 2 to {MAX_WHEEL_SIZE}, got {size!r}")
        if not callable(clock):
            raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")
        now = to_real(clock(), "clock()")
        q = now / tk
        if not -ORIGIN_LIMIT < q < ORIGIN_LIMIT:
            raise ValueError(f"clock() / tick must lie within +-2**61 ticks, got {now!r} / {tk!r}")
        # again: the clock (user code) may have run __init__ meanwhile, and
        # timers linked for another wheel_size must never meet this one
        if self._ready:
            raise RuntimeError("TimingWheel.__init__ may run only once")
        self._setup(tk, size, clock, math.floor(q), now)
        self._ready = True

    __init_subclass__ = refuse_subclassing("TimingWheel")

    def _setup(self, tk: float, size: int, clock: Callable[[], float], origin: int, now: float) -> None:
        self._tick = tk
        self._size = size
        self._bits = size.bit_length() - 1
        self._mask = size - 1
        self._clock = clock
        self._origin = origin  # tick numbers are kept relative to this
        self._cur = 0  # the current tick, relative
        self._time = now  # the latest now given to advance (never goes back)
        self._head: list[int] = [NIL, NIL]
        self._tail: list[int] = [NIL, NIL]
        self._occ: list[int] = []  # per level, bit s set when slot s is occupied
        self._far: dict[int, float] = {}  # slot -> deadline, for far-list timers
        self._len = 0
        self._visited = 0  # occupied slots advance has reached
        self._cascaded = 0  # timers moved down a level
        self._busy = False  # see _enter
        self._reset_slots(0)

    # -- slab ---------------------------------------------------------------

    def _reset_slots(self, epoch: int) -> None:
        self._t = Handles(self._t.cid, epoch)
        self._tk: list[int] = []
        self._next: list[int] = []
        self._prev: list[int] = []
        self._items: list[Any] = []

    def _take_slot(self, item: Any) -> int:
        slot = self._t.take(_FULL)
        if slot == len(self._tk):
            self._tk.append(FREE)
            self._next.append(NIL)
            self._prev.append(NIL)
            self._items.append(item)
        else:
            self._items[slot] = item
        return slot

    def _free_slot(self, slot: int) -> None:
        self._tk[slot] = FREE
        self._items[slot] = None
        self._t.release(slot)

    def _on_empty(self) -> None:
        epoch = self._t.spent()
        if epoch != NIL:
            self._reset_slots(epoch)

    # -- slot lists ---------------------------------------------------------

    def _list_of(self, t: int) -> int:
        """The list of a timer at relative tick ``t`` (or a DUE/FAR marker)."""
        if t < 0:
            return DUE_LIST if t == DUE else FAR_LIST
        bits = self._bits
        x = (t ^ self._cur) >> bits
        level = 0
        while x:
            level += 1
            x >>= bits
        return WHEEL_LISTS + (level << bits) + ((t >> (level * bits)) & self._mask)

    def _link(self, slot: int, t: int) -> None:
        self._tk[slot] = t
        lst = self._list_of(t)
        if lst >= WHEEL_LISTS:
            level = (lst - WHEEL_LISTS) >> self._bits
            while level >= len(self._occ):  # an upper level, made on demand
                self._occ.append(0)
                self._head.extend([NIL] * self._size)
                self._tail.extend([NIL] * self._size)
            self._occ[level] |= 1 << ((lst - WHEEL_LISTS) & self._mask)
        last = self._tail[lst]
        self._prev[slot] = last
        self._next[slot] = NIL
        if last == NIL:
            self._head[lst] = slot
        else:
            self._next[last] = slot
        self._tail[lst] = slot

    def _unlink(self, slot: int) -> None:
        lst = self._list_of(self._tk[slot])
        p, n = self._prev[slot], self._next[slot]
        if p == NIL:
            self._head[lst] = n
        else:
            self._next[p] = n
        if n == NIL:
            self._tail[lst] = p
        else:
            self._prev[n] = p
        if lst >= WHEEL_LISTS and self._head[lst] == NIL:
            lst -= WHEEL_LISTS
            self._occ[lst >> self._bits] &= ~(1 << (lst & self._mask))

    def _detach(self, lst: int) -> int:
        """Empty list ``lst`` (its nodes keep their links) and return its head."""
        first = self._head[lst]
        self._head[lst] = self._tail[lst] = NIL
        if lst >= WHEEL_LISTS:
            lst -= WHEEL_LISTS
            self._occ[lst >> self._bits] &= ~(1 << (lst & self._mask))
        return first

    def _next_event(self) -> tuple[int, int]:
        """(tick, level) of the next occupied slot after the current tick, or (-1, -1)."""
        bits, cur = self._bits, self._cur
        for level, occ in enumerate(self._occ):
            shift = level * bits
            above = ((occ >> ((cur >> shift) & self._mask)) >> 1) if occ else 0
            if above:
                s = ((cur >> shift) & self._mask) + 1 + _lowest_bit(above)
                return ((cur >> (shift + bits)) << (shift + bits)) | (s << shift), level
        return -1, -1

    # -- public API ---------------------------------------------------------

    def _enter(self) -> None:
        # Between _enter and the reset of _busy the lists are being changed:
        # a call from a GC finaliser that runs meanwhile is refused.
        if self._busy:
            raise RuntimeError(REENTERED)
        self._busy = True

    def _now(self) -> float:
        t = _real(self._clock(), "clock()")
        if not -math.inf < t < math.inf:
            raise ValueError(f"clock() must return a finite number, got {t!r}")
        return t

    def schedule(self, /, item: T, delay: float) -> int:
        """Add ``item``, due ``delay`` seconds from ``clock()``; return its handle.  O(1).

        A ``delay`` <= 0 makes the item due at the wheel's current tick, as
        for a past deadline in ``schedule_at``.
        """
        dl = _real(delay, "delay")
        now = self._now()
        return self._insert(item, now + dl, dl <= 0)

    def schedule_at(self, /, item: T, deadline: float) -> int:
        """Add ``item``, due at ``deadline`` on the clock; return its handle.  O(1).

        A deadline the wheel's time (``wheel_time``) has already reached
        makes the item due at the wheel's current tick: the next ``advance``
        returns it, ahead of every item still waiting for a later tick.
        """
        if type(deadline) is not float or deadline != deadline:
            deadline = to_real(deadline, "deadline")
        return self._insert(item, deadline, False)

    def _insert(self, item: T, d: float, due: bool) -> int:
        # tick_of, _take_slot and _link inlined: the pure aio.Timer schedules
        # through here, and every Python call saved shortens its firing tail
        if self._busy:
            raise RuntimeError(REENTERED)
        self._busy = True
        try:
            if due or d <= self._time:
                t = DUE
            else:
                q = _nextafter(d, _NEG_INF) / self._tick  # tick_of(d, tick)
                a = _floor(q) + 1 if q < TICK_LIMIT else TICK_LIMIT
                t = FAR if a >= TICK_LIMIT else a - self._origin
            handles = self._t
            slot = handles.take(_FULL)
            tk = self._tk
            if slot == len(tk):
                tk.append(FREE)
                self._next.append(NIL)
                self._prev.append(NIL)
                self._items.append(item)
            else:
                self._items[slot] = item
            try:
                if t < 0:
                    if t == FAR:
                        self._far[slot] = d
                    self._link(slot, t)
                else:
                    bits = self._bits
                    occ = self._occ
                    if (t ^ self._cur) >> bits or not occ:
                        self._link(slot, t)  # an upper level (made on demand)
                    else:  # level 0: the list of slot t & mask
                        s = t & self._mask
                        lst = WHEEL_LISTS + s
                        tk[slot] = t
                        tail = self._tail
                        last = tail[lst]
                        self._prev[slot] = last
                        self._next[slot] = NIL
                        if last == NIL:
                            self._head[lst] = slot
                            occ[0] |= 1 << s
                        else:
                            self._next[last] = slot
                        tail[lst] = slot
            except BaseException:  # MemoryError: give the slot back
                self._far.pop(slot, None)
                self._free_slot(slot)
                raise
            self._len += 1
            return handles.handles[slot]
        finally:
            self._busy = False

    def cancel(self, /, handle: int) -> bool:
        """Remove the item behind ``handle``; False if it already left or never was.  O(1)."""
        item = None  # the cancelled item: its __del__ runs after we are done
        if self._busy:  # _enter, inlined: cancel is hot
            raise RuntimeError(REENTERED)
        self._busy = True
        try:
            t = self._t
            slot = t.find(handle)
            if slot == NIL:
                return False
            items = self._items
            item = items[slot]  # noqa: F841
            self._unlink(slot)
            tk = self._tk
            if tk[slot] == FAR:
                del self._far[slot]
            # _free_slot and Handles.release, inlined
            tk[slot] = FREE
            items[slot] = None
            t.links[slot] = t.free
            t.free = slot
            self._len -= 1
            if not self._len:
                self._on_empty()
            return True
        finally:
            self._busy = False

    def advance(self, /, now: Optional[float] = None) -> list[T]:
        """Move the wheel's time to ``now`` and return the items that came due.

        ``now`` defaults to ``clock()``; a ``now`` before the wheel's time
        counts as the wheel's time.  Items come out earliest tick first,
        first-in first-out within a tick.  O(k + s) for k items returned and
        s occupied slots passed, whatever the time skipped.
        """
        if now is None:
            t = self._now()
        else:
            t = _real(now, "now")
            if not -math.inf < t < math.inf:
                raise ValueError(f"now must be a finite number, got {t!r}")
        self._enter()
        try:
            return self._advance(t)
        finally:
            self._busy = False

    def _advance(self, t: float) -> list[T]:
        if t < self._time:
            t = self._time
        self._time = t
        target = _ticks_at(t, self._tick) - self._origin
        out: list[T] = []
        if not self._len:
            if target > self._cur:
                self._cur = target
            return out
        self._fire(self._detach(DUE_LIST), out)
        bits, mask = self._bits, self._mask
        while True:
            ev, level = self._next_event()
            if ev < 0 or ev > target:
                break
            self._cur = ev
            self._visited += 1
            if level:
                # cascade: the slot's timers move down, relative to the new tick
                upper = WHEEL_LISTS + (level << bits) + ((ev >> (level * bits)) & mask)
                self._cascade(self._detach(upper))
            lst = WHEEL_LISTS + (ev & mask)
            if self._head[lst] != NIL:
                self._fire(self._detach(lst), out)
        if target > self._cur:
            self._cur = target
        if self._far and t / self._tick >= TICK_LIMIT:
            self._fire_far(t, out)
        if not self._len:
            self._on_empty()
        return out

    def _cascade(self, slot: int) -> None:
        """Link every timer of a detached upper slot's chain where ``_link`` would, in order.

        The chain starts at ``slot``.  ``_link`` inlined: one advance moves
        every timer of the slot (all those due within the next turn of the
        level below, thousands at a time), so the per-timer cost is that
        advance's cost.  The levels below exist already.
        """
        nxt_of, prev_of, tk = self._next, self._prev, self._tk
        head, tail, occ = self._head, self._tail, self._occ
        bits, mask, cur = self._bits, self._mask, self._cur
        nil, base, high = NIL, WHEEL_LISTS, cur >> bits
        n = 0
        while slot != nil:
            nxt = nxt_of[slot]
            t = tk[slot]
            if t >> bits == high:  # to level 0
                level = 0
                s = t & mask
                lst = base + s
            else:
                x = (t ^ cur) >> bits
                level = 0
                while x:
                    level += 1
                    x >>= bits
                s = (t >> (level * bits)) & mask
                lst = base + (level << bits) + s
            last = tail[lst]
            prev_of[slot] = last
            nxt_of[slot] = nil
            if last == nil:  # the list was empty: now its slot is occupied
                head[lst] = slot
                occ[level] |= 1 << s
            else:
                nxt_of[last] = slot
            tail[lst] = slot
            n += 1
            slot = nxt
        self._cascaded += n

    def _fire(self, slot: int, out: list[T]) -> None:
        # _free_slot inlined: every timer the wheel hands out passes here
        nxt_of, items, tk = self._next, self._items, self._tk
        release = self._t.release
        add = out.append
        n = 0
        while slot != NIL:
            add(items[slot])
            items[slot] = None
            tk[slot] = FREE
            release(slot)
            slot = nxt_of[slot]
            n += 1
        self._len -= n

    def _fire_far(self, t: float, out: list[T]) -> None:
        far = self._far
        due = []
        slot = self._head[FAR_LIST]
        while slot != NIL:
            if far[slot] <= t:
                due.append(slot)
            slot = self._next[slot]
        due.sort(key=far.__getitem__)  # stable: FIFO among equal deadlines
        for slot in due:
            self._unlink(slot)
            del far[slot]
            out.append(self._items[slot])
            self._free_slot(slot)
        self._len -= len(due)

    def drain(self, /) -> list[T]:
        """Remove and return every item, earliest tick first.  O(n log n).

        Every handle issued so far goes stale.
        """
        self._enter()
        try:
            return self._drain()
        finally:
            self._busy = False

    def _drain(self) -> list[T]:
        out: list[T] = []
        self._fire(self._detach(DUE_LIST), out)
        bits, mask = self._bits, self._mask
        for level in range(len(self._occ)):
            # an upper slot holds several ticks: sort them, keeping FIFO
            d = (self._cur >> (level * bits)) & mask
            occ = self._occ[level] >> (d + 1) << (d + 1)
            while occ:  # the occupied slots after the current one
                lst = WHEEL_LISTS + (level << bits) + _lowest_bit(occ)
                occ &= occ - 1
                slot = self._detach(lst)
                group = []
                while slot != NIL:
                    group.append(slot)
                    slot = self._next[slot]
                group.sort(key=self._tk.__getitem__)
                for slot in group:
                    out.append(self._items[slot])
                    self._free_slot(slot)
                self._len -= len(group)
        if self._far:
            self._fire_far(math.inf, out)
        self._on_empty()
        return out

    def next_deadline(self, /) -> Optional[float]:
        """The earliest time at which ``advance`` could return an item, or None.  O(levels).

        ``advance`` before this time returns nothing.  It is exact when the
        earliest item sits on the lowest level; when that item is still on
        an upper level, it is the start of the item's slot there (a lower
        bound).  Items already due give the wheel's current time.
        """
        self._enter()
        try:
            return self._next_deadline()
        finally:
            self._busy = False

    def _next_deadline(self) -> Optional[float]:
        if not self._len:
            return None
        if self._head[DUE_LIST] != NIL:
            return self._time
        ev, _ = self._next_event()
        if ev < 0:
            return min(self._far.values())
        a, tick = min(ev + self._origin, TICK_LIMIT), self._tick
        v = a * tick
        # the first double that reaches tick a
        while _ticks_at(v, tick) < a:
            v = math.nextafter(v, math.inf)
        while _ticks_at(math.nextafter(v, -math.inf), tick) >= a:
            v = math.nextafter(v, -math.inf)
        return v

    @property
    def tick(self) -> float:
        """Seconds per tick."""
        return self._tick

    @property
    def wheel_size(self) -> int:
        """Slots per level."""
        return self._size

    @property
    def wheel_time(self) -> float:
        """The wheel's time: the latest ``now`` it was advanced to (or its clock at creation)."""
        return self._time

    def __len__(self, /) -> int:
        return self._len

    def __contains__(self, key: object, /) -> bool:
        return isinstance(key, int) and self._t.find(key) != NIL

    def stats(self, /) -> dict[str, int]:
        """Counters: length, levels, slots (allocated in the slab), visited, cascaded.

        ``visited`` counts the occupied slots ``advance`` has reached, and
        ``cascaded`` the timers it moved down a level.
        """
        return {
            "length": self._len,
            "levels": len(self._occ),
            "slots": len(self._tk),
            "visited": self._visited,
            "cascaded": self._cascaded,
        }

    def __repr__(self, /) -> str:
        nxt = None if self._busy else self.next_deadline()  # repr works in a finaliser too
        tail = "" if nxt is None else f" next_deadline={nxt!r}"
        return f"<{type(self).__name__} len={self._len} tick={self._tick!r}{tail}>"

    # the docstrings CPython gives the compiled twin's slots (they vary by version)
    __init__.__doc__ = object.__init__.__doc__
    __len__.__doc__ = list.__len__.__doc__
    __contains__.__doc__ = list.__contains__.__doc__
    __repr__.__doc__ = object.__repr__.__doc__

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self, /) -> tuple[Any, ...]:
        """The state both implementations pickle to and load from."""
        self._enter()
        try:
            free = self._t.free_slots()
            live = []  # list by list, in list order: FIFO order survives
            lists = [DUE_LIST, FAR_LIST] + [
                WHEEL_LISTS + (level << self._bits) + s
                for level, occ in enumerate(self._occ)
                for s in range(self._size)
                if occ >> s & 1
            ]
            for lst in lists:
                slot = self._head[lst]
                while slot != NIL:
                    t = self._tk[slot]
                    live.append((slot, t, self._far[slot] if t == FAR else None, self._items[slot]))
                    slot = self._next[slot]
            return (
                STATE_VERSION,
                self._tick,
                self._size,
                self._clock,
                self._origin,
                self._cur,
                self._time,
                self._t.epoch,
                list(self._t.tags),
                free,
                live,
                self._visited,
                self._cascaded,
            )
        finally:
            self._busy = False

    def __setstate__(self, /, state: tuple[Any, ...]) -> None:
        (_, tick, size, clock, origin, cur, now, epoch, tags, free, live, visited, cascaded) = check_state(
            state
        )
        # built aside, then moved in: a failure leaves this wheel as it was
        new: TimingWheel[Any] = TimingWheel.__new__(TimingWheel)
        new._setup(tick, size, clock, origin, now)
        new._ready = True
        # a new container: issues its own handles, above every id it copied
        new._t = Handles.load(tags, free, epoch, new_cid(top_cid(tags)))
        new._cur = cur
        n = len(tags)
        new._tk = [FREE] * n
        new._next = [NIL] * n
        new._prev = [NIL] * n
        new._items = [None] * n
        for slot, t, d, item in live:
            new._items[slot] = item
            if t == FAR:
                new._far[slot] = d
            new._link(slot, t)
        new._len = len(live)
        new._visited = visited
        new._cascaded = cascaded
        if getattr(self, "_busy", False):  # checked last, as the compiled twin does
            raise RuntimeError(REENTERED)
        old = getattr(self, "_items", None)  # noqa: F841 -- dropped after the move
        for name in TimingWheel.__slots__[:-1]:
            setattr(self, name, getattr(new, name))

    def _raw(self, /) -> dict[str, Any]:
        # a snapshot taken across allocations: a finaliser must not change it
        self._enter()
        try:
            return self._raw_now()
        finally:
            self._busy = False

    def _raw_now(self) -> dict[str, Any]:
        return {
            "tk": list(self._tk),
            "next": list(self._next),
            "prev": list(self._prev),
            "tag": list(self._t.tags),
            "cid": self._t.cid,
            "links": list(self._t.links),
            "items": list(self._items),
            "free": self._t.free,
            "epoch": self._t.epoch,
            "head": list(self._head),
            "tail": list(self._tail),
            "occ": list(self._occ),
            "far": dict(self._far),
            "cur": self._cur,
            "bits": self._bits,
            "len": self._len,
        }

    def _check(self, /) -> None:
        """Assert the wheel's bookkeeping: slot membership, links, bitmaps, counts."""
        check_raw(self._raw())
