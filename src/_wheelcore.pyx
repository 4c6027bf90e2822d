# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Hierarchical hashed timing wheel: the compiled twin of ``dq_core._wheelcore_py``.

Timers live in a slab of typed arrays (tick, list links, generation) with
the payloads in a list; each wheel slot is an intrusive doubly linked list
through the slab, and each level keeps a bitmap of its occupied slots.  See
the pure twin for the scheme.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from _shortcuts cimport dq_shortcut_switches
from cpython.list cimport PyList_GET_ITEM
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.math cimport INFINITY, floor, nextafter

from _handles cimport (
    MIN_SLOTS, NIL, Handles, handle_constants, handles_find, handles_free, handles_free_slots,
    handles_tags, handles_grow, handles_handle, handles_links, handles_load, handles_new,
    handles_put, handles_release, handles_spent, handles_take, handles_top, next_cap,
)
from _number cimport _real
from _pickling cimport copied, deep_copied, reduced

import time
import types

from dq_core._convert import to_count, to_real
from dq_core._final import refuse_subclassing
from dq_core._handles import load_plan, new_cid, top_cid
from dq_core._wheelstate import check_raw, check_state  # one validator for both twins

__all__ = ["TimingWheel"]

_switches = dq_shortcut_switches()
#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({
    "list_append": _switches["list_append"],
    "long_digits": _switches["long_digits"],
    "monotonic_clock_gettime": _switches["monotonic_clock_gettime"],
})
del _switches

ctypedef unsigned long long u64
ctypedef long long i64

#: The slot table's constants, as this module was compiled with them.
HANDLE_CONSTANTS = handle_constants()

# Shared with the pure twin; see dq_core._wheelstate.
cdef Py_ssize_t MAX_WHEEL_SIZE = 2 ** 16
cdef i64 TICK_LIMIT = 2 ** 62
cdef double TICK_LIMIT_D = <double>(2 ** 62)
cdef double ORIGIN_LIMIT_D = <double>(2 ** 61)
cdef i64 DUE = -1, FAR = -2, FREE = -3
cdef Py_ssize_t DUE_LIST = 0, FAR_LIST = 1, WHEEL_LISTS = 2
# The version of the state both implementations pickle to.
STATE_VERSION = 2
REENTERED = "the wheel was re-entered while it was changing (from a __del__ or GC finaliser)"
_FULL = "a TimingWheel holds at most 2**31 - 1 timers"

# the occupancy bitmaps' words
cdef enum:
    WORD_BITS = 64
    WORD_SHIFT = 6              # log2(WORD_BITS)
    WORD_MASK = WORD_BITS - 1
    DEBRUIJN_SHIFT = WORD_BITS - WORD_SHIFT

ctypedef struct Node:
    i64 tick        # relative tick, or DUE / FAR / FREE
    int next        # list links
    int prev

# de Bruijn sequence for the index of the lowest set bit of a 64-bit word
cdef u64 DEBRUIJN = 0x03F79D71B4CB0A89ULL
cdef int DEBRUIJN_INDEX[WORD_BITS]
cdef int _i
for _i in range(WORD_BITS):
    DEBRUIJN_INDEX[((<u64>1 << _i) * DEBRUIJN) >> DEBRUIJN_SHIFT] = _i


cdef inline int _lowest_bit(u64 x) noexcept nogil:
    return DEBRUIJN_INDEX[((x & (~x + 1)) * DEBRUIJN) >> DEBRUIJN_SHIFT]


def _next_slot_cap(cap):
    """The slot table's growth step and limit, for the tests."""
    return next_cap(cap, _FULL)


from _clock cimport dq_monotonic


cdef object MONOTONIC = time.monotonic


cdef inline i64 _tick_of(double d, double tick) noexcept nogil:
    # the absolute tick at which deadline d is due, or TICK_LIMIT if beyond
    cdef double q = nextafter(d, -INFINITY) / tick
    if q >= TICK_LIMIT_D:
        return TICK_LIMIT
    return <i64>floor(q) + 1


cdef inline i64 _ticks_at(double t, double tick) noexcept nogil:
    # the absolute tick reached at time t, clamped to +-TICK_LIMIT
    cdef double q = t / tick
    if q >= TICK_LIMIT_D:
        return TICK_LIMIT
    if q <= -TICK_LIMIT_D:
        return -TICK_LIMIT
    return <i64>floor(q)


class _Signature:
    """The class's signature for inspect, made on first use."""

    def __get__(self, obj, cls):
        from inspect import Parameter, Signature

        kind = Parameter.POSITIONAL_OR_KEYWORD
        return Signature([Parameter("tick", kind, default=0.001),
                          Parameter("wheel_size", kind, default=256),
                          Parameter("clock", kind, default=time.monotonic)])


# Not final, so that __init_subclass__ (not CPython) refuses subclasses,
# with the pure twin's message; its cdef methods are final instead.
cdef class TimingWheel:
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

    cdef double _tick, _time
    cdef Py_ssize_t _size, _bits, _words, _levels
    cdef u64 _mask
    cdef object _clock
    cdef i64 _origin, _cur
    # the slab, by slot: one node per timer, so a timer's fields share a cache line
    # and the handle table; _nodes as long as the table's room, _items as
    # long as the slots made
    cdef Node* _nodes
    cdef list _items
    cdef Handles _t
    cdef Py_ssize_t _len
    # list heads and tails, by list id; occupancy bitmaps, _words per level
    cdef int* _head
    cdef int* _tail
    cdef u64* _occ
    cdef dict _far
    cdef bint _ready, _busy
    cdef unsigned long long _visited, _cascaded
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)
    # A text signature cannot hold clock=time.monotonic (only literals).
    __signature__ = _Signature()

    def __cinit__(self):
        # a usable (empty, 1 s ticks) wheel even if __init__ never runs
        self._head = <int*>PyMem_Malloc(WHEEL_LISTS * sizeof(int))
        self._tail = <int*>PyMem_Malloc(WHEEL_LISTS * sizeof(int))
        if self._head is NULL or self._tail is NULL:
            raise MemoryError()
        self._head[DUE_LIST] = self._head[FAR_LIST] = NIL
        self._tail[DUE_LIST] = self._tail[FAR_LIST] = NIL
        self._tick = 1.0
        self._size = 2
        self._bits = 1
        self._mask = 1
        self._words = 1
        self._clock = MONOTONIC
        self._far = {}
        self._t.cid = new_cid()
        self._reset_slots(0)

    __init_subclass__ = refuse_subclassing("TimingWheel")

    def __init__(self, tick=0.001, wheel_size=256, clock=time.monotonic):
        cdef bint ready
        with cython.critical_section(self):
            ready = self._ready
        if ready:
            raise RuntimeError("TimingWheel.__init__ may run only once")
        cdef double tk = to_real(tick, "tick")
        if not (0 < tk < INFINITY):
            raise ValueError(f"tick must be a positive finite number, got {tk!r}")
        size = to_count(wheel_size, "wheel_size")
        if not 2 <= size <= MAX_WHEEL_SIZE or size & (size - 1):
            raise ValueError(
                f"wheel_size must be a power of two from 2 to {MAX_WHEEL_SIZE}, got {size!r}"
            )
        if not callable(clock):
            raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")
        cdef double now = to_real(clock(), "clock()")
        cdef double q = now / tk
        if not (-ORIGIN_LIMIT_D < q < ORIGIN_LIMIT_D):
            raise ValueError(
                f"clock() / tick must lie within +-2**61 ticks, got {now!r} / {tk!r}"
            )
        # again: the clock (user code) may have run __init__ meanwhile, and
        # timers linked for another wheel_size must never meet this one
        with cython.critical_section(self):
            if self._ready:
                raise RuntimeError("TimingWheel.__init__ may run only once")
            self._setup(tk, size, clock, <i64>floor(q), now)

    @cython.final
    cdef int _setup(self, double tk, Py_ssize_t size, object clock, i64 origin,
                    double now) except -1:
        self._tick = tk
        self._size = size
        self._bits = (<object>size).bit_length() - 1
        self._mask = size - 1
        self._words = (size + WORD_MASK) // WORD_BITS
        self._clock = clock
        self._origin = origin
        self._cur = 0
        self._time = now
        self._ready = True
        return 0

    # -- slab ---------------------------------------------------------------

    @cython.final
    cdef int _alloc_slots(self, Py_ssize_t cap) except -1:
        cdef Node* nodes = <Node*>PyMem_Realloc(self._nodes, cap * sizeof(Node))
        if nodes is NULL:
            raise MemoryError()
        self._nodes = nodes
        handles_grow(&self._t, cap)
        return 0

    def __dealloc__(self):
        PyMem_Free(self._nodes)
        handles_free(&self._t)
        PyMem_Free(self._head)
        PyMem_Free(self._tail)
        PyMem_Free(self._occ)

    @cython.final
    cdef int _reset_slots(self, unsigned int epoch) except -1:
        # everything that can fail (or run the GC) first, then the swap
        cdef Handles t
        cdef list items = []
        cdef Node* nodes = <Node*>PyMem_Malloc(MIN_SLOTS * sizeof(Node))
        if nodes is NULL:
            raise MemoryError()
        try:
            handles_new(&t, MIN_SLOTS, epoch, self._t.cid)
        except MemoryError:
            PyMem_Free(nodes)
            raise
        PyMem_Free(self._nodes)
        handles_free(&self._t)
        self._nodes = nodes
        self._t = t
        self._items = items
        return 0

    @cython.final
    cdef int _load_slots(self, list tags, list free, unsigned int epoch) except -1:
        # the table of a state (checked): every slot free, retired or held
        cdef Handles t
        cdef Py_ssize_t i
        cdef Node* nodes
        # a new container: issues its own handles, above every id it copied
        handles_load(&t, tags, free, epoch, new_cid(top_cid(tags)), load_plan(tags))
        try:
            items = [None] * t.n
            nodes = <Node*>PyMem_Realloc(self._nodes, t.cap * sizeof(Node))
            if nodes is NULL:
                raise MemoryError()
        except BaseException:
            handles_free(&t)
            raise
        self._nodes = nodes
        handles_free(&self._t)
        self._t = t
        self._items = items
        for i in range(t.n):
            nodes[i].tick = FREE
            nodes[i].next = nodes[i].prev = NIL
        return 0

    @cython.final
    cdef inline int _take_slot(self, object item) except -1:
        cdef int slot = handles_take(&self._t)
        if slot == NIL:
            slot = self._grow_take()
        handles_put(&self._t, self._items, slot, item)
        return slot

    @cython.final
    cdef int _grow_take(self) except -1:
        # off the hot path, so that _take_slot stays small enough to inline
        self._alloc_slots(next_cap(self._t.cap, _FULL))
        return handles_take(&self._t)

    @cython.final
    cdef inline void _free_slot(self, int slot) noexcept:
        self._nodes[slot].tick = FREE
        handles_release(&self._t, slot)

    @cython.final
    cdef int _on_empty(self) except -1:
        cdef long long epoch = handles_spent(&self._t)
        if epoch != NIL:
            try:
                self._reset_slots(<unsigned int>epoch)
            except MemoryError:
                pass  # the reset only saves memory; the slab stays valid
        return 0

    @cython.final
    cdef inline int _slot_of(self, object handle) except -2:
        # the slot behind handle, or NIL if it is stale or unknown
        return handles_find(&self._t, handle)

    # -- slot lists ---------------------------------------------------------

    @cython.final
    cdef inline Py_ssize_t _list_of(self, i64 t) noexcept:
        # the list of a timer at relative tick t (or a DUE/FAR marker)
        cdef Py_ssize_t bits = self._bits, level = 0
        cdef u64 x
        if t < 0:
            return DUE_LIST if t == DUE else FAR_LIST
        x = (<u64>t ^ <u64>self._cur) >> bits
        while x:
            level += 1
            x >>= bits
        return WHEEL_LISTS + (level << bits) + <Py_ssize_t>((<u64>t >> (level * bits)) & self._mask)

    @cython.final
    cdef int _add_level(self) except -1:
        cdef Py_ssize_t n = WHEEL_LISTS + self._levels * self._size, i
        cdef Py_ssize_t m = n + self._size, w = self._levels * self._words
        cdef int* h = <int*>PyMem_Realloc(self._head, m * sizeof(int))
        if h is NULL:
            raise MemoryError()
        self._head = h
        h = <int*>PyMem_Realloc(self._tail, m * sizeof(int))
        if h is NULL:
            raise MemoryError()
        self._tail = h
        cdef u64* o = <u64*>PyMem_Realloc(self._occ, (w + self._words) * sizeof(u64))
        if o is NULL:
            raise MemoryError()
        self._occ = o
        for i in range(n, m):
            self._head[i] = self._tail[i] = NIL
        for i in range(w, w + self._words):
            o[i] = 0
        self._levels += 1
        return 0

    @cython.final
    cdef inline int _link(self, int slot, i64 t) except -1:
        cdef Py_ssize_t lst = self._list_of(t), i
        cdef int last
        if lst >= WHEEL_LISTS:
            i = lst - WHEEL_LISTS
            while (i >> self._bits) >= self._levels:  # an upper level, made on demand
                self._add_level()
            self._occ[(i >> self._bits) * self._words + ((i & self._mask) >> WORD_SHIFT)] |= (
                <u64>1 << (i & self._mask & WORD_MASK))
        self._nodes[slot].tick = t
        last = self._tail[lst]
        self._nodes[slot].prev = last
        self._nodes[slot].next = NIL
        if last == NIL:
            self._head[lst] = slot
        else:
            self._nodes[last].next = slot
        self._tail[lst] = slot
        return 0

    @cython.final
    cdef inline void _clear_bit(self, Py_ssize_t lst) noexcept:
        cdef Py_ssize_t i = lst - WHEEL_LISTS
        self._occ[(i >> self._bits) * self._words + ((i & self._mask) >> WORD_SHIFT)] &= ~(
            <u64>1 << (i & self._mask & WORD_MASK))

    @cython.final
    cdef inline void _unlink(self, int slot) noexcept:
        cdef Py_ssize_t lst = self._list_of(self._nodes[slot].tick)
        cdef int p = self._nodes[slot].prev, n = self._nodes[slot].next
        if p == NIL:
            self._head[lst] = n
        else:
            self._nodes[p].next = n
        if n == NIL:
            self._tail[lst] = p
        else:
            self._nodes[n].prev = p
        if lst >= WHEEL_LISTS and self._head[lst] == NIL:
            self._clear_bit(lst)

    @cython.final
    cdef inline int _detach(self, Py_ssize_t lst) noexcept:
        # empty list lst (its nodes keep their links) and return its head
        cdef int first = self._head[lst]
        self._head[lst] = NIL
        self._tail[lst] = NIL
        if lst >= WHEEL_LISTS:
            self._clear_bit(lst)
        return first

    @cython.final
    cdef i64 _next_event(self, Py_ssize_t* level_out) noexcept:
        # tick of the next occupied slot after the current tick, or -1
        cdef Py_ssize_t bits = self._bits, words = self._words, level, shift, pos, w
        cdef i64 cur = self._cur
        cdef u64 x, high
        cdef u64* occ
        for level in range(self._levels):
            shift = level * bits
            pos = <Py_ssize_t>((<u64>cur >> shift) & self._mask) + 1
            if pos >= self._size:
                continue
            occ = self._occ + level * words
            w = pos >> WORD_SHIFT
            x = occ[w] & (~<u64>0 << (pos & WORD_MASK))
            while True:
                if x:
                    pos = (w << WORD_SHIFT) + _lowest_bit(x)
                    level_out[0] = level
                    # the digits above this level stay as in cur; at the top
                    # level there are none (a shift by WORD_BITS is undefined in C)
                    high = 0 if shift + bits >= WORD_BITS else (<u64>cur >> (shift + bits)) << (shift + bits)
                    return <i64>(high | (<u64>pos << shift))
                w += 1
                if w >= words:
                    break
                x = occ[w]
        return -1

    # -- public API ---------------------------------------------------------

    @cython.final
    cdef inline int _enter(self) except -1:
        # Between _enter and the reset of _busy the lists are being changed:
        # a call from a GC finaliser that runs meanwhile is refused.
        if self._busy:
            raise RuntimeError(REENTERED)
        self._busy = True
        return 0

    @cython.final
    cdef double _now(self) except? -1.0:
        cdef double t
        if self._clock is MONOTONIC:
            dq_monotonic(&t)
            return t
        t = _real(self._clock(), "clock()")
        if not -INFINITY < t < INFINITY:
            raise ValueError(f"clock() must return a finite number, got {t!r}")
        return t

    @cython.critical_section
    def schedule(self, item, delay):
        """Add ``item``, due ``delay`` seconds from ``clock()``; return its handle.  O(1).

        A ``delay`` <= 0 makes the item due at the wheel's current tick, as
        for a past deadline in ``schedule_at``.
        """
        cdef double dl = _real(delay, "delay")
        cdef double now = self._now()
        return self._insert(item, now + dl, dl <= 0)

    @cython.critical_section
    def schedule_at(self, item, deadline):
        """Add ``item``, due at ``deadline`` on the clock; return its handle.  O(1).

        A deadline the wheel's time (``wheel_time``) has already reached
        makes the item due at the wheel's current tick: the next ``advance``
        returns it, ahead of every item still waiting for a later tick.
        """
        return self._insert(item, _real(deadline, "deadline"), False)

    @cython.final
    cdef object _insert(self, object item, double d, bint due):
        cdef i64 t, a
        cdef int slot
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
                self._items[slot] = None
                raise
            self._len += 1
            return handles_handle(&self._t, slot)
        finally:
            self._busy = False

    @cython.critical_section
    def cancel(self, handle):
        """Remove the item behind ``handle``; False if it already left or never was.  O(1)."""
        cdef int slot
        item = None  # the cancelled item: its __del__ runs after we are done
        self._enter()
        try:
            slot = self._slot_of(handle)
            if slot == NIL:
                return False
            item = <object>PyList_GET_ITEM(self._items, slot)
            self._unlink(slot)
            if self._nodes[slot].tick == FAR:
                del self._far[slot]
            self._free_slot(slot)
            self._items[slot] = None
            self._len -= 1
            if not self._len:
                self._on_empty()
            return True
        finally:
            self._busy = False

    @cython.critical_section
    def advance(self, now=None):
        """Move the wheel's time to ``now`` and return the items that came due.

        ``now`` defaults to ``clock()``; a ``now`` before the wheel's time
        counts as the wheel's time.  Items come out earliest tick first,
        first-in first-out within a tick.  O(k + s) for k items returned and
        s occupied slots passed, whatever the time skipped.
        """
        cdef double t
        if now is None:
            t = self._now()
        else:
            t = _real(now, "now")
            if not -INFINITY < t < INFINITY:
                raise ValueError(f"now must be a finite number, got {t!r}")
        self._enter()
        try:
            return self._advance(t)
        finally:
            self._busy = False

    @cython.final
    cdef list _advance(self, double t):
        cdef i64 target, ev
        cdef Py_ssize_t level = 0, bits = self._bits
        cdef int slot, nxt
        cdef list out = []
        if t < self._time:
            t = self._time
        self._time = t
        target = _ticks_at(t, self._tick) - self._origin
        if not self._len:
            if target > self._cur:
                self._cur = target
            return out
        self._fire(self._detach(DUE_LIST), out)
        while True:
            ev = self._next_event(&level)
            if ev < 0 or ev > target:
                break
            self._cur = ev
            self._visited += 1
            if level:
                # cascade: the slot's timers move down, relative to the new tick
                slot = self._detach(WHEEL_LISTS + (level << bits)
                                    + <Py_ssize_t>((<u64>ev >> (level * bits)) & self._mask))
                while slot != NIL:
                    nxt = self._nodes[slot].next
                    self._link(slot, self._nodes[slot].tick)
                    self._cascaded += 1
                    slot = nxt
            slot = <int>(WHEEL_LISTS + <Py_ssize_t>(<u64>ev & self._mask))
            if self._head[slot] != NIL:
                self._fire(self._detach(slot), out)
        if target > self._cur:
            self._cur = target
        if self._far and t / self._tick >= TICK_LIMIT_D:
            self._fire_far(t, out)
        if not self._len:
            self._on_empty()
        return out

    @cython.final
    cdef int _fire(self, int slot, list out) except -1:
        cdef Py_ssize_t n = 0
        cdef int nxt
        cdef list items = self._items
        while slot != NIL:
            nxt = self._nodes[slot].next
            out.append(<object>PyList_GET_ITEM(items, slot))
            items[slot] = None
            self._free_slot(slot)
            slot = nxt
            n += 1
        self._len -= n
        return 0

    @cython.final
    cdef int _fire_far(self, double t, list out) except -1:
        far = self._far
        due = []
        cdef int slot = self._head[FAR_LIST]
        while slot != NIL:
            if far[slot] <= t:
                due.append(slot)
            slot = self._nodes[slot].next
        due.sort(key=far.__getitem__)  # stable: FIFO among equal deadlines
        for slot in due:
            self._unlink(slot)
            del far[slot]
            out.append(self._items[slot])
            self._items[slot] = None
            self._free_slot(slot)
        self._len -= len(due)
        return 0

    @cython.critical_section
    def drain(self):
        """Remove and return every item, earliest tick first.  O(n log n).

        Every handle issued so far goes stale.
        """
        self._enter()
        try:
            return self._drain()
        finally:
            self._busy = False

    @cython.final
    cdef list _drain(self):
        cdef list out = []
        cdef Py_ssize_t level, s, d, bits = self._bits, lst
        cdef int slot
        self._fire(self._detach(DUE_LIST), out)
        tk = [self._nodes[i].tick for i in range(self._t.n)]
        for level in range(self._levels):
            # an upper slot holds several ticks: sort them, keeping FIFO
            d = <Py_ssize_t>((<u64>self._cur >> (level * bits)) & self._mask)
            for s in range(d + 1, self._size):
                if not (self._occ[level * self._words + (s >> WORD_SHIFT)] >> (s & WORD_MASK)) & 1:
                    continue
                lst = WHEEL_LISTS + (level << bits) + s
                slot = self._detach(lst)
                group = []
                while slot != NIL:
                    group.append(slot)
                    slot = self._nodes[slot].next
                group.sort(key=tk.__getitem__)
                for slot in group:
                    out.append(self._items[slot])
                    self._items[slot] = None
                    self._free_slot(slot)
                self._len -= len(group)
        if self._far:
            self._fire_far(INFINITY, out)
        self._on_empty()
        return out

    @cython.critical_section
    def next_deadline(self):
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

    @cython.final
    cdef object _next_deadline(self):
        cdef Py_ssize_t level = 0
        cdef i64 ev, a
        cdef double v
        if not self._len:
            return None
        if self._head[DUE_LIST] != NIL:
            return self._time
        ev = self._next_event(&level)
        if ev < 0:
            return min(self._far.values())
        a = ev + self._origin
        if a > TICK_LIMIT:  # cannot happen; but the search below must end
            a = TICK_LIMIT
        v = <double>a * self._tick
        # the first double that reaches tick a
        while _ticks_at(v, self._tick) < a:
            v = nextafter(v, INFINITY)
        while _ticks_at(nextafter(v, -INFINITY), self._tick) >= a:
            v = nextafter(v, -INFINITY)
        return v

    @property
    def tick(self):
        """Seconds per tick."""
        with cython.critical_section(self):
            return self._tick

    @property
    def wheel_size(self):
        """Slots per level."""
        with cython.critical_section(self):
            return self._size

    @property
    def wheel_time(self):
        """The wheel's time: the latest ``now`` it was advanced to (or its clock at creation)."""
        with cython.critical_section(self):
            return self._time

    @cython.critical_section
    def __len__(self):
        return self._len

    @cython.critical_section
    def __contains__(self, handle):
        return isinstance(handle, int) and self._slot_of(handle) != NIL

    @cython.critical_section
    def stats(self):
        """Counters: length, levels, slots (allocated in the slab), visited, cascaded.

        ``visited`` counts the occupied slots ``advance`` has reached, and
        ``cascaded`` the timers it moved down a level.
        """
        return {
            "length": self._len, "levels": self._levels, "slots": self._t.n,
            "visited": self._visited, "cascaded": self._cascaded,
        }

    def __repr__(self):
        nxt = None
        with cython.critical_section(self):
            if not self._busy:  # repr works in a finaliser too
                self._busy = True
                try:
                    nxt = self._next_deadline()
                finally:
                    self._busy = False
            n, tick = self._len, self._tick
        tail = "" if nxt is None else f" next_deadline={nxt!r}"
        return f"<{type(self).__name__} len={n} tick={tick!r}{tail}>"

    # -- copying, pickling, invariants --------------------------------------

    @cython.critical_section
    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        cdef Py_ssize_t lst, s
        cdef int slot
        cdef i64 t
        self._enter()
        try:
            free = handles_free_slots(&self._t)
            live = []  # list by list, in list order: FIFO order survives
            for lst in range(WHEEL_LISTS + self._levels * self._size):
                slot = self._head[lst]
                while slot != NIL:
                    t = self._nodes[slot].tick
                    live.append((slot, t, self._far[slot] if t == FAR else None,
                                 self._items[slot]))
                    slot = self._nodes[slot].next
            return (
                STATE_VERSION, self._tick, self._size, self._clock, self._origin, self._cur,
                self._time, self._t.epoch, handles_tags(&self._t), free, live, self._visited,
                self._cascaded,
            )
        finally:
            self._busy = False

    @cython.critical_section
    def __setstate__(self, state):
        (_, tick, size, clock, origin, cur, now, epoch, tags, free, live, visited,
         cascaded) = check_state(state)
        # built aside, then moved in: a failure leaves this wheel as it was
        cdef TimingWheel new = TimingWheel.__new__(TimingWheel)
        new._setup(tick, size, clock, origin, now)
        new._load_slots(tags, free, epoch)
        new._cur = cur
        for slot, t, d, item in live:
            new._items[slot] = item
            if t == FAR:
                new._far[slot] = d
            new._link(slot, t)
        new._len = len(live)
        new._visited = visited
        new._cascaded = cascaded
        if self._busy:  # checked last: nothing above may run between it and the swap
            raise RuntimeError(REENTERED)
        self._swap(new)  # new now holds the old wheel, freed on return

    @cython.final
    cdef void _swap(self, TimingWheel o) noexcept:
        self._tick, o._tick = o._tick, self._tick
        self._time, o._time = o._time, self._time
        self._size, o._size = o._size, self._size
        self._bits, o._bits = o._bits, self._bits
        self._words, o._words = o._words, self._words
        self._levels, o._levels = o._levels, self._levels
        self._mask, o._mask = o._mask, self._mask
        self._clock, o._clock = o._clock, self._clock
        self._origin, o._origin = o._origin, self._origin
        self._cur, o._cur = o._cur, self._cur
        self._nodes, o._nodes = o._nodes, self._nodes
        self._items, o._items = o._items, self._items
        cdef Handles t = self._t
        self._t = o._t
        o._t = t
        self._len, o._len = o._len, self._len
        self._head, o._head = o._head, self._head
        self._tail, o._tail = o._tail, self._tail
        self._occ, o._occ = o._occ, self._occ
        self._far, o._far = o._far, self._far
        self._ready, o._ready = o._ready, self._ready
        self._visited, o._visited = o._visited, self._visited
        self._cascaded, o._cascaded = o._cascaded, self._cascaded

    def __reduce__(self):
        return reduced(self, "TimingWheel")

    def __copy__(self):
        return copied(self, TimingWheel.__new__(TimingWheel))

    def __deepcopy__(self, memo):
        return deep_copied(self, TimingWheel.__new__(TimingWheel), memo)

    @cython.critical_section
    def _raw(self):
        # a snapshot taken across allocations: a finaliser must not change it
        self._enter()
        try:
            return self._raw_now()
        finally:
            self._busy = False

    @cython.final
    cdef dict _raw_now(self):
        cdef Py_ssize_t n = self._t.n, lvl, w
        occ = []
        for lvl in range(self._levels):
            bitmap = 0
            for w in range(self._words):
                bitmap |= <object>self._occ[lvl * self._words + w] << (WORD_BITS * w)
            occ.append(bitmap)
        nl = WHEEL_LISTS + self._levels * self._size
        return {
            "tk": [self._nodes[i].tick for i in range(n)], "next": [self._nodes[i].next for i in range(n)],
            "prev": [self._nodes[i].prev for i in range(n)], "tag": handles_tags(&self._t), "cid": self._t.cid,
            "links": handles_links(&self._t), "items": list(self._items), "free": handles_top(&self._t),
            "epoch": self._t.epoch, "head": [self._head[i] for i in range(nl)],
            "tail": [self._tail[i] for i in range(nl)], "occ": occ, "far": dict(self._far),
            "cur": self._cur, "bits": self._bits, "len": self._len,
        }

    def _check(self):
        """Assert the wheel's bookkeeping: slot membership, links, bitmaps, counts."""
        with cython.critical_section(self):
            self._enter()
            try:
                raw = self._raw_now()
                assert len(self._items) == self._t.n <= self._t.cap
            finally:
                self._busy = False
        check_raw(raw)
