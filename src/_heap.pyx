# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Keyed binary min-heap: the compiled twin of ``dq_core._heap_py``.

Entries live in three typed arrays indexed by heap position (key, insertion
sequence, slot).  A slot table (position, generation, payload) gives every
item a stable home, so a handle ``gen << 32 | slot`` finds its item in O(1)
and a stale handle is refused because the generation moved on.
"""

cimport cython
from cpython.list cimport PyList_GET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cython.view cimport array as cvarray

from _number cimport DQ_DEBUG_BUILD, fast_key

import types

from dq_core._convert import keys_of, to_count, to_real
from dq_core._heap_py import check_state

__all__ = ["Heap"]

#: True in a DQ_CORE_DEBUG=1 build (bounds and wraparound checks on).
DEBUG_BUILD = bool(DQ_DEBUG_BUILD)

# Shared with the pure twin; see dq_core._heap_py.
cdef unsigned int GEN_LIMIT = 0xFFFFFFFF
cdef Py_ssize_t RESET_MIN_SLOTS = 64
cdef int STATE_VERSION = 1
cdef Py_ssize_t MIN_CAP = 8
# spos[] value of a slot that holds no item.
cdef long long FREE = -1

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


@cython.final
cdef class Heap:
    """Binary min-heap of items keyed by real-number priorities.

    Lowest priority first, first-in first-out among equal priorities; items
    are never compared.  ``push`` returns a handle (an int) that ``update``,
    ``remove`` and ``priority`` accept until the item leaves the heap.

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
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)

    def __cinit__(self):
        self._seq = 0
        self._alloc_heap(MIN_CAP)
        self._reset_slots(0)

    # -- storage ------------------------------------------------------------

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

    cdef int _reset_slots(self, unsigned int epoch) except -1:
        self._nslots = 0
        self._alloc_slots(MIN_CAP)
        self._items = []
        self._free = -1
        self._epoch = epoch
        return 0

    cdef inline int _shrink_heap(self) except -1:
        if self._hcap > MIN_CAP and self._n * 4 <= self._hcap:
            self._alloc_heap(self._hcap // 2)
        return 0

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

    cdef inline void _free_slot(self, long long slot) noexcept:
        self._spos[slot] = FREE
        self._snext[slot] = self._free
        self._free = slot

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

    cdef object _delete_at(self, Py_ssize_t pos):
        # Unlinks the entry at pos and returns its item; no user code runs
        # until the caller drops the item.
        cdef long long slot = self._hslot[pos]
        cdef Py_ssize_t last = self._n - 1
        cdef object item = <object>PyList_GET_ITEM(self._items, slot)
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

    cdef long long _slot_of(self, object handle) except -2:
        cdef u64 h
        cdef long long slot, v
        cdef int overflow = 0
        if type(handle) is int:
            v = PyLong_AsLongLongAndOverflow(handle, &overflow)
            if v < 0 and not overflow:
                raise KeyError(handle)
            h = <u64>v
        elif not isinstance(handle, int):
            raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
        if overflow or type(handle) is not int:
            # a generation of 2**31 or more, an int subclass, or out of range
            if handle < 0 or handle > 0xFFFFFFFFFFFFFFFF:
                raise KeyError(handle)
            h = handle
        slot = <long long>(h & <u64>0xFFFFFFFF)
        if slot >= self._nslots or self._spos[slot] < 0 or self._sgen[slot] != (h >> 32):
            raise KeyError(handle)
        return slot

    cdef inline object _handle(self, long long slot):
        return (<u64>self._sgen[slot] << 32) | <u64>slot

    # -- public API ---------------------------------------------------------

    def push(self, priority, item):
        """Add ``item`` with ``priority`` and return its handle.  O(log n).

        >>> h = Heap()
        >>> h.push(1.5, "a")
        0
        """
        cdef double key = _key(priority, "priority")
        cdef long long slot = self._insert(key, item)
        self._sift_up(self._n - 1, 0)
        return self._handle(slot)

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
        if not isinstance(items, (list, tuple)):
            items = list(items)
        if isinstance(priorities, (list, tuple)):
            # a snapshot, as in keys_of: a __float__ may change the list
            seq = list(priorities)
            k = len(seq)
            keys = _new_array(max(1, k), sizeof(double), "d")
            K = &keys[0]
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
                k = dv.shape[0]
                keys = _new_array(max(1, k), sizeof(double), "d")
                for i in range(k):
                    if dv[i] != dv[i]:
                        to_real(dv[i], f"priorities[{i}]")
                    keys[i] = dv[i]
        if k != len(items):
            raise ValueError(
                f"priorities and items differ in length ({k} != {len(items)})"
            )
        # No user code runs from here on.
        self._reserve(k)
        bulk = k >= self._n
        for i in range(k):
            self._insert(keys[i], items[i])
            if not bulk:
                self._sift_up(self._n - 1, 0)
        if bulk and self._n > 1:
            for i in reversed(range(self._n // 2)):
                self._sift_down(i)

    def pop(self):
        """Remove and return the item with the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._n:
            raise IndexError("pop from an empty heap")
        return self._delete_at(0)

    def popitem(self):
        """Remove and return ``(priority, item)`` for the lowest priority.  O(log n).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._n:
            raise IndexError("pop from an empty heap")
        cdef double key = self._hkey[0]
        return key, self._delete_at(0)

    def pop_many(self, n):
        """Remove and return up to ``n`` items, lowest priority first.  O(k log n).

        >>> h = Heap()
        >>> h.push_many([2, 1], ["b", "a"])
        >>> h.pop_many(5)
        ['a', 'b']
        """
        cdef Py_ssize_t k = min(<Py_ssize_t>to_count(n, "n"), self._n)
        cdef list out = []
        cdef Py_ssize_t i
        for i in range(k):
            if not self._n:  # a payload finaliser emptied the heap
                break
            out.append(self._delete_at(0))
        return out

    def peek(self):
        """Return the item with the lowest priority without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._n:
            raise IndexError("peek at an empty heap")
        return self._items[self._hslot[0]]

    def peekitem(self):
        """Return ``(priority, item)`` for the lowest priority.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._n:
            raise IndexError("peek at an empty heap")
        return self._hkey[0], self._items[self._hslot[0]]

    def update(self, handle, priority):
        """Give the item behind ``handle`` a new priority.  O(log n).

        Acts as remove + push: the item goes behind equal priorities.
        Raises ``KeyError`` if the handle is stale.
        """
        cdef double key = _key(priority, "priority")
        cdef long long slot = self._slot_of(handle)
        cdef Py_ssize_t pos = self._spos[slot]
        cdef double old = self._hkey[pos]
        self._hkey[pos] = key
        self._hseq[pos] = self._seq
        self._seq += 1
        # A new sequence number puts it behind its equals, so an equal key
        # can only move down.
        if key < old:
            self._sift_up(pos, 0)
        else:
            self._sift_down(pos)

    def remove(self, handle):
        """Remove the item behind ``handle`` and return it.  O(log n).

        Raises ``KeyError`` if the handle is stale.
        """
        cdef long long slot = self._slot_of(handle)
        return self._delete_at(self._spos[slot])

    def priority(self, handle):
        """Return the priority of the item behind ``handle``.  O(1).

        Raises ``KeyError`` if the handle is stale.
        """
        return self._hkey[self._spos[self._slot_of(handle)]]

    def clear(self):
        """Remove every item; handles issued so far become stale.  O(n)."""
        cdef list old = self._items
        cdef Py_ssize_t s
        for s in range(self._nslots):
            if self._spos[s] >= 0:
                self._free_slot(s)
        self._items = [None] * self._nslots
        self._n = 0
        self._on_empty()
        del old  # payload finalisers run only now, with the heap consistent

    def __len__(self):
        return self._n

    def __bool__(self):
        return self._n > 0

    def __contains__(self, handle):
        try:
            self._slot_of(handle)
        except (KeyError, TypeError):
            return False
        return True

    def __repr__(self):
        if not self._n:
            return f"<{type(self).__name__} len=0>"
        return f"<{type(self).__name__} len={self._n} next_priority={self._hkey[0]!r}>"

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        cdef Py_ssize_t i, s
        cdef list free = []
        cdef long long f = self._free
        while f >= 0:
            free.append(f)
            f = self._snext[f]
        free.reverse()
        order = sorted(range(self._n), key=lambda i: (self._hkey[i], self._hseq[i]))
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
        version, seq, epoch, gens, free, live = check_state(state)
        cdef Py_ssize_t n = len(gens), i, cap = MIN_CAP
        cdef long long prev = -1
        while cap < n:
            cap *= 2
        self._n = 0
        self._nslots = 0
        self._alloc_slots(cap)
        self._nslots = n
        self._epoch = epoch
        self._items = [None] * n
        for i in range(n):
            self._sgen[i] = gens[i]
            self._spos[i] = FREE
        for f in free:
            self._snext[f] = prev
            prev = f
        self._free = prev
        cap = MIN_CAP
        while cap < len(live):
            cap *= 2
        self._alloc_heap(cap)
        for i, (slot, key, s, item) in enumerate(live):
            self._hkey[i] = key
            self._hseq[i] = s
            self._hslot[i] = slot
            self._spos[slot] = i
            self._items[slot] = item
        self._n = len(live)
        self._seq = seq

    def __reduce__(self):
        from dq_core._compat import restore

        return restore, ("Heap", self.__getstate__())

    def _check(self):
        """Assert every invariant of the heap and its slot table."""
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
