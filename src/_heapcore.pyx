# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Keyed binary min-heap: the compiled twin of ``dq_core._heapcore_py``.

Entries live in three typed arrays (key, insertion sequence, slot).  A slot
table (array index, generation, payload) gives every item a stable home, so
a handle ``cid << 64 | gen << 32 | slot`` finds its item in O(1); a stale
handle is refused because the generation moved on, and another container's
because its id ``cid`` is not this heap's (``dq_core._handles``).

A sorted run: while every push comes in pop order (a deadline no earlier
than the last one pushed: the usual constant delay or timeout), the entries
stay sorted at ``[_off, _off + _n)`` of the arrays, which is a heap already:
a push appends and a pop advances ``_off``, both O(1) and touching one
cache line, where sifting a large heap walks its height in memory.  The
first push out of order (or an update, or a removal inside the run) moves
the entries back to the start and the heap goes on as a binary heap
(``_off`` 0) until it holds at most one item.  The pure twin keeps a binary
heap throughout: the pop order, (priority, insertion sequence), is the same.
"""

cimport cython
from cython.view cimport array as cvarray
from libc.string cimport memmove

from _handles cimport (
    MIN_SLOTS, NIL, Handles, handle_constants, handles_find, handles_free,
    handles_free_slots, handles_grow, handles_handle, handles_held, handles_links, handles_tags,
    handles_load, handles_new, handles_put, handles_release, handles_spent, handles_take, next_cap,
)
from _number cimport DQ_DEBUG_BUILD, _real, fast_key
from _pickling cimport copied, deep_copied, reduced
from _shortcuts cimport DQ_METHOD_DEF, DQ_SC_METHOD_DESCR, PyMethodDef, PyTypeObject, dq_shortcut_switches

import types

from dq_core._convert import keys_of, to_count, to_real
from dq_core._final import refuse_subclassing
from dq_core._handles import check_table, new_cid, stale_message, top_cid
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
_REENTERED = "the heap was re-entered (from a finaliser) while it was being changed"
_FULL = "a Heap holds at most 2**31 - 1 items"


cdef extern from "Python.h":
    object PyDescr_NewMethod(PyTypeObject* cls, PyMethodDef* meth)

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

Binary min-heap of items keyed by real-number priorities.

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
        self._sorted = True
        self._alloc_heap(MIN_CAP)
        self._t.cid = new_cid()
        self._reset_slots(0)

    def __dealloc__(self):
        handles_free(&self._t)

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
        # new arrays of cap (>= _n) entries, the entries moved to their start
        cdef double[::1] k = _new_array(cap, sizeof(double), "d")
        cdef u64[::1] s = _new_array(cap, sizeof(u64), "Q")
        cdef long long[::1] l = _new_array(cap, sizeof(long long), "q")
        cdef Py_ssize_t n = self._n, off = self._off, i
        cdef long long* P
        if n:
            k[:n] = self._hkey[off:off + n]
            s[:n] = self._hseq[off:off + n]
            l[:n] = self._hslot[off:off + n]
        self._hkey, self._hseq, self._hslot = k, s, l
        self._hcap = cap
        self._off = 0
        if off and n:
            P = &self._spos[0]
            for i in range(n):
                P[l[i]] = i
        return 0

    @cython.final
    cdef void _move_down(self) noexcept:
        # the entries of a sorted run moved to the start of the arrays
        cdef Py_ssize_t off = self._off, n = self._n, i
        cdef long long* L
        cdef long long* P
        if not off:
            return
        self._off = 0
        if not n:
            return
        memmove(&self._hkey[0], &self._hkey[off], n * sizeof(double))
        memmove(&self._hseq[0], &self._hseq[off], n * sizeof(u64))
        memmove(&self._hslot[0], &self._hslot[off], n * sizeof(long long))
        L = &self._hslot[0]
        P = &self._spos[0]
        for i in range(n):
            P[L[i]] = i

    @cython.final
    cdef void _unsort(self) noexcept:
        # leave the sorted run: from here on a binary heap at [0, _n)
        if self._sorted:
            self._move_down()
            self._sorted = False

    @cython.final
    cdef int _alloc_slots(self, Py_ssize_t cap) except -1:
        # everything that can fail (or run the GC) first, then the table
        cdef long long[::1] p = _new_array(cap, sizeof(long long), "q")
        cdef Py_ssize_t n = self._t.n
        if n:
            p[:n] = self._spos[:n]
        handles_grow(&self._t, cap)
        self._spos = p
        return 0

    @cython.final
    cdef int _reset_slots(self, unsigned int epoch) except -1:
        cdef Handles t
        cdef long long[::1] p = _new_array(MIN_SLOTS, sizeof(long long), "q")
        cdef list items = []
        handles_new(&t, MIN_SLOTS, epoch, self._t.cid)
        handles_free(&self._t)
        self._t = t
        self._spos = p
        self._items = items
        return 0

    @cython.final
    cdef inline int _shrink_heap(self) except -1:
        if self._hcap > MIN_CAP and self._n * 4 <= self._hcap:
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
        self._off = 0
        self._sorted = True
        if epoch != NIL:
            self._reset_slots(<unsigned int>epoch)
        self._shrink_heap()
        return 0

    # -- sifting ------------------------------------------------------------

    @cython.final
    cdef void _sift_up(self, Py_ssize_t pos, Py_ssize_t start) noexcept:
        cdef double* K = &self._hkey[0]
        cdef u64* S = &self._hseq[0]
        cdef long long* L = &self._hslot[0]
        cdef long long* P = &self._spos[0]
        cdef double k = K[pos]
        cdef u64 s = S[pos]
        cdef long long sl = L[pos]
        cdef Py_ssize_t parent
        while pos > start:
            parent = (pos - 1) >> 1
            if not _before(k, s, K[parent], S[parent]):
                break
            K[pos] = K[parent]
            S[pos] = S[parent]
            L[pos] = L[parent]
            P[L[pos]] = pos
            pos = parent
        K[pos] = k
        S[pos] = s
        L[pos] = sl
        P[sl] = pos

    @cython.final
    cdef void _sift_down(self, Py_ssize_t pos) noexcept:
        # Floyd's variant (as heapq): walk the hole down to a leaf along the
        # smaller children, then sift the displaced entry back up.  The
        # entry moved in from the end is usually large, so this saves a
        # comparison per level.
        cdef double* K = &self._hkey[0]
        cdef u64* S = &self._hseq[0]
        cdef long long* L = &self._hslot[0]
        cdef long long* P = &self._spos[0]
        cdef Py_ssize_t n = self._n, start = pos, child
        cdef double k = K[pos]
        cdef u64 s = S[pos]
        cdef long long sl = L[pos]
        child = 2 * pos + 1
        while child < n:
            if child + 1 < n and _before(K[child + 1], S[child + 1], K[child], S[child]):
                child += 1
            K[pos] = K[child]
            S[pos] = S[child]
            L[pos] = L[child]
            P[L[pos]] = pos
            pos = child
            child = 2 * pos + 1
        K[pos] = k
        S[pos] = s
        L[pos] = sl
        P[sl] = pos
        self._sift_up(pos, start)

    @cython.final
    cdef inline long long _insert(self, double key, object item) except -1:
        # Appends after the last entry; the caller sifts (or keeps the run
        # sorted: it left it first if key comes before the last entry).
        cdef long long slot
        cdef Py_ssize_t pos = self._off + self._n
        if pos == self._hcap:
            if self._off >= self._n:  # at least half of it popped: paid for
                self._move_down()
            else:
                self._alloc_heap(2 * self._hcap)
            pos = self._off + self._n
        slot = self._take_slot(item)
        self._hkey[pos] = key
        self._hseq[pos] = self._seq
        self._hslot[pos] = slot
        self._spos[slot] = pos
        self._seq += 1
        self._n += 1
        return slot

    @cython.final
    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t cap = self._hcap
        while cap < self._n + extra:
            cap *= 2
        if cap != self._hcap:
            self._alloc_heap(cap)
        elif self._off + self._n + extra > cap:
            self._move_down()
        cap = self._t.cap
        while cap < self._t.n + extra:
            cap = next_cap(cap, _FULL)
        if cap != self._t.cap:
            self._alloc_slots(cap)
        return 0

    @cython.final
    cdef object _delete_at(self, Py_ssize_t pos):
        # Unlinks the entry at array index pos and returns its item; no user
        # code runs until the caller drops the item.  In a sorted run, pos is
        # its first or its last entry (_remove_handle leaves it otherwise).
        cdef long long slot = self._hslot[pos]
        cdef Py_ssize_t last = self._n - 1
        cdef object item = self._items[slot]  # owned: it outlives the next line
        self._items[slot] = None
        handles_release(&self._t, <int>slot)
        self._n = last
        if self._sorted:
            if pos == self._off:
                self._off = pos + 1
        elif pos != last:
            self._hkey[pos] = self._hkey[last]
            self._hseq[pos] = self._hseq[last]
            self._hslot[pos] = self._hslot[last]
            self._spos[self._hslot[pos]] = pos
            if pos > 0 and _before(self._hkey[pos], self._hseq[pos],
                                   self._hkey[(pos - 1) >> 1], self._hseq[(pos - 1) >> 1]):
                self._sift_up(pos, 0)
            else:
                self._sift_down(pos)
        if last <= 1:
            self._sorted = True  # one item is a sorted run (at _off, 0 here)
        if last == 0:
            self._on_empty()
        else:
            self._shrink_heap()
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
                if self._sorted and self._n and not key >= self._hkey[self._off + self._n - 1]:
                    self._unsort()  # `not >=`: a NaN key (never one a caller checked) too
                slot = self._insert(key, item)
                if not self._sorted:
                    self._sift_up(self._n - 1, 0)
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
            bulk = k >= self._n and not self._sorted
            try:
                for i in range(k):
                    self._insert(keys[i], values[i])  # MemoryError: no slot for it
                    if not bulk and not self._sorted:
                        self._sift_up(self._n - 1, 0)
            finally:
                # after a MemoryError too: the items inserted so far form a heap
                if bulk and self._n > 1:
                    for i in reversed(range(self._n // 2)):
                        self._sift_down(i)
        finally:
            self._busy = False

    @cython.final
    cdef bint _in_order(self, const double* K, Py_ssize_t k) noexcept:
        # keys K[:k], pushed after the entries of the sorted run, keep it sorted
        cdef Py_ssize_t i
        # `not >=`: a NaN key breaks the run too
        if k and self._n and not K[0] >= self._hkey[self._off + self._n - 1]:
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
                return self._delete_at(self._off)
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
            key = self._hkey[self._off]
            return key, self._delete_at(self._off)
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
                out.append(self._delete_at(self._off))
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
        return self._items[self._hslot[self._off]]

    @cython.critical_section
    def peekitem(self):
        """Return ``(priority, item)`` for the lowest priority.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        self._idle()
        if not self._n:
            raise IndexError("peek at an empty heap")
        # both read before the tuple (an allocation) is made
        return self._hkey[self._off], self._items[self._hslot[self._off]]

    def update(self, handle, priority):
        """Give the item behind ``handle`` a new priority.  O(log n).

        Acts as remove + push: the item goes behind equal priorities.
        Raises ``KeyError`` if the handle is stale or another container's.
        """
        self._update_key(handle, _real(priority, "priority"))

    @cython.final
    cdef int _update_key(self, object handle, double key) except -1:
        cdef long long slot
        cdef Py_ssize_t pos
        cdef double old
        with cython.critical_section(self):
            self._enter()
            try:
                slot = self._slot_of(handle)
                self._unsort()
                pos = self._spos[slot]
                old = self._hkey[pos]
                self._hkey[pos] = key
                self._hseq[pos] = self._seq
                self._seq += 1
                # A new sequence number puts it behind its equals, so an equal
                # key can only move down.
                if key < old:
                    self._sift_up(pos, 0)
                else:
                    self._sift_down(pos)
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
        cdef long long slot
        cdef Py_ssize_t pos
        with cython.critical_section(self):
            self._enter()
            try:
                slot = self._slot_of(handle)
                pos = self._spos[slot]
                if self._sorted and pos != self._off and pos != self._off + self._n - 1:
                    self._unsort()  # inside the run
                    pos = self._spos[slot]
                return self._delete_at(pos)
            finally:
                self._busy = False

    @cython.critical_section
    def priority(self, handle):
        """Return the priority of the item behind ``handle``.  O(1).

        Raises ``KeyError`` if the handle is stale or another container's.
        """
        self._idle()
        return self._hkey[self._spos[self._slot_of(handle)]]

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
            self._on_empty()
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
                key = self._hkey[self._off]
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
        cdef Py_ssize_t i, n = self._n
        cdef list free = handles_free_slots(&self._t)
        free.reverse()  # the next one to reuse last
        cdef Py_ssize_t off = self._off
        if self._sorted:
            order = range(off, off + n)
        else:
            order = sorted(range(n), key=lambda i: (self._hkey[i], self._hseq[i]))
        return (
            STATE_VERSION,
            self._seq,
            self._t.epoch,
            handles_tags(&self._t),
            free,
            [(self._hslot[i], self._hkey[i], self._hseq[i], self._items[self._hslot[i]])
             for i in order],
        )

    def __setstate__(self, state):
        """Load a state of ``__getstate__``; a bad one changes nothing."""
        seq, epoch, tags, free, live = check_state(state)
        cdef Py_ssize_t n = len(live), i
        cdef Py_ssize_t hcap = _cap_for(n)
        cdef long long slot
        cdef Handles t
        cdef list old
        free.reverse()  # the next one to reuse first
        # Built aside: until the swap, a finaliser may still use this heap.
        # a new container: issues its own handles, above every id it copied
        handles_load(&t, tags, free, epoch, new_cid(top_cid(tags)))
        try:
            spos = _new_array(t.cap, sizeof(long long), "q")
            hkey = _new_array(hcap, sizeof(double), "d")
            hseq = _new_array(hcap, sizeof(u64), "Q")
            hslot = _new_array(hcap, sizeof(long long), "q")
            items = [None] * t.n
            self._load_live(live, spos, hkey, hseq, hslot, items)
        except BaseException:
            handles_free(&t)
            raise
        with cython.critical_section(self):
            try:
                self._enter()
            except BaseException:
                handles_free(&t)
                raise
            try:
                old = self._items
                self._hkey, self._hseq, self._hslot = hkey, hseq, hslot
                self._spos = spos
                self._items = items
                handles_free(&self._t)
                self._t = t
                self._hcap = hcap
                self._n = n
                self._off = 0
                self._sorted = True  # live comes in pop order
                self._seq = seq
            finally:
                self._busy = False
        del old  # the replaced payloads' finalisers run only now

    @cython.final
    cdef int _load_live(self, list live, long long[::1] spos, double[::1] hkey, u64[::1] hseq,
                        long long[::1] hslot, list items) except -1:
        cdef Py_ssize_t i
        cdef long long slot
        for i in range(len(live)):
            slot, key, s, item = live[i]
            hkey[i] = key
            hseq[i] = s
            hslot[i] = slot
            spos[slot] = i
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
        """Assert every invariant of the heap and its slot table."""
        self._enter()
        try:
            self._check_tables()
        finally:
            self._busy = False

    @cython.final
    cdef _check_tables(self):
        cdef Py_ssize_t i, s, off = self._off
        assert len(self._items) == self._t.n <= self._t.cap
        assert 0 <= off and off + self._n <= self._hcap and self._t.cap <= self._spos.shape[0]
        if self._sorted:
            for i in range(off + 1, off + self._n):
                assert _before(self._hkey[i - 1], self._hseq[i - 1], self._hkey[i], self._hseq[i]), \
                    f"sorted run broken at {i}"
        else:
            assert off == 0, "a binary heap starts at the start of the arrays"
            for i in range(1, self._n):
                p = (i - 1) >> 1
                assert not _before(self._hkey[i], self._hseq[i], self._hkey[p], self._hseq[p]), \
                    f"heap order broken at {i}"
        held = set()
        for i in range(off, off + self._n):
            s = self._hslot[i]
            assert 0 <= s < self._t.n and self._spos[s] == i and s not in held
            assert self._hseq[i] < self._seq
            held.add(s)
        check_table(handles_tags(&self._t), handles_links(&self._t), self._t.free,
                    self._t.epoch, held, self._t.cid)
        for s in range(self._t.n):
            assert s in held or self._items[s] is None
