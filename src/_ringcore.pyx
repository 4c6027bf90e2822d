# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Segmented FIFO ring for expiry when every entry shares one TTL (twin of ``_ringcore_py``).

Each segment keeps its keys in a list and its created_at times in a typed
memoryview; the outer index is a list of segments.  ``expire`` reads the
head segment through cached C pointers, so a call with nothing due costs a
comparison.

User code (a finaliser run by the garbage collector, a key's ``__eq__`` or
``__hash__`` inside TTLDictCore) may try to change a structure while one of
its changes is under way; that re-entry is refused with ``RuntimeError``,
so no change ever sees a half-made one.  Every object read across a call
that can run Python code is held by a reference of our own.
"""

cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cython.view cimport array as cvarray

from _clock cimport clock_reading
from _pickling cimport copied, deep_copied, reduced

import time
import types

from dq_core import _ringstate
from dq_core._final import refuse_subclassing
from dq_core._ringstate import (
    check_ring_state, clock_of, max_items_of, reentered, segment_size_of, ttl_of,
)
from dq_core._signature import NO_DEFAULT, signature

__all__ = ["TTLRing"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes: none.
SHORTCUTS = types.MappingProxyType({})

# The pure twin's constants, as C values
cdef Py_ssize_t COMPACT_MIN = _ringstate.COMPACT_MIN
cdef int STATE_VERSION = _ringstate.STATE_VERSION
cdef enum:
    BATCH = 16  # keys a purge lets go of at a time: _ringstate.BATCH (checked below)
if BATCH != _ringstate.BATCH:
    raise ImportError("_ringcore's BATCH differs from dq_core._ringstate.BATCH")
cdef object MONOTONIC = time.monotonic


@cython.final
@cython.auto_pickle(False)
cdef class _Segment:
    def __cinit__(self, Py_ssize_t size):
        self.keys = [None] * size
        self.times = cvarray(shape=(size,), itemsize=sizeof(double), format="d")


# Not final, so that __init_subclass__ (not CPython) refuses subclasses,
# with the pure twin's message; its cdef methods are final instead.
@cython.auto_pickle(False)
cdef class TTLRing:
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

    # the fields and the cdef methods _ttldictcore uses are declared in dq_core/_ringcore.pxd

    __class_getitem__ = classmethod(types.GenericAlias)
    __signature__ = signature(("ttl", NO_DEFAULT), ("segment_size", 1024), ("clock", time.monotonic))
    __init_subclass__ = refuse_subclassing("TTLRing")

    def __cinit__(self):
        # a valid empty ring even before __init__ or __setstate__
        self._clock = time.monotonic
        self._size = 1
        self._tail = 1
        self._segs = []

    @cython.critical_section
    def __init__(self, ttl, segment_size=1024, clock=time.monotonic):
        cdef double t = ttl_of(ttl)
        cdef Py_ssize_t size = segment_size_of(segment_size)
        clock = clock_of(clock)
        _begin_change(&self._busy, "TTLRing")
        # what a re-initialised ring held goes after the change is complete
        old = (self._segs, self._spare, self._clock)
        self._clock = clock
        self._ttl = t
        self._size = size
        self._segs = []
        self._first = 0
        self._head = 0
        self._tail = size
        self._len = 0
        self._pushed = 0
        self._expired = 0
        self._spare = None
        self._hseg = None
        self._tseg = None
        self._busy = False

    cdef double _time(self, value, str name) except? -1.0:
        # ``value`` as a time, ``clock()`` when None (user code may run: before _enter)
        if value is None:
            clock = self._clock  # held: the call may replace it
            return clock_reading(clock, MONOTONIC)
        return _real(value, name)

    @property
    def ttl(self):
        """Seconds every entry lives; a new value applies to all from the next ``expire``."""
        with cython.critical_section(self):
            return self._ttl

    @ttl.setter
    def ttl(self, value):
        cdef double t = ttl_of(value)
        with cython.critical_section(self):
            self._ttl = t

    @cython.critical_section
    def push(self, key, created_at=None):
        """Append ``key``, created at ``created_at`` (default ``clock()``).  O(1) amortised."""
        cdef double t = self._time(created_at, "created_at")
        _begin_change(&self._busy, "TTLRing")
        try:
            self._push(key, t)
        finally:
            self._busy = False

    cdef int _push(self, object key, double t) except -1:
        # The caller holds _busy: a finaliser run by the allocation below
        # cannot change the ring.
        cdef _Segment seg
        if self._tail == self._size:
            seg = self._spare
            if seg is None:
                seg = _Segment(self._size)
            self._spare = None
            self._segs.append(seg)
            self._tseg = seg
            self._tail = 0
            if self._len == 0:
                self._hseg = seg
        seg = self._tseg
        seg.keys[self._tail] = key  # the slot held None: nothing is released
        seg.times[self._tail] = t
        self._tail += 1
        self._len += 1
        self._pushed += 1
        return 0

    @cython.critical_section
    def expire(self, now=None, max_items=-1):
        """Pop and return every head key with ``created_at + ttl <= now``, oldest first.

        ``now`` defaults to ``clock()``; ``max_items`` >= 0 caps how many.
        O(1) when nothing is due, O(k) for k expired keys.  ``purge()`` does
        the same without building the list.
        """
        cdef double t = self._time(now, "now")
        cdef Py_ssize_t cap
        cap = -1 if type(max_items) is int and max_items == -1 else max_items_of(max_items)
        if not self._due(t):
            return []  # nothing is due: one comparison, no change
        _begin_change(&self._busy, "TTLRing")
        try:
            return self._expire(t, cap, True)
        finally:
            self._busy = False

    def purge(self, now=None):
        """Pop every head key with ``created_at + ttl <= now`` and return how many; build nothing.

        ``now`` defaults to ``clock()``.  As ``expire()`` without the list:
        the keys are let go of, a few at a time, once they have left.  O(1)
        when nothing is due, O(k) for k expired keys.
        """
        cdef double t = self._time(now, "now")
        cdef PyObject* keys[BATCH]
        cdef Py_ssize_t k, got, count = 0
        while True:
            with cython.critical_section(self):
                if not self._due(t):
                    break  # nothing (more) is due: one comparison, no change
                _begin_change(&self._busy, "TTLRing")
                try:
                    got = self._pop(t, BATCH, True, None, keys)
                finally:
                    self._busy = False
            count += got
            for k in range(got - 1, -1, -1):  # newest first, as a list lets go of its items
                Py_DECREF(<object>keys[k])
            if got < BATCH:
                break
        return count

    cdef inline bint _due(self, double t) noexcept:
        # whether the head key is due at t
        return self._len and self._hseg.times[self._head] + self._ttl <= t

    cdef list _expire(self, double t, Py_ssize_t max_items, bint due_only):
        # Pops up to max_items (< 0: no cap) head keys, only due ones if
        # due_only, into a new list.  The caller holds _busy.
        cdef list out = []
        self._pop(t, max_items, due_only, out, NULL)
        return out

    cdef Py_ssize_t _pop(self, double t, Py_ssize_t max_items, bint due_only, list out,
                         PyObject** keys) except -1:
        # Pops up to max_items (< 0: no cap) head keys, only due ones if
        # due_only: appended to out, or (out None) their references stored
        # in keys.  Returns how many.  The caller holds _busy.
        cdef Py_ssize_t head, n = self._len, got = 0
        cdef _Segment seg
        cdef PyObject* key
        if n == 0:
            return 0
        seg = self._hseg
        head = self._head
        while n and max_items:
            if due_only and not seg.times[head] + self._ttl <= t:
                break
            max_items -= 1
            key = PyList_GET_ITEM(seg.keys, head)
            if out is None:
                Py_INCREF(None)  # the slot's reference goes to keys, None takes its place
                PyList_SET_ITEM(seg.keys, head, None)
                keys[got] = key
            else:
                out.append(<object>key)
                seg.keys[head] = None  # let go of the key at once (out holds it)
            got += 1
            head += 1
            n -= 1
            if head == self._size:
                self._segs[self._first] = None
                if self._spare is None:
                    self._spare = seg
                self._first += 1
                head = 0
                if self._first == PyList_GET_SIZE(self._segs):
                    seg = None
                    self._tseg = None
                    break
                seg = self._segs[self._first]
        self._hseg = seg
        self._len = n
        self._head = head
        self._expired += got
        if self._first >= COMPACT_MIN and 2 * self._first > PyList_GET_SIZE(self._segs):
            del self._segs[:self._first]
            self._first = 0
        return got

    @cython.critical_section
    def popleft(self):
        """Pop and return the head key whether it is due or not.  O(1).

        Raises ``IndexError`` when the ring is empty.
        """
        _begin_change(&self._busy, "TTLRing")
        try:
            if not self._len:
                raise IndexError("pop from an empty ring")
            return self._expire(0.0, 1, False)[0]
        finally:
            self._busy = False

    @cython.critical_section
    def next_expiry(self):
        """When the head entry expires (``created_at + ttl``), or None if empty.  O(1).

        ``inf`` for an entry that never expires.
        """
        return self._next_expiry()

    @cython.critical_section
    def __len__(self):
        return self._len

    @cython.critical_section
    def stats(self):
        """Counters: pushed, expired, length, segments (allocated, spare included)."""
        cdef Py_ssize_t live = PyList_GET_SIZE(self._segs) - self._first
        return {
            "pushed": self._pushed,
            "expired": self._expired,
            "length": self._len,
            "segments": live + (self._spare is not None),
            "segment_size": self._size,
            "index_slots": PyList_GET_SIZE(self._segs),
        }

    def __repr__(self):
        with cython.critical_section(self):
            nxt, n, ttl = self._next_expiry(), self._len, self._ttl
        tail = "" if nxt is None else f" next_expiry={nxt!r}"
        return f"<{type(self).__name__} len={n} ttl={ttl!r}{tail}>"

    # -- copying, pickling, invariants --------------------------------------

    cdef list _entries(self):
        # (key, created_at) of every entry, oldest first; runs no user code
        cdef list out = []
        cdef Py_ssize_t i, j, head = self._head, last = PyList_GET_SIZE(self._segs) - 1
        cdef _Segment seg
        if not self._len:
            return out
        for i in range(self._first, last + 1):
            seg = self._segs[i]
            for j in range(head, self._tail if i == last else self._size):
                out.append((<object>PyList_GET_ITEM(seg.keys, j), seg.times[j]))
            head = 0
        return out

    @cython.critical_section
    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        # a change under way has no whole state yet; none starts while it is read
        # (an allocation here may run a finaliser, and that another thread)
        _begin_change(&self._busy, "TTLRing")
        try:
            return (STATE_VERSION, self._ttl, self._size, self._clock, self._pushed,
                    self._expired, self._head if self._len else 0, self._entries())
        finally:
            self._busy = False

    @cython.critical_section
    def __setstate__(self, state):
        ttl, size, clock, pushed, expired, head, keys, times = check_ring_state(state)
        cdef list segs = []
        cdef Py_ssize_t tail = size, pos = head, i = 0, j, take, n = len(keys)
        cdef _Segment seg
        while i < n:
            seg = _Segment(size)
            take = min(size - pos, n - i)
            for j in range(take):
                seg.keys[pos + j] = keys[i + j]
                seg.times[pos + j] = times[i + j]
            segs.append(seg)
            i += take
            tail = pos + take
            pos = 0
        _begin_change(&self._busy, "TTLRing")
        old = (self._segs, self._spare, self._clock)  # released after the change
        self._ttl, self._size, self._clock = ttl, size, clock
        self._segs, self._first, self._head, self._tail = segs, 0, head, tail
        self._len, self._pushed, self._expired = n, pushed, expired
        self._spare = None
        self._hseg = segs[0] if n else None
        self._tseg = segs[len(segs) - 1] if n else None
        self._busy = False

    def __reduce__(self):
        return reduced(self, "TTLRing")

    def __copy__(self):
        return copied(self, TTLRing.__new__(TTLRing))

    def __deepcopy__(self, memo):
        return deep_copied(self, TTLRing.__new__(TTLRing), memo)

    @cython.critical_section
    def _check(self):
        """Assert the ring's bookkeeping: counts, head/tail, released slots."""
        _begin_change(&self._busy, "TTLRing")  # nothing changes while it is checked
        try:
            self._check_held()
        finally:
            self._busy = False

    cdef _check_held(self):
        cdef Py_ssize_t size = self._size, first = self._first
        segs = self._segs
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
            assert self._hseg is live[0] and self._tseg is live[len(live) - 1]
            assert all(k is None for k in (<_Segment>live[0]).keys[:self._head])
            assert all(k is None for k in (<_Segment>live[len(live) - 1]).keys[self._tail:])
        assert self._pushed - self._expired == <unsigned long long>self._len
        if self._spare is not None:
            assert all(k is None for k in self._spare.keys)
