"""Hierarchical hashed timing wheel (pure twin of ``_wheel``).

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
handle ``gen << 32 | slot`` goes stale once its slot is reused.

A deadline ``d`` belongs to tick ``floor(prev(d) / tick) + 1``, where
``prev(d)`` is the double just below ``d``: for every ``now < d``,
``floor(now / tick)`` is smaller, so a timer never comes out early, and it
comes out at most one tick late.
"""

from __future__ import annotations

import math
import time
import types
from typing import TYPE_CHECKING, Any, Callable, Generic, Optional, TypeVar

import copy

from ._convert import to_count, to_real
from ._heap_py import GEN_LIMIT, RESET_MIN_SLOTS

__all__ = ["TimingWheel"]

T = TypeVar("T")

# Shared with the compiled twin; see dq_core._wheel.  Handles follow the
# Heap's generation rules, with its limits.
MAX_WHEEL_SIZE = 2**16
#: A deadline whose tick number (deadline / tick) reaches this goes on the
#: far list, served by an exact comparison of deadlines.
TICK_LIMIT = 2**62
#: The clock's reading at construction, in ticks, must lie within this.
ORIGIN_LIMIT = 2**61
NIL = -1
# tick[] of a slot outside the wheel proper
DUE, FAR, FREE = -1, -2, -3
# list ids: the due list, the far list, then level * wheel_size + slot + 2
DUE_LIST, FAR_LIST, WHEEL_LISTS = 0, 1, 2
#: The version of the state both implementations pickle to.
STATE_VERSION = 1
REENTERED = "the wheel was re-entered while it was changing (from a __del__ or GC finaliser)"


def _real(value: object, name: str) -> float:
    if type(value) is float and value == value:
        return value
    return to_real(value, name)


def _tick_of(d: float, tick: float) -> int:
    """The absolute tick at which deadline ``d`` is due, or TICK_LIMIT if beyond."""
    q = math.nextafter(d, -math.inf) / tick
    if q >= TICK_LIMIT:
        return TICK_LIMIT
    return math.floor(q) + 1


def _ticks_at(t: float, tick: float) -> int:
    """The absolute tick reached at time ``t``, clamped to +-TICK_LIMIT."""
    q = t / tick
    if q >= TICK_LIMIT:
        return TICK_LIMIT
    if q <= -TICK_LIMIT:
        return -TICK_LIMIT
    return math.floor(q)


def _lowest_bit(x: int) -> int:
    return (x & -x).bit_length() - 1


class TimingWheel(Generic[T]):
    """Hierarchical hashed timing wheel: O(1) schedule and cancel of timers.

    ``advance`` returns the items whose deadline has passed, earliest tick
    first and first-in first-out within a tick; an item never comes out
    before its deadline and at most one ``tick`` after it.  Upper levels
    are added as needed, so any delay works.  Not thread-safe; a call
    from a finaliser that runs while the wheel is changing raises
    RuntimeError.

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
        "_tick", "_size", "_bits", "_mask", "_clock", "_origin", "_cur", "_time",
        "_tk", "_next", "_prev", "_gen", "_items", "_free", "_nslots", "_epoch",
        "_len", "_head", "_tail", "_occ", "_far", "_visited", "_cascaded", "_busy",
        "__weakref__",
    )

    if not TYPE_CHECKING:  # same alias type as the compiled class's
        __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, /, tick: float = 0.001, wheel_size: int = 256,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if hasattr(self, "_tick"):
            raise RuntimeError("TimingWheel.__init__ may run only once")
        tk = to_real(tick, "tick")
        if not 0 < tk < math.inf:
            raise ValueError(f"tick must be a positive finite number, got {tk!r}")
        size = to_count(wheel_size, "wheel_size")
        if not 2 <= size <= MAX_WHEEL_SIZE or size & (size - 1):
            raise ValueError(
                f"wheel_size must be a power of two from 2 to {MAX_WHEEL_SIZE}, got {size!r}"
            )
        if not callable(clock):
            raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")
        now = to_real(clock(), "clock()")
        q = now / tk
        if not -ORIGIN_LIMIT < q < ORIGIN_LIMIT:
            raise ValueError(
                f"clock() / tick must lie within +-2**61 ticks, got {now!r} / {tk!r}"
            )
        self._setup(tk, size, clock, math.floor(q), now)

    def _setup(self, tk: float, size: int, clock: Callable[[], float], origin: int,
               now: float) -> None:
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
        self._tk: list[int] = []
        self._next: list[int] = []
        self._prev: list[int] = []
        self._gen: list[int] = []
        self._items: list[Any] = []
        self._free = NIL
        self._nslots = 0
        self._epoch = epoch

    def _take_slot(self, item: Any) -> int:
        # A reused slot moves to the next generation, so handles of its
        # earlier occupants go stale; at GEN_LIMIT it is retired for good.
        slot = self._free
        while slot != NIL:
            self._free = self._next[slot]
            gen = self._gen[slot] + 1
            self._gen[slot] = gen
            if gen < GEN_LIMIT:
                self._items[slot] = item
                return slot
            slot = self._free
        slot = self._nslots
        self._tk.append(FREE)
        self._next.append(NIL)
        self._prev.append(NIL)
        self._gen.append(self._epoch)
        self._items.append(item)
        self._nslots = slot + 1
        return slot

    def _free_slot(self, slot: int) -> None:
        self._tk[slot] = FREE
        self._items[slot] = None
        self._next[slot] = self._free
        self._free = slot

    def _on_empty(self) -> None:
        if self._nslots > RESET_MIN_SLOTS:
            top = max(self._gen)
            # Every handle ever issued has a generation below the new epoch,
            # so slots made afresh cannot repeat one.
            if top + 1 < GEN_LIMIT // 2:
                self._reset_slots(top + 1)

    def _slot_of(self, handle: object) -> int:
        """The slot behind ``handle``, or -1 if it is stale or unknown."""
        if type(handle) is not int:
            if not isinstance(handle, int):
                raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
            handle = int.__index__(handle)  # its value, without the subclass's methods
        if handle < 0 or handle > 0xFFFFFFFFFFFFFFFF:
            return NIL
        slot = handle & 0xFFFFFFFF
        if slot >= self._nslots or self._tk[slot] == FREE or self._gen[slot] != handle >> 32:
            return NIL
        return slot

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
        return self._insert(item, _real(deadline, "deadline"), False)

    def _insert(self, item: T, d: float, due: bool) -> int:
        self._enter()
        try:
            if due or d <= self._time:
                t = DUE
            else:
                a = _tick_of(d, self._tick)
                t = FAR if a >= TICK_LIMIT else a - self._origin
            slot = self._take_slot(item)
            try:
                if t == FAR:
                    self._far[slot] = d
                self._link(slot, t)
            except BaseException:  # MemoryError: give the slot back
                self._far.pop(slot, None)
                self._free_slot(slot)
                raise
            self._len += 1
            return (self._gen[slot] << 32) | slot
        finally:
            self._busy = False

    def cancel(self, /, handle: int) -> bool:
        """Remove the item behind ``handle``; False if it already left or never was.  O(1)."""
        item = None  # the cancelled item: its __del__ runs after we are done
        self._enter()
        try:
            slot = self._slot_of(handle)
            if slot == NIL:
                return False
            item = self._items[slot]  # noqa: F841
            self._unlink(slot)
            if self._tk[slot] == FAR:
                del self._far[slot]
            self._free_slot(slot)
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
                slot = self._detach(WHEEL_LISTS + (level << bits) + ((ev >> (level * bits)) & mask))
                while slot != NIL:
                    nxt = self._next[slot]
                    self._link(slot, self._tk[slot])
                    self._cascaded += 1
                    slot = nxt
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

    def _fire(self, slot: int, out: list[T]) -> None:
        n = 0
        while slot != NIL:
            nxt = self._next[slot]
            out.append(self._items[slot])
            self._free_slot(slot)
            slot = nxt
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
        return isinstance(key, int) and self._slot_of(key) != NIL

    def stats(self, /) -> dict[str, int]:
        """Counters: length, levels, slots (allocated in the slab), visited, cascaded.

        ``visited`` counts the occupied slots ``advance`` has reached, and
        ``cascaded`` the timers it moved down a level.
        """
        return {
            "length": self._len, "levels": len(self._occ), "slots": self._nslots,
            "visited": self._visited, "cascaded": self._cascaded,
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
            free = []
            slot = self._free
            while slot != NIL:
                free.append(slot)
                slot = self._next[slot]
            live = []  # list by list, in list order: FIFO order survives
            lists = [DUE_LIST, FAR_LIST] + [
                WHEEL_LISTS + (level << self._bits) + s
                for level, occ in enumerate(self._occ)
                for s in range(self._size) if occ >> s & 1
            ]
            for lst in lists:
                slot = self._head[lst]
                while slot != NIL:
                    t = self._tk[slot]
                    live.append((slot, t, self._far[slot] if t == FAR else None, self._items[slot]))
                    slot = self._next[slot]
            return (
                STATE_VERSION, self._tick, self._size, self._clock, self._origin, self._cur,
                self._time, self._epoch, list(self._gen), free, live, self._visited,
                self._cascaded,
            )
        finally:
            self._busy = False

    def __setstate__(self, /, state: tuple[Any, ...]) -> None:
        (_, tick, size, clock, origin, cur, now, epoch, gens, free, live, visited,
         cascaded) = check_state(state)
        if getattr(self, "_busy", False):
            raise RuntimeError(REENTERED)
        # built aside, then moved in: a failure leaves this wheel as it was
        new: TimingWheel[Any] = TimingWheel.__new__(TimingWheel)
        new._setup(tick, size, clock, origin, now)
        new._reset_slots(epoch)
        new._cur = cur
        n = len(gens)
        new._tk = [FREE] * n
        new._next = [NIL] * n
        new._prev = [NIL] * n
        new._gen = list(gens)
        new._items = [None] * n
        new._nslots = n
        for slot in reversed(free):
            new._next[slot] = new._free
            new._free = slot
        for slot, t, d, item in live:
            new._items[slot] = item
            if t == FAR:
                new._far[slot] = d
            new._link(slot, t)
        new._len = len(live)
        new._visited = visited
        new._cascaded = cascaded
        old = getattr(self, "_items", None)  # noqa: F841 -- dropped after the move
        for name in TimingWheel.__slots__[:-1]:
            setattr(self, name, getattr(new, name))

    def __reduce__(self, /) -> tuple[Any, ...]:
        from ._compat import restore

        return restore, ("TimingWheel", self.__getstate__())

    def __copy__(self, /) -> TimingWheel[T]:
        new = type(self).__new__(type(self))
        new.__setstate__(self.__getstate__())
        return new

    def __deepcopy__(self, /, memo: dict[int, Any]) -> TimingWheel[T]:
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new

    def _raw(self, /) -> dict[str, Any]:
        # a snapshot taken across allocations: a finaliser must not change it
        self._enter()
        try:
            return self._raw_now()
        finally:
            self._busy = False

    def _raw_now(self) -> dict[str, Any]:
        return {
            "tk": list(self._tk), "next": list(self._next), "prev": list(self._prev),
            "gen": list(self._gen), "items": list(self._items), "free": self._free,
            "nslots": self._nslots, "epoch": self._epoch, "head": list(self._head),
            "tail": list(self._tail), "occ": list(self._occ), "far": dict(self._far),
            "cur": self._cur, "bits": self._bits, "len": self._len,
        }

    def _check(self, /) -> None:
        """Assert the wheel's bookkeeping: slot membership, links, bitmaps, counts."""
        check_raw(self._raw())


def check_state(state: Any) -> tuple[Any, ...]:
    """Validate a pickled TimingWheel state (both implementations load through this)."""
    try:
        (version, tick, size, clock, origin, cur, now, epoch, gens, free, live, visited,
         cascaded) = state
    except (TypeError, ValueError):
        raise ValueError("invalid TimingWheel state") from None
    if not (type(version) is int and version == STATE_VERSION):
        raise ValueError(f"unsupported TimingWheel state version {version!r}")
    if not callable(clock):
        raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")

    def bad(what: str) -> ValueError:
        return ValueError(f"invalid TimingWheel state: {what}")

    if not (type(tick) is float and 0 < tick < math.inf):
        raise bad("tick")
    if not (type(size) is int and 2 <= size <= MAX_WHEEL_SIZE and not size & (size - 1)):
        raise bad("wheel_size")
    if not (type(origin) is int and -ORIGIN_LIMIT <= origin <= ORIGIN_LIMIT):
        raise bad("origin")
    if not (type(cur) is int and 0 <= cur <= TICK_LIMIT - origin):
        raise bad("current tick")
    if not (type(now) is float and -math.inf < now < math.inf):
        raise bad("time")
    if not (type(epoch) is int and 0 <= epoch < GEN_LIMIT):
        raise bad("epoch")
    if not all(type(x) is int and 0 <= x <= 0xFFFFFFFFFFFFFFFF for x in (visited, cascaded)):
        raise bad("counters")
    if not (type(gens) is list and type(free) is list and type(live) is list):
        raise bad("slot lists")
    # Snapshots: what is checked is what gets built, whatever a finaliser
    # does to the caller's lists meanwhile.
    gens, free = list(gens), list(free)
    live = [tuple(e) if type(e) in (tuple, list) else e for e in list(live)]
    n = len(gens)
    if not (n < 0x7FFFFFFF and all(type(g) is int and epoch <= g <= GEN_LIMIT for g in gens)):
        raise bad("generations")
    slots = list(free)
    for entry in live:
        if not (type(entry) is tuple and len(entry) == 4):
            raise bad("timer")
        slot, t, d, _ = entry
        slots.append(slot)
        if type(t) is not int:
            raise bad("timer tick")
        if t == FAR:
            if not (type(d) is float and d == d and _tick_of(d, tick) >= TICK_LIMIT):
                raise bad("far deadline")
        elif d is not None or not (t == DUE or cur < t < TICK_LIMIT - origin):
            raise bad("timer tick")
    if not all(type(s) is int and 0 <= s < n for s in slots) or len(set(slots)) != len(slots):
        raise bad("slots")
    if len(slots) != sum(g < GEN_LIMIT for g in gens) or any(gens[s] == GEN_LIMIT for s in slots):
        raise bad("slots")
    return (version, tick, size, clock, origin, cur, now, epoch, gens, free, live, visited,
            cascaded)


def check_raw(w: dict[str, Any]) -> None:
    """Assert the invariants of a wheel's raw state (both implementations)."""
    bits: int = w["bits"]
    cur: int = w["cur"]
    tk: list[int] = w["tk"]
    nxt: list[int] = w["next"]
    size = 1 << bits
    mask = size - 1

    def list_of(t: int) -> int:
        if t < 0:
            return DUE_LIST if t == DUE else FAR_LIST
        level = 0
        while (t ^ cur) >> ((level + 1) * bits):
            level += 1
        return WHEEL_LISTS + (level << bits) + ((t >> (level * bits)) & mask)

    nlists = WHEEL_LISTS + len(w["occ"]) * size
    assert len(w["head"]) == len(w["tail"]) == nlists
    seen: set[int] = set()
    for lst in range(nlists):
        slot, prev = w["head"][lst], NIL
        while slot != NIL:
            assert slot not in seen and tk[slot] != FREE
            seen.add(slot)
            assert w["prev"][slot] == prev
            assert list_of(tk[slot]) == lst, (slot, lst)
            if lst >= WHEEL_LISTS:
                assert tk[slot] > cur
            prev, slot = slot, nxt[slot]
        assert w["tail"][lst] == prev
        if lst >= WHEEL_LISTS:
            i = lst - WHEEL_LISTS
            assert (w["occ"][i >> bits] >> (i & mask)) & 1 == (w["head"][lst] != NIL), lst
    assert len(seen) == w["len"]
    assert set(w["far"]) == {s for s in seen if tk[s] == FAR}
    free: set[int] = set()
    slot = w["free"]
    while slot != NIL:
        assert slot not in free and tk[slot] == FREE and w["items"][slot] is None
        free.add(slot)
        slot = nxt[slot]
    for s in range(w["nslots"]):
        assert w["epoch"] <= w["gen"][s] <= GEN_LIMIT
        assert (s in seen) + (s in free) == (w["gen"][s] < GEN_LIMIT)
    assert all(0 <= o < (1 << size) for o in w["occ"])
