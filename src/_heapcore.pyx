# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Keyed min-heap: the compiled twin of ``dq_core._heapcore_py``.

Entries live in two typed arrays, their keys and ``seq << 31 | slot`` (the
insertion sequence number, then the slot), as a 4-ary heap: a node's
children keys share a cache line and the heap is half as high as a binary
one.  A slot table (generation, container id, payload, and the slot's live
entry: its key and sequence number) gives every item a stable home, so a
handle (``cid << 44 | gen << 24 | slot`` while they fit) finds its item in O(1); a stale
handle is refused because the generation moved on, and another container's
because its id ``cid`` is not this heap's (``dq_core._handles``).

No position map: nothing is written outside the heap arrays while entries
move.  An entry is live while its sequence number is its slot's; ``remove``
kills the entry where it stands (O(1)) and ``update`` adds a new entry and
kills the old, as the pure twin does.  Dead entries leave from the top, and
all at once when they outnumber the live ones, or when they make a third of
a full buffer, which is then not grown (``_make_room``); the top entry is
always live.

A sorted run: while every push comes in pop order (a deadline no earlier
than the last one pushed: the usual constant delay or timeout), the entries
stay sorted at ``[_off, _off + _m)`` of the arrays, which is a heap already:
a push appends and a pop advances ``_off``, both O(1) and touching one
cache line, where sifting a large heap walks its height in memory.  The
first push out of order (or an update out of order) moves the entries back
to the start and the heap goes on as a 4-ary heap (``_off`` 0) until it
holds at most one entry.  The pure twin keeps a binary heap throughout: the
pop order, (priority, insertion sequence), is the same.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from cython.view cimport array as cvarray
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.string cimport memcpy, memmove

from _handles cimport (
    MIN_SLOTS, NIL, RESET_MIN_SLOTS, Handles, handle_constants, handles_find, handles_free,
    handles_free_slots, handles_grow, handles_handle, handles_held, handles_links, handles_tags,
    handles_load, handles_new, handles_put, handles_release, handles_spent, handles_take, handles_top,
    next_cap,
)
from _number cimport DQ_DEBUG_BUILD, _real, fast_key
from _pickling cimport copied, deep_copied, reduced
from _shortcuts cimport DQ_METHOD_DEF, DQ_SC_METHOD_DESCR, PyMethodDef, PyTypeObject, dq_shortcut_switches

import types

from dq_core._convert import keys_of, to_count, to_real
from dq_core._final import refuse_subclassing
from dq_core._handles import check_table, load_plan, new_cid, stale_message, top_cid
from dq_core._heapstate import check_state

__all__ = ["Heap", "adopt_methods"]

_switches = dq_shortcut_switches()
#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({
    "method_descr": _switches["method_descr"],
    "list_append": _switches["list_append"],
    "long_digits": _switches["long_digits"],
})
del _switches

#: True in a DQ_CORE_DEBUG=1 build (bounds and wraparound checks on).
DEBUG_BUILD = bool(DQ_DEBUG_BUILD)

#: The slot table's constants, as this module was compiled with them.
HANDLE_CONSTANTS = handle_constants()

# Shared with the pure twin; see dq_core._heapstate.
cdef int STATE_VERSION = 2
cdef Py_ssize_t MIN_CAP = 8

cdef enum:
    # Children a node has.  4: a node's children keys share a cache line
    # and the heap is half as high as a binary one (2 and 8 measured slower).
    ARITY = 4
    # An entry's second word is seq << SLOT_SHIFT | slot (slots < 2**31).
    SLOT_SHIFT = 31
    # Entries (16 bytes each) from which _sift_down prefetches the next
    # level, and slots from which a pop prefetches the next one's: 2**17
    # entries (2 MiB) no longer stay in a core's own cache (2**14 made
    # update + remove of 10,000 items, 20,000 entries with the dead ones,
    # pay for prefetches of what was cached; 2**16 made push then pop of
    # 1e5 items 14% slower on a quiet machine, 117.5 -> 134.0 ns)
    PREFETCH_MIN = 1 << 17
    # Entries a buffer holds beyond its capacity, for the root to move to
    # (_root_in: at most ARITY - 1 of them)
    ALIGN_SLACK = ARITY

cdef u64 SLOT_FIELD = (1ULL << SLOT_SHIFT) - 1
#: Sequence numbers stay below this (shared with the pure twin, _heapstate).
cdef u64 SEQ_SPAN = 1ULL << 33
#: The seq of a slot that holds no item: no entry has it.
cdef u64 DEAD_SEQ = 0xFFFFFFFFFFFFFFFFULL
_REENTERED = "the heap was re-entered (from a finaliser) while it was being changed"
_FULL = "a Heap holds at most 2**31 - 1 items"


cdef extern from "Python.h":
    object PyDescr_NewMethod(PyTypeObject* cls, PyMethodDef* meth)

cdef extern from *:
    """
    /* A hint that the line at p will soon be written (a no-op where the
       compiler has no prefetch builtin). */
    #if defined(__GNUC__) || defined(__clang__)
    #define DQ_PREFETCH_W(p) __builtin_prefetch((const void *)(p), 1, 3)
    #else
    #define DQ_PREFETCH_W(p) ((void)(p))
    #endif
    /* the address of list l's i-th element (i < len(l)), for DQ_PREFETCH_W */
    #define DQ_LIST_SLOT(l, i) (((PyListObject *)(l))->ob_item + (i))
    """
    void _prefetch_w "DQ_PREFETCH_W"(const void* p) noexcept nogil
    const void* _list_slot "DQ_LIST_SLOT"(list l, Py_ssize_t i) noexcept

cdef type _method_descriptor = type(list.append)


def adopt_methods(cls):
    """Give ``cls`` a method of its own for each one it inherits from a compiled core; return it.

    CPython's specialised call of a C method (``q.put_nowait(x)``) wants the
    instance's type to be exactly the method's class, so a public class that
    extends a compiled core would take the generic, slower call for every
    inherited method.  Its own copy (the same C function, now of ``cls``)
    takes the specialised one.  Methods ``cls`` defines itself, dunders and
    what is not a core's are left alone; the pure twins' methods are Python
    functions, which need nothing.
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, not {type(cls).__name__!r}")
    if not DQ_SC_METHOD_DESCR:  # no copies: cls takes the generic call
        return cls
    for base in cls.__mro__[1:]:
        if not base.__module__.startswith("dq_core."):
            continue
        for name, d in list(vars(base).items()):
            if name.startswith("__") or type(d) is not _method_descriptor:
                continue
            owner = next(k for k in cls.__mro__ if name in vars(k))
            if owner is base:  # inherited from here, not overridden below
                type.__setattr__(cls, name, PyDescr_NewMethod(<PyTypeObject*>cls, DQ_METHOD_DEF(d)))
    return cls


def _next_slot_cap(cap):
    """The slot table's growth step and limit, for the tests."""
    return next_cap(cap, _FULL)

cdef inline bint _before(double ka, u64 sa, double kb, u64 sb) noexcept nogil:
    return ka < kb or (ka == kb and sa < sb)


cdef inline Py_ssize_t _root_in(Entry* e) noexcept:
    # The index of a 4-ary heap's root in a buffer at e, so that every
    # node's children (root + 4i + 1 to + 4i + 4) share one cache line.
    cdef size_t block = ARITY * sizeof(Entry)
    cdef size_t first = <size_t>&e[1]
    return <Py_ssize_t>(((block - first % block) % block) // sizeof(Entry))


cdef cvarray _new_array(Py_ssize_t n, Py_ssize_t itemsize, str fmt):
    return cvarray(shape=(n,), itemsize=itemsize, format=fmt, mode="c")


cdef Py_ssize_t _cap_for(Py_ssize_t n) noexcept:
    cdef Py_ssize_t cap = MIN_CAP
    while cap < n:
        cap *= 2
    return cap


# Not final, so that __init_subclass__ (not CPython) refuses subclasses,
# with the pure twin's message; its cdef methods are final instead.
cdef class Heap:
    """Heap()
--

Min-heap of items keyed by real-number priorities.

    Lowest priority first, first-in first-out among equal priorities; items
    are never compared.  ``push`` returns a handle (an int) that ``update``,
    ``remove`` and ``priority`` accept until the item leaves the heap.

    Not thread-safe.  Priorities' ``__float__``/``__index__`` and payloads'
    ``__del__`` may use the heap; code that re-enters it while it is being
    changed (a garbage-collector finaliser) gets ``RuntimeError``.  Heap
    cannot be subclassed.

    >>> h = Heap()
    >>> job = h.push(2, "write")
    >>> _ = h.push(1, "read")
    >>> h.update(job, 0)
    >>> h.pop(), h.pop()
    ('write', 'read')
    """

    # the fields are declared in dq_core/_heapcore.pxd

    __class_getitem__ = classmethod(types.GenericAlias)

    def __cinit__(self):
        self._seq = 0
        self._busy = False
        self._off = 0
        self._m = 0
        self._sorted = True
        self._alloc_heap(MIN_CAP)
        self._t.cid = new_cid()
        self._reset_slots(0)

    def __dealloc__(self):
        handles_free(&self._t)
        PyMem_Free(self._slive)

    @cython.embedsignature(False)
    def __init__(self, *args, **kwargs):
        """__init__($self, /)
--

Initialize self.  See help(type(self)) for accurate signature."""
        # __cinit__ did it all; a second call changes nothing.  Extra
        # arguments get CPython's words for the pure twin's __init__(self).
        if kwargs:
            raise TypeError(
                f"Heap.__init__() got an unexpected keyword argument {next(iter(kwargs))!r}"
            )
        if args:
            raise TypeError(
                f"Heap.__init__() takes 1 positional argument but {len(args) + 1} were given"
            )

    __init_subclass__ = refuse_subclassing("Heap")

    # -- re-entry guard -----------------------------------------------------

    # Any allocation (a new array, a list growing) can run a finaliser, and
    # so any code, in the middle of an operation: it must not see or change
    # a half-updated heap, nor leave this one with stale sizes or pointers.
    @cython.final
    cdef inline int _enter(self) except -1:
        if self._busy:
            raise RuntimeError(_REENTERED)
        self._busy = True
        return 0

    @cython.final
    cdef inline int _idle(self) except -1:
        if self._busy:
            raise RuntimeError(_REENTERED)
        return 0

    # -- storage ------------------------------------------------------------

    @cython.final
    cdef int _alloc_heap(self, Py_ssize_t cap) except -1:
        # a new buffer of cap (>= _m) entries, the entries moved to the root
        # (see _root_in); _hkey views its keys for the delay queues' cores
        cdef Py_ssize_t m = self._m, root
        cdef object buf = _new_array(2 * (cap + ALIGN_SLACK), sizeof(u64), "Q")
        cdef u64[::1] raw = buf
        cdef Entry* e = <Entry*>&raw[0]
        root = _root_in(e)
        if m:
            memcpy(&e[root], &self._e[self._off], m * sizeof(Entry))
        self._hkey = (<double[:2 * (cap + ALIGN_SLACK)]><double*>e)[::2]
        self._buf = buf
        self._e = e
        self._root = root
        self._hcap = cap
        self._off = root
        return 0

    @cython.final
    cdef void _move_down(self) noexcept:
        # the entries of a sorted run moved to the root
        cdef Py_ssize_t off = self._off, m = self._m
        if off == self._root:
            return
        self._off = self._root
        if m:
            memmove(&self._e[self._root], &self._e[off], m * sizeof(Entry))

    @cython.final
    cdef void _unsort(self) noexcept:
        # leave the sorted run: from here on a d-ary heap at [_root, _root + _m)
        # (a sorted array is one already)
        if self._sorted:
            self._move_down()
            self._sorted = False

    @cython.final
    cdef int _alloc_slots(self, Py_ssize_t cap) except -1:
        # everything that can fail (or run the GC) first, then the table
        cdef SlotEntry* e = <SlotEntry*>PyMem_Realloc(self._slive, cap * sizeof(SlotEntry))
        if e is NULL:
            raise MemoryError()
        self._slive = e
        handles_grow(&self._t, cap)
        return 0

    @cython.final
    cdef int _reset_slots(self, unsigned int epoch) except -1:
        cdef Handles t
        cdef list items = []
        cdef SlotEntry* e = <SlotEntry*>PyMem_Malloc(MIN_SLOTS * sizeof(SlotEntry))
        if e is NULL:
            raise MemoryError()
        try:
            handles_new(&t, MIN_SLOTS, epoch, self._t.cid)
        except MemoryError:
            PyMem_Free(e)
            raise
        handles_free(&self._t)
        PyMem_Free(self._slive)
        self._t = t
        self._slive = e
        self._items = items
        return 0

    @cython.final
    cdef inline int _shrink_heap(self) except -1:
        if self._hcap > MIN_CAP and self._m * 4 <= self._hcap:
            self._alloc_heap(self._hcap // 2)
        return 0

    @cython.final
    cdef inline long long _take_slot(self, object item) except -1:
        cdef int slot = handles_take(&self._t)
        if slot == NIL:
            self._alloc_slots(next_cap(self._t.cap, _FULL))
            slot = handles_take(&self._t)
        handles_put(&self._t, self._items, slot, item)
        return slot

    @cython.final
    cdef int _on_empty(self) except -1:
        cdef long long epoch = handles_spent(&self._t)
        self._off = self._root
        self._m = 0
        self._sorted = True
        if epoch != NIL:
            self._reset_slots(<unsigned int>epoch)
        self._shrink_heap()
        return 0

    # -- sifting ------------------------------------------------------------
    #
    # A d-ary heap (ARITY children a node) of (key, seq << SLOT_SHIFT | slot)
    # entries in two arrays; the pop order is (key, seq) whatever the arity,
    # so the pure twin's binary heapq pops in exactly the same order.  No
    # position map: an entry is live while its seq is its slot's (_slive), and
    # update and remove leave the old entry dead in place (see _purge).

    @cython.final
    cdef void _sift_up(self, Py_ssize_t pos, Py_ssize_t start) noexcept:
        # pos and start (no higher than it): from the root
        cdef Entry* E = self._e + self._off
        cdef Entry x = E[pos]
        cdef Py_ssize_t parent
        while pos > start:
            parent = (pos - 1) // ARITY
            if not _before(x.key, x.ss, E[parent].key, E[parent].ss):
                break
            E[pos] = E[parent]
            pos = parent
        E[pos] = x

    @cython.final
    cdef void _sift_down(self, Py_ssize_t pos) noexcept:
        # Floyd's variant (as heapq): walk the hole down to a leaf along the
        # smallest children, then sift the displaced entry back up.  The
        # entry moved in from the end is usually large, so this saves a
        # comparison per level.  pos: from the root.
        cdef Entry* E = self._e + self._off
        cdef Py_ssize_t m = self._m, start = pos, child, c, last, best
        cdef Entry x = E[pos]
        cdef double bk
        cdef u64 bs
        # In a heap too large for the nearer caches, the grandchildren's
        # lines are fetched while the children are compared: one of them is
        # read next, and each is a cache miss (in a small heap, pure cost)
        cdef bint deep = m >= PREFETCH_MIN
        child = ARITY * pos + 1
        while child < m:
            if deep:
                # the children's children: 16 entries in a row, 4 lines
                c = ARITY * child + 1
                if c + 3 * ARITY < m:
                    _prefetch_w(&E[c])
                    _prefetch_w(&E[c + ARITY])
                    _prefetch_w(&E[c + 2 * ARITY])
                    _prefetch_w(&E[c + 3 * ARITY])
                elif c < m:
                    _prefetch_w(&E[c])
            best = child
            bk = E[child].key
            bs = E[child].ss
            last = child + ARITY if child + ARITY <= m else m
            for c in range(child + 1, last):
                if E[c].key < bk or (E[c].key == bk and E[c].ss < bs):
                    best = c
                    bk = E[c].key
                    bs = E[c].ss
            E[pos] = E[best]
            pos = best
            child = ARITY * pos + 1
        E[pos] = x
        self._sift_up(pos, start)  # back up, no higher than where it started

    @cython.final
    cdef void _heapify(self) noexcept:
        cdef Py_ssize_t i
        if self._m > 1:
            for i in reversed(range((self._m - 2) // ARITY + 1)):
                self._sift_down(i)

    @cython.final
    cdef inline bint _live_at(self, Py_ssize_t pos) noexcept:
        # the entry at array index pos is its slot's live entry: the slot is
        # held and its live entry has the entry's seq (a released slot's seq
        # is left as it was: a pop writes nothing more than it must)
        return self._live_entry(self._e[pos])

    @cython.final
    cdef inline Py_ssize_t _live_entry(self, Entry x) noexcept:
        # _live_at's test of an entry, 1 or 0, without a branch
        cdef Py_ssize_t slot = x.ss & SLOT_FIELD
        return handles_held(&self._t, slot) & (self._slive[slot].seq == x.ss >> SLOT_SHIFT)

    @cython.final
    cdef int _renumber(self) except -1:
        # Sequence numbers share 64 bits with the slot: before they run out,
        # the live entries are numbered afresh in pop order (the pure twin
        # does the same at the same count, so their states stay equal).
        cdef list live = self._live_in_order()
        cdef Py_ssize_t i, n = len(live), slot
        cdef u64 s
        self._move_down()
        for i in range(n):
            s = live[i]
            slot = s & SLOT_FIELD
            self._e[self._root + i].key = self._slive[slot].key
            self._e[self._root + i].ss = (<u64>i << SLOT_SHIFT) | <u64>slot
            self._slive[slot].seq = i
        self._m = n
        self._seq = n  # (in pop order now: a sorted run, or a heap all the same)
        return 0

    @cython.final
    cdef list _live_in_order(self):
        # the (seq << SLOT_SHIFT | slot) of the live entries, in pop order
        cdef Py_ssize_t i, off = self._off
        cdef list out = []
        if self._sorted:
            for i in range(off, off + self._m):
                if self._live_at(i):
                    out.append(self._e[i].ss)
            return out
        order = sorted([i for i in range(off, off + self._m) if self._live_at(i)],
                       key=lambda i: (self._e[i].key, self._e[i].ss))
        return [self._e[i].ss for i in order]

    @cython.final
    cdef inline long long _insert(self, double key, object item) except -1:
        # Appends after the last entry; the caller sifts (or keeps the run
        # sorted: it left it first if key comes before the last entry).
        cdef long long slot
        cdef Py_ssize_t pos = self._off + self._m
        if self._seq == SEQ_SPAN:
            self._renumber()
            pos = self._off + self._m
        if pos >= self._hcap:
            self._make_room()
            pos = self._off + self._m
        slot = self._take_slot(item)
        self._e[pos].key = key
        self._e[pos].ss = (self._seq << SLOT_SHIFT) | <u64>slot
        self._slive[slot].key = key
        self._slive[slot].seq = self._seq
        self._seq += 1
        self._m += 1
        self._n += 1
        return slot

    @cython.final
    cdef int _append_entry(self, double key, long long slot) except -1:
        # a new live entry for the held slot (update): the old one is dead
        cdef Py_ssize_t pos = self._off + self._m
        if self._seq == SEQ_SPAN:
            self._renumber()
        if self._sorted and self._m and not key >= self._e[self._off + self._m - 1].key:
            self._unsort()
        pos = self._off + self._m
        if pos >= self._hcap:
            self._make_room()
            pos = self._off + self._m
        self._e[pos].key = key
        self._e[pos].ss = (self._seq << SLOT_SHIFT) | <u64>slot
        self._slive[slot].key = key
        self._slive[slot].seq = self._seq
        self._seq += 1
        self._m += 1
        if not self._sorted:
            self._sift_up(pos - self._off, 0)
        return 0

    @cython.final
    cdef int _make_room(self) except -1:
        # Room for one more entry in a full buffer.  It grows only when
        # neither the popped entries before _off (half of it) nor the dead
        # ones (a third of it: update, remove) can make room.  A purge costs
        # O(m) and frees m/3 entries or more (O(1) amortised), and keeps the
        # updates of a large heap in the buffer its pushes made, where
        # growing it let the dead entries double the memory that update and
        # remove walk, and copied it (issue 48, perf/bench_handles.py).
        if self._off - self._root >= self._m:  # at least half of it popped
            self._move_down()
        elif 3 * (self._m - self._n) >= self._m:
            self._purge()
        else:
            self._alloc_heap(2 * self._hcap)
        return 0

    @cython.final
    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t cap = self._hcap
        while cap < self._m + extra + ARITY:  # room whatever the root
            cap *= 2
        if cap != self._hcap:
            self._alloc_heap(cap)
        elif self._off + self._m + extra > cap:
            self._move_down()
        cap = self._t.cap
        while cap < self._t.n + extra:
            cap = next_cap(cap, _FULL)
        if cap != self._t.cap:
            self._alloc_slots(cap)
        return 0

    @cython.final
    cdef void _drop_top(self) noexcept:
        # takes the entry at the top out of the array (live or dead)
        cdef Py_ssize_t last = self._m - 1
        self._m = last
        if self._sorted:
            self._off += 1
        elif last:
            self._e[self._off] = self._e[self._off + last]
            self._sift_down(0)

    @cython.final
    cdef void _clean_top(self) noexcept:
        # dead entries off the top: the top is live whenever _n > 0 (the
        # delay queues' cores read the head's key at _hkey[_off])
        while self._m > self._n and not self._live_at(self._off):
            self._drop_top()

    @cython.final
    cdef int _purge(self) except -1:
        # every dead entry out at once: once they outnumber the live ones
        # (_after_kill), or make a third of a full buffer (_make_room)
        # Branch-free: which entries are dead follows no pattern a branch
        # predictor could learn (half of them mispredicted), so every entry
        # is copied and j moves past the live ones only.
        cdef Py_ssize_t i, off = self._off, j = self._root
        cdef Entry x
        for i in range(off, off + self._m):
            x = self._e[i]
            self._e[j] = x
            j += self._live_entry(x)
        self._off = self._root
        self._m = j - self._root
        if not self._sorted:
            self._heapify()
        return 0

    @cython.final
    cdef inline int _after_kill(self) except -1:
        # after an entry died in place (remove, update): keep the top live,
        # the dead entries few, and an empty heap's memory small
        if not self._n:
            self._on_empty()
            return 0
        self._clean_top()
        if self._m - self._n > self._n + RESET_MIN_SLOTS:
            self._purge()
            self._shrink_heap()
        return 0

    @cython.final
    cdef object _kill(self, long long slot):
        # Releases a held slot and returns its item; its entry is dead from
        # now on.  No user code runs until the caller drops the item.
        cdef object item = self._items[slot]  # owned: it outlives the next line
        self._items[slot] = None
        handles_release(&self._t, <int>slot)  # its entry is dead from now on (_live_at)
        self._n -= 1
        return item

    @cython.final
    cdef object _pop_top(self):
        # the live entry at the top out, its item returned
        cdef long long slot = self._e[self._off].ss & SLOT_FIELD
        cdef object item = self._kill(slot)
        if not self._n:
            self._on_empty()
            return item
        self._drop_top()
        self._clean_top()
        if self._m <= 1:
            self._sorted = True  # one entry is a sorted run (at _off, _root in a heap)
        self._shrink_heap()
        # The next pop will write the new top's slot and payload: slots are
        # taken in push order and popped in priority order, so in a large
        # heap both are cache misses.  Asking for them now overlaps the
        # misses with the caller's code between two pops (in a small heap,
        # where they stay cached, a cost).
        if self._t.n >= PREFETCH_MIN:
            slot = self._e[self._off].ss & SLOT_FIELD
            _prefetch_w(&self._t.slots[slot])
            _prefetch_w(_list_slot(self._items, slot))
        return item

    @cython.final
    cdef inline long long _slot_of(self, object handle) except -2:
        cdef int slot = handles_find(&self._t, handle)
        if slot == NIL:
            raise KeyError(stale_message(handle, "heap"))
        return slot

    @cython.final
    cdef inline object _handle(self, long long slot):
        return handles_handle(&self._t, <int>slot)

    # -- public API ---------------------------------------------------------
    #
    # User code (a priority's __float__/__index__, an iterable) runs before
    # _enter(); dropped payloads die after the guard is released.

    def push(self, priority, item):
        """Add ``item`` with ``priority`` and return its handle.  O(log n).

        >>> h = Heap()
        >>> job = h.push(1.5, "a")
        >>> h.priority(job)
        1.5
        """
        return self._push_key(_real(priority, "priority"), item)

    @cython.final
    cdef object _push_key(self, double key, object item):
        cdef long long slot
        with cython.critical_section(self):
            self._enter()
            try:
                if self._sorted and self._m and not key >= self._e[self._off + self._m - 1].key:
                    self._unsort()  # `not >=`: a NaN key (never one a caller checked) too
                slot = self._insert(key, item)
                if not self._sorted:
                    self._sift_up(self._m - 1, 0)
                return self._handle(slot)
            finally:
                self._busy = False

    @cython.critical_section
    def push_many(self, priorities, items):
        """Add every item with its priority, in order.  O(n + k) when empty.

        ``priorities`` is a sequence, iterable or 1-D buffer of numbers
        (``array('d')``, a numpy array).  A bad priority or a length mismatch
        raises ``ValueError``/``TypeError`` and pushes nothing.

        >>> h = Heap()
        >>> h.push_many([3, 1, 2], "cab")
        >>> h.pop_many(3)
        ['a', 'b', 'c']
        """
        cdef const double[:] dv
        cdef double[::1] keys
        cdef double* K
        cdef Py_ssize_t i, k
        cdef bint bulk
        cdef list seq
        # snapshots: nothing the caller holds is read once the heap changes
        cdef list values = list(items)
        if isinstance(priorities, (list, tuple)):
            # as in keys_of: a __float__ may change the caller's list
            seq = list(priorities)
            k = len(seq)
            keys = _new_array(max(1, k), sizeof(double), "d")
            K = &keys[0]  # keys is ours: no user code can resize it
            for i in range(k):
                x = seq[i]
                if not fast_key(x, &K[i]):
                    K[i] = to_real(x, f"priorities[{i}]")
        else:
            try:
                dv = priorities
            except (ValueError, TypeError, BufferError):
                kl = keys_of(priorities, "priorities")
                k = len(kl)
                keys = _new_array(max(1, k), sizeof(double), "d")
                for i in range(k):
                    keys[i] = kl[i]
            else:
                # dv holds the buffer until we return: it cannot be resized
                k = dv.shape[0]
                keys = _new_array(max(1, k), sizeof(double), "d")
                for i in range(k):
                    if dv[i] != dv[i]:
                        to_real(dv[i], f"priorities[{i}]")
                    keys[i] = dv[i]
        if k != len(values):
            raise ValueError(
                f"priorities and items differ in length ({k} != {len(values)})"
            )
        self._enter()
        try:
            self._reserve(k)
            if self._sorted and not self._in_order(&keys[0], k):
                self._unsort()
            bulk = k >= self._m and not self._sorted
            try:
                for i in range(k):
                    self._insert(keys[i], values[i])  # MemoryError: no slot for it
                    if not bulk and not self._sorted:
                        self._sift_up(self._m - 1, 0)
            finally:
                # after a MemoryError too: the items inserted so far form a heap
                if bulk:
                    self._heapify()
        finally:
            self._busy = False

    @cython.final
    cdef bint _in_order(self, const double* K, Py_ssize_t k) noexcept:
        # keys K[:k], pushed after the entries of the sorted run, keep it sorted
        cdef Py_ssize_t i
        # `not >=`: a NaN key breaks the run too
        if k and self._m and not K[0] >= self._e[self._off + self._m - 1].key:
            return False
        for i in range(1, k):
            if not K[i] >= K[i - 1]:
                return False
        return True

    def pop(self):
        """Remove and return the item with the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        return self._pop_head()

    @cython.final
    cdef object _pop_head(self):
        with cython.critical_section(self):
            self._enter()
            try:
                if not self._n:
                    raise IndexError("pop from an empty heap")
                return self._pop_top()
            finally:
                self._busy = False

    @cython.critical_section
    def popitem(self):
        """Remove and return ``(priority, item)`` for the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        cdef object key
        self._enter()
        try:
            if not self._n:
                raise IndexError("pop from an empty heap")
            key = self._e[self._off].key
            return key, self._pop_top()
        finally:
            self._busy = False

    @cython.critical_section
    def pop_many(self, n):
        """Remove and return up to ``n`` items, lowest priority first.  O(k log n).

        >>> h = Heap()
        >>> h.push_many([2, 1], ["b", "a"])
        >>> h.pop_many(5)
        ['a', 'b']
        """
        cdef object count = to_count(n, "n")  # any size: only compared below
        cdef Py_ssize_t i, k
        cdef list out = []
        self._enter()
        try:
            k = self._n if count >= self._n else count
            for i in range(k):
                out.append(self._pop_top())
            return out
        finally:
            self._busy = False

    @cython.critical_section
    def peek(self):
        """Return the item with the lowest priority without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        self._idle()
        if not self._n:
            raise IndexError("peek at an empty heap")
        return self._items[self._e[self._off].ss & SLOT_FIELD]

    @cython.critical_section
    def peekitem(self):
        """Return ``(priority, item)`` for the lowest priority.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        self._idle()
        if not self._n:
            raise IndexError("peek at an empty heap")
        # both read before the tuple (an allocation) is made
        return self._e[self._off].key, self._items[self._e[self._off].ss & SLOT_FIELD]

    def update(self, handle, priority):
        """Give the item behind ``handle`` a new priority.  O(log n).

        Acts as remove + push: the item goes behind equal priorities.
        Raises ``KeyError`` if the handle is stale or another container's.
        """
        self._update_key(handle, _real(priority, "priority"))

    @cython.final
    cdef int _update_key(self, object handle, double key) except -1:
        cdef long long slot
        with cython.critical_section(self):
            self._enter()
            try:
                slot = self._slot_of(handle)
                # A new entry with a new sequence number (behind its equals);
                # the old one is dead where it stands.
                self._append_entry(key, slot)
                self._after_kill()
            finally:
                self._busy = False
        return 0

    def remove(self, handle):
        """Remove the item behind ``handle`` and return it.  O(log n).

        Raises ``KeyError`` if the handle is stale or another container's.
        """
        return self._remove_handle(handle)

    @cython.final
    cdef object _remove_handle(self, object handle):
        cdef object item
        with cython.critical_section(self):
            self._enter()
            try:
                # its entry is dead where it stands (O(1)); the top stays live
                item = self._kill(self._slot_of(handle))
                self._after_kill()
                return item
            finally:
                self._busy = False

    @cython.critical_section
    def priority(self, handle):
        """Return the priority of the item behind ``handle``.  O(1).

        Raises ``KeyError`` if the handle is stale or another container's.
        """
        self._idle()
        return self._slive[self._slot_of(handle)].key

    @cython.critical_section
    def clear(self):
        """Remove every item; handles issued so far become stale.  O(n)."""
        cdef list old = self._items
        cdef list fresh
        cdef Py_ssize_t s
        self._enter()
        try:
            fresh = [None] * self._t.n  # first: a MemoryError here changes nothing
            for s in range(self._t.n):
                if handles_held(&self._t, s):
                    handles_release(&self._t, <int>s)
            self._items = fresh
            self._n = 0
            self._on_empty()  # the entries, every one dead, go too
        finally:
            self._busy = False
        del old  # payload finalisers run only now, with the heap consistent

    @cython.critical_section
    def __len__(self):
        return self._n

    @cython.critical_section
    def __bool__(self):
        return self._n > 0

    @cython.critical_section
    def __contains__(self, handle):
        self._idle()
        try:
            self._slot_of(handle)
        except (KeyError, TypeError):
            return False
        return True

    def __repr__(self):
        cdef Py_ssize_t n
        cdef double key = 0.0
        with cython.critical_section(self):
            n = self._n
            if n:
                self._idle()
                key = self._e[self._off].key
        if not n:
            return f"<{type(self).__name__} len=0>"
        return f"<{type(self).__name__} len={n} next_priority={key!r}>"

    # -- copying, pickling, invariants --------------------------------------

    @cython.critical_section
    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        self._enter()
        try:
            return self._state()
        finally:
            self._busy = False

    @cython.final
    cdef tuple _state(self):
        cdef list free = handles_free_slots(&self._t)
        free.reverse()  # the next one to reuse last
        cdef list live = self._live_in_order()
        cdef u64 e
        cdef Py_ssize_t slot
        out = []
        for e in live:
            slot = e & SLOT_FIELD
            out.append((slot, self._slive[slot].key, e >> SLOT_SHIFT, self._items[slot]))
        return (STATE_VERSION, self._seq, self._t.epoch, handles_tags(&self._t), free, out)

    def __setstate__(self, state):
        """Load a state of ``__getstate__``; a bad one changes nothing."""
        seq, epoch, tags, free, live = check_state(state)
        cdef Py_ssize_t n = len(live)
        cdef Py_ssize_t hcap = _cap_for(n + ARITY), root  # room whatever the root
        cdef Handles t
        cdef SlotEntry* e
        cdef Entry* entries
        cdef u64[::1] raw
        cdef list old
        if seq > SEQ_SPAN:  # numbered afresh, as the pure twin does
            seq = n
            live = [(slot, key, i, item) for i, (slot, key, _, item) in enumerate(live)]
        free.reverse()  # the next one to reuse first
        # Built aside: until the swap, a finaliser may still use this heap.
        # A new container: issues its own handles, above every id it copied.
        handles_load(&t, tags, free, epoch, new_cid(top_cid(tags)), load_plan(tags))
        e = <SlotEntry*>PyMem_Malloc(t.cap * sizeof(SlotEntry))
        try:
            if e is NULL:
                raise MemoryError()
            buf = _new_array(2 * (hcap + ALIGN_SLACK), sizeof(u64), "Q")
            raw = buf
            entries = <Entry*>&raw[0]
            root = _root_in(entries)
            items = [None] * t.n
            self._load_live(live, e, t.n, entries + root, items)
        except BaseException:
            handles_free(&t)
            PyMem_Free(e)
            raise
        with cython.critical_section(self):
            try:
                self._enter()
            except BaseException:
                handles_free(&t)
                PyMem_Free(e)
                raise
            try:
                old = self._items
                self._hkey = (<double[:2 * (hcap + ALIGN_SLACK)]><double*>entries)[::2]
                self._buf = buf
                self._e = entries
                self._root = self._off = root
                PyMem_Free(self._slive)
                self._slive = e
                self._items = items
                handles_free(&self._t)
                self._t = t
                self._hcap = hcap
                self._n = self._m = n
                self._sorted = True  # live comes in pop order
                self._seq = seq
            finally:
                self._busy = False
        del old  # the replaced payloads' finalisers run only now

    @cython.final
    cdef int _load_live(self, list live, SlotEntry* e, Py_ssize_t slots, Entry* out,
                        list items) except -1:
        cdef Py_ssize_t i
        cdef long long slot
        cdef u64 sq
        for i in range(slots):
            e[i].seq = DEAD_SEQ
            e[i].key = 0.0
        for i in range(len(live)):
            slot, key, sq, item = live[i]
            out[i].key = key
            out[i].ss = (sq << SLOT_SHIFT) | <u64>slot
            e[slot].key = key
            e[slot].seq = sq
            items[slot] = item
        return 0

    def __reduce__(self):
        return reduced(self, "Heap")

    def __copy__(self):
        """A new heap with the same items (not copied) and handles.  O(n)."""
        return copied(self, Heap.__new__(Heap))

    def __deepcopy__(self, memo):
        """A new heap with copies of the items, and the same handles.  O(n)."""
        return deep_copied(self, Heap.__new__(Heap), memo)

    @cython.critical_section
    def _check(self):
        """Assert every invariant of the heap and its slot table; return its entries (live and dead)."""
        self._enter()
        try:
            self._check_tables()
            return self._m
        finally:
            self._busy = False

    @cython.final
    cdef _check_tables(self):
        cdef Py_ssize_t i, s, off = self._off, root = self._root
        cdef u64 e
        cdef Entry* E = self._e
        assert len(self._items) == self._t.n <= self._t.cap
        assert 0 <= root <= off and off + self._m <= self._hcap
        assert 0 <= self._n <= self._m and self._seq <= SEQ_SPAN
        assert &self._hkey[off] == &E[off].key, "the keys' view is the entries'"
        if self._sorted:
            for i in range(off + 1, off + self._m):
                assert _before(E[i - 1].key, E[i - 1].ss, E[i].key, E[i].ss), \
                    f"sorted run broken at {i}"
        else:
            assert off == root, "a heap starts at the root"
            assert (<size_t>&E[root + 1]) % (ARITY * sizeof(Entry)) == 0, "children share a line"
            for i in range(1, self._m):
                p = (i - 1) // ARITY
                assert not _before(E[root + i].key, E[root + i].ss, E[root + p].key, E[root + p].ss), \
                    f"heap order broken at {i}"
        assert not self._n or self._live_at(off), "the top is live"
        held = set()
        for i in range(off, off + self._m):
            e = E[i].ss
            s = e & SLOT_FIELD
            assert 0 <= s < self._t.n and (e >> SLOT_SHIFT) < self._seq
            if self._live_at(i):
                assert handles_held(&self._t, s) and s not in held
                assert self._slive[s].key == E[i].key
                held.add(s)
        assert len(held) == self._n
        assert self._m - self._n <= self._n + RESET_MIN_SLOTS, "dead entries are purged"
        check_table(handles_tags(&self._t), handles_links(&self._t), handles_top(&self._t),
                    self._t.epoch, held, self._t.cid)
        for s in range(self._t.n):
            assert s in held or self._items[s] is None
