# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Keyed binary min-heap: the compiled twin of ``dq_core._heap_py``.

Entries live in three typed arrays indexed by heap position (key, insertion
sequence, slot).  A slot table (position, generation, payload) gives every
item a stable home, so a handle ``gen << 32 | slot`` finds its item in O(1)
and a stale handle is refused because the generation moved on.
"""

cimport cython
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.number cimport PyNumber_Index
from cython.view cimport array as cvarray

from _number cimport DQ_DEBUG_BUILD, fast_key

import types

from dq_core._convert import keys_of, to_count, to_real
from dq_core._heapstate import check_state

__all__ = ["Heap"]

#: True in a DQ_CORE_DEBUG=1 build (bounds and wraparound checks on).
DEBUG_BUILD = bool(DQ_DEBUG_BUILD)

# Shared with the pure twin; see dq_core._heapstate.
cdef unsigned int GEN_LIMIT = 0xFFFFFFFF
cdef Py_ssize_t RESET_MIN_SLOTS = 64
cdef int STATE_VERSION = 1
cdef Py_ssize_t MIN_CAP = 8
# spos[] value of a slot that holds no item.
cdef long long FREE = -1
_REENTERED = "the heap was re-entered (from a finaliser) while it was being changed"

ctypedef unsigned long long u64


cdef inline double _key(object x, str name) except? -1.0:
    # Everything off the fast path (and every error) goes through to_real,
    # so both implementations accept and refuse the same things.
    cdef double d
    if fast_key(x, &d):
        return d
    return to_real(x, name)


cdef inline bint _before(double ka, u64 sa, double kb, u64 sb) noexcept nogil:
    return ka < kb or (ka == kb and sa < sb)


cdef cvarray _new_array(Py_ssize_t n, Py_ssize_t itemsize, str fmt):
    return cvarray(shape=(n,), itemsize=itemsize, format=fmt, mode="c")


cdef Py_ssize_t _cap_for(Py_ssize_t n) noexcept:
    cdef Py_ssize_t cap = MIN_CAP
    while cap < n:
        cap *= 2
    return cap


def __init_subclass__(cls, **kwargs):
    """Refuse subclassing: no method of Heap calls an overridable one."""
    raise TypeError("type 'Heap' is not an acceptable base type")


_refuse_subclass = __init_subclass__
del __init_subclass__


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

    # by heap position
    cdef double[::1] _hkey
    cdef u64[::1] _hseq
    cdef long long[::1] _hslot
    # by slot
    cdef long long[::1] _spos     # position in the heap, or FREE
    cdef unsigned int[::1] _sgen
    cdef long long[::1] _snext    # free-list link
    cdef list _items
    cdef Py_ssize_t _n, _hcap, _nslots, _scap
    cdef long long _free          # top of the free-slot stack, or -1
    cdef u64 _seq
    cdef unsigned int _epoch
    cdef bint _busy               # an operation is changing the heap
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)

    def __cinit__(self):
        self._seq = 0
        self._busy = False
        self._alloc_heap(MIN_CAP)
        self._reset_slots(0)

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

    __init_subclass__ = classmethod(_refuse_subclass)

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
        cdef double[::1] k = _new_array(cap, sizeof(double), "d")
        cdef u64[::1] s = _new_array(cap, sizeof(u64), "Q")
        cdef long long[::1] l = _new_array(cap, sizeof(long long), "q")
        cdef Py_ssize_t n = self._n
        if n:
            k[:n] = self._hkey[:n]
            s[:n] = self._hseq[:n]
            l[:n] = self._hslot[:n]
        self._hkey, self._hseq, self._hslot = k, s, l
        self._hcap = cap
        return 0

    @cython.final
    cdef int _alloc_slots(self, Py_ssize_t cap) except -1:
        cdef long long[::1] p = _new_array(cap, sizeof(long long), "q")
        cdef unsigned int[::1] g = _new_array(cap, sizeof(unsigned int), "I")
        cdef long long[::1] x = _new_array(cap, sizeof(long long), "q")
        cdef Py_ssize_t n = self._nslots
        if n:
            p[:n] = self._spos[:n]
            g[:n] = self._sgen[:n]
            x[:n] = self._snext[:n]
        self._spos, self._sgen, self._snext = p, g, x
        self._scap = cap
        return 0

    @cython.final
    cdef int _reset_slots(self, unsigned int epoch) except -1:
        self._nslots = 0
        self._alloc_slots(MIN_CAP)
        self._items = []
        self._free = -1
        self._epoch = epoch
        return 0

    @cython.final
    cdef inline int _shrink_heap(self) except -1:
        if self._hcap > MIN_CAP and self._n * 4 <= self._hcap:
            self._alloc_heap(self._hcap // 2)
        return 0

    @cython.final
    cdef inline long long _take_slot(self, object item) except -1:
        # A reused slot moves to the next generation, so handles of its
        # earlier occupants go stale; at GEN_LIMIT it is retired for good.
        cdef long long slot = self._free
        cdef unsigned int gen
        while slot >= 0:
            self._free = self._snext[slot]
            gen = self._sgen[slot] + 1
            self._sgen[slot] = gen
            if gen < GEN_LIMIT:
                self._items[slot] = item
                return slot
            slot = self._free
        slot = self._nslots
        if slot == self._scap:
            self._alloc_slots(2 * self._scap)
        self._items.append(item)
        self._sgen[slot] = self._epoch
        self._nslots = slot + 1
        return slot

    @cython.final
    cdef inline void _free_slot(self, long long slot) noexcept:
        self._spos[slot] = FREE
        self._snext[slot] = self._free
        self._free = slot

    @cython.final
    cdef int _on_empty(self) except -1:
        cdef Py_ssize_t s
        cdef unsigned int top = 0
        if self._nslots > RESET_MIN_SLOTS:
            for s in range(self._nslots):
                if self._sgen[s] > top:
                    top = self._sgen[s]
            # Every handle ever issued has a generation below the new epoch,
            # so slots made afresh cannot repeat one.
            if <u64>top + 1 < GEN_LIMIT // 2:
                self._reset_slots(top + 1)
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
        # Appends at the end of the heap array; the caller sifts.
        cdef long long slot
        cdef Py_ssize_t pos = self._n
        if pos == self._hcap:
            self._alloc_heap(2 * self._hcap)
        slot = self._take_slot(item)
        self._hkey[pos] = key
        self._hseq[pos] = self._seq
        self._hslot[pos] = slot
        self._spos[slot] = pos
        self._seq += 1
        self._n = pos + 1
        return slot

    @cython.final
    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t cap = self._hcap
        while cap < self._n + extra:
            cap *= 2
        if cap != self._hcap:
            self._alloc_heap(cap)
        cap = self._scap
        while cap < self._nslots + extra:
            cap *= 2
        if cap != self._scap:
            self._alloc_slots(cap)
        return 0

    @cython.final
    cdef object _delete_at(self, Py_ssize_t pos):
        # Unlinks the entry at pos and returns its item; no user code runs
        # until the caller drops the item.
        cdef long long slot = self._hslot[pos]
        cdef Py_ssize_t last = self._n - 1
        cdef object item = self._items[slot]  # owned: it outlives the next line
        self._items[slot] = None
        self._free_slot(slot)
        self._n = last
        if pos != last:
            self._hkey[pos] = self._hkey[last]
            self._hseq[pos] = self._hseq[last]
            self._hslot[pos] = self._hslot[last]
            self._spos[self._hslot[pos]] = pos
            if pos > 0 and _before(self._hkey[pos], self._hseq[pos],
                                   self._hkey[(pos - 1) >> 1], self._hseq[(pos - 1) >> 1]):
                self._sift_up(pos, 0)
            else:
                self._sift_down(pos)
        if last == 0:
            self._on_empty()
        else:
            self._shrink_heap()
        return item

    @cython.final
    cdef long long _slot_of(self, object handle) except -2:
        # Only C-level checks: nothing here runs user code, even for an int
        # subclass (PyNumber_Index gives an exact int without calling it).
        cdef u64 h
        cdef long long slot, v
        cdef int overflow = 0
        cdef object exact = handle
        if type(handle) is not int:
            if not isinstance(handle, int):
                raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
            exact = PyNumber_Index(handle)
        v = PyLong_AsLongLongAndOverflow(exact, &overflow)
        if overflow < 0 or (v < 0 and not overflow):
            raise KeyError(handle)
        if overflow:  # a generation of 2**31 or more, or out of range
            if exact > 0xFFFFFFFFFFFFFFFF:
                raise KeyError(handle)
            h = exact
        else:
            h = <u64>v
        slot = <long long>(h & <u64>0xFFFFFFFF)
        if slot >= self._nslots or self._spos[slot] < 0 or self._sgen[slot] != (h >> 32):
            raise KeyError(handle)
        return slot

    @cython.final
    cdef inline object _handle(self, long long slot):
        return (<u64>self._sgen[slot] << 32) | <u64>slot

    # -- public API ---------------------------------------------------------
    #
    # User code (a priority's __float__/__index__, an iterable) runs before
    # _enter(); dropped payloads die after the guard is released.

    def push(self, priority, item):
        """Add ``item`` with ``priority`` and return its handle.  O(log n).

        >>> h = Heap()
        >>> h.push(1.5, "a")
        0
        """
        cdef double key = _key(priority, "priority")
        cdef long long slot
        self._enter()
        try:
            slot = self._insert(key, item)
            self._sift_up(self._n - 1, 0)
            return self._handle(slot)
        finally:
            self._busy = False

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
            bulk = k >= self._n
            for i in range(k):
                self._insert(keys[i], values[i])
                if not bulk:
                    self._sift_up(self._n - 1, 0)
            if bulk and self._n > 1:
                for i in reversed(range(self._n // 2)):
                    self._sift_down(i)
        finally:
            self._busy = False

    def pop(self):
        """Remove and return the item with the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        self._enter()
        try:
            if not self._n:
                raise IndexError("pop from an empty heap")
            return self._delete_at(0)
        finally:
            self._busy = False

    def popitem(self):
        """Remove and return ``(priority, item)`` for the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        cdef object key
        self._enter()
        try:
            if not self._n:
                raise IndexError("pop from an empty heap")
            key = self._hkey[0]
            return key, self._delete_at(0)
        finally:
            self._busy = False

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
                out.append(self._delete_at(0))
            return out
        finally:
            self._busy = False

    def peek(self):
        """Return the item with the lowest priority without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        self._idle()
        if not self._n:
            raise IndexError("peek at an empty heap")
        return self._items[self._hslot[0]]

    def peekitem(self):
        """Return ``(priority, item)`` for the lowest priority.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        self._idle()
        if not self._n:
            raise IndexError("peek at an empty heap")
        # both read before the tuple (an allocation) is made
        return self._hkey[0], self._items[self._hslot[0]]

    def update(self, handle, priority):
        """Give the item behind ``handle`` a new priority.  O(log n).

        Acts as remove + push: the item goes behind equal priorities.
        Raises ``KeyError`` if the handle is stale.
        """
        cdef double key = _key(priority, "priority")
        cdef long long slot
        cdef Py_ssize_t pos
        cdef double old
        self._enter()
        try:
            slot = self._slot_of(handle)
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

    def remove(self, handle):
        """Remove the item behind ``handle`` and return it.  O(log n).

        Raises ``KeyError`` if the handle is stale.
        """
        self._enter()
        try:
            return self._delete_at(self._spos[self._slot_of(handle)])
        finally:
            self._busy = False

    def priority(self, handle):
        """Return the priority of the item behind ``handle``.  O(1).

        Raises ``KeyError`` if the handle is stale.
        """
        self._idle()
        return self._hkey[self._spos[self._slot_of(handle)]]

    def clear(self):
        """Remove every item; handles issued so far become stale.  O(n)."""
        cdef list old = self._items
        cdef Py_ssize_t s
        self._enter()
        try:
            for s in range(self._nslots):
                if self._spos[s] >= 0:
                    self._free_slot(s)
            self._items = [None] * self._nslots
            self._n = 0
            self._on_empty()
        finally:
            self._busy = False
        del old  # payload finalisers run only now, with the heap consistent

    def __len__(self):
        return self._n

    def __bool__(self):
        return self._n > 0

    def __contains__(self, handle):
        self._idle()
        try:
            self._slot_of(handle)
        except (KeyError, TypeError):
            return False
        return True

    def __repr__(self):
        if not self._n:
            return f"<{type(self).__name__} len=0>"
        key = self.peekitem()[0]
        return f"<{type(self).__name__} len={self._n} next_priority={key!r}>"

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        self._enter()
        try:
            return self._state()
        finally:
            self._busy = False

    @cython.final
    cdef tuple _state(self):
        cdef Py_ssize_t i, s, n = self._n
        cdef list free = []
        cdef long long f = self._free
        while f >= 0:
            free.append(f)
            f = self._snext[f]
        free.reverse()
        order = sorted(range(n), key=lambda i: (self._hkey[i], self._hseq[i]))
        return (
            STATE_VERSION,
            self._seq,
            self._epoch,
            [self._sgen[s] for s in range(self._nslots)],
            free,
            [(self._hslot[i], self._hkey[i], self._hseq[i], self._items[self._hslot[i]])
             for i in order],
        )

    def __setstate__(self, state):
        """Load a state of ``__getstate__``; a bad one changes nothing."""
        seq, epoch, gens, free, live = check_state(state)
        cdef Py_ssize_t nslots = len(gens), n = len(live), i
        cdef Py_ssize_t scap = _cap_for(nslots), hcap = _cap_for(n)
        cdef long long prev = -1, slot
        # Built aside: until the swap, a finaliser may still use this heap.
        cdef long long[::1] spos = _new_array(scap, sizeof(long long), "q")
        cdef unsigned int[::1] sgen = _new_array(scap, sizeof(unsigned int), "I")
        cdef long long[::1] snext = _new_array(scap, sizeof(long long), "q")
        cdef double[::1] hkey = _new_array(hcap, sizeof(double), "d")
        cdef u64[::1] hseq = _new_array(hcap, sizeof(u64), "Q")
        cdef long long[::1] hslot = _new_array(hcap, sizeof(long long), "q")
        cdef list items = [None] * nslots
        cdef list old
        for i in range(nslots):
            sgen[i] = gens[i]
            spos[i] = FREE
        for f in free:
            snext[f] = prev
            prev = f
        for i in range(n):
            slot, key, s, item = live[i]
            hkey[i] = key
            hseq[i] = s
            hslot[i] = slot
            spos[slot] = i
            items[slot] = item
        self._enter()
        try:
            old = self._items
            self._hkey, self._hseq, self._hslot = hkey, hseq, hslot
            self._spos, self._sgen, self._snext = spos, sgen, snext
            self._items = items
            self._hcap, self._scap = hcap, scap
            self._n, self._nslots = n, nslots
            self._free = prev
            self._epoch = epoch
            self._seq = seq
        finally:
            self._busy = False
        del old  # the replaced payloads' finalisers run only now

    def __reduce__(self):
        from dq_core._compat import restore

        return restore, ("Heap", self.__getstate__())

    def __copy__(self):
        """A new heap with the same items (not copied) and handles.  O(n)."""
        cdef Heap new = Heap.__new__(Heap)
        new.__setstate__(self.__getstate__())
        return new

    def __deepcopy__(self, memo):
        """A new heap with copies of the items, and the same handles.  O(n)."""
        from copy import deepcopy

        cdef Heap new = Heap.__new__(Heap)
        memo[id(self)] = new  # an item may refer back to the heap
        new.__setstate__(deepcopy(self.__getstate__(), memo))
        return new

    def _check(self):
        """Assert every invariant of the heap and its slot table."""
        self._enter()
        try:
            self._check_tables()
        finally:
            self._busy = False

    @cython.final
    cdef _check_tables(self):
        cdef Py_ssize_t i, s, nfree = 0
        cdef long long f
        assert len(self._items) == self._nslots
        assert self._n <= self._hcap and self._nslots <= self._scap
        for i in range(1, self._n):
            p = (i - 1) >> 1
            assert not _before(self._hkey[i], self._hseq[i], self._hkey[p], self._hseq[p]), \
                f"heap order broken at {i}"
        for i in range(self._n):
            s = self._hslot[i]
            assert 0 <= s < self._nslots and self._spos[s] == i
            assert self._hseq[i] < self._seq and self._epoch <= self._sgen[s] < GEN_LIMIT
        free = set()
        f = self._free
        while f >= 0:
            assert f not in free and self._spos[f] == FREE and self._sgen[f] < GEN_LIMIT
            free.add(f)
            f = self._snext[f]
        for s in range(self._nslots):
            if self._spos[s] < 0:
                assert self._items[s] is None
                assert (s in free) == (self._sgen[s] < GEN_LIMIT)
        assert self._n + len(free) + sum(
            1 for s in range(self._nslots) if self._sgen[s] == GEN_LIMIT) == self._nslots
