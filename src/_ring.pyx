# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Segmented FIFO ring for expiry when every entry shares one TTL (twin of ``_ring_py``).

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
from cpython.dict cimport PyDict_GetItemWithError, PyDict_SetItem, PyDict_DelItem
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM
from cython.view cimport array as cvarray

import copy
import time
import types

from dq_core._convert import to_count, to_real
from dq_core._ring_py import (
    _callback, _cap, _clock_of, _maxsize, _reentered, check_dict_state, check_ring_state,
)

__all__ = ["TTLRing", "TTLDictCore"]

# Shared with the pure twin; see dq_core._ring_py.
cdef Py_ssize_t COMPACT_MIN = 32
_EMPTY = object()  # no default
cdef int STATE_VERSION = 1


cdef double _ttl(object value) except? -1.0:
    cdef double ttl = to_real(value, "ttl")
    if ttl < 0:
        raise ValueError(f"ttl must be non-negative, got {ttl!r}")
    return ttl


def _signature(*params):
    # For inspect: a default of time.monotonic cannot be written in a
    # docstring's text signature, so the class carries its Signature.
    import inspect

    P = inspect.Parameter
    return inspect.Signature([
        P(name, P.POSITIONAL_OR_KEYWORD, default=P.empty if default is _EMPTY else default)
        for name, default in params])


cdef inline double _real(object value, str name) except? -1.0:
    cdef double d
    if type(value) is float:
        d = PyFloat_AS_DOUBLE(value)
        if d == d:
            return d
    return to_real(value, name)


cdef inline double _reading(object clock) except? -1.0:
    # One reading of clock; a NaN or a non-number raises naming clock().
    # Callers pass a reference of their own: the call may replace the clock.
    return _real(clock(), "clock()")


@cython.final
@cython.auto_pickle(False)
cdef class _Segment:
    cdef list keys
    cdef double[::1] times

    def __cinit__(self, Py_ssize_t size):
        self.keys = [None] * size
        self.times = cvarray(shape=(size,), itemsize=sizeof(double), format="d")


@cython.final
@cython.auto_pickle(False)
cdef class TTLRing:
    """FIFO of keys that all live ``ttl`` seconds from their ``created_at``.

    ``push`` appends at the tail; ``expire`` pops every head entry with
    ``created_at + ttl <= now`` and stops at the first live one.  Entries are
    assumed pushed in ``created_at`` order: an out-of-order ``created_at`` is
    accepted and never lost, but it waits behind older heads and may expire
    late.  An entry whose ``created_at + ttl`` is undefined (``-inf`` plus an
    infinite ttl) never expires.

    ``clock`` must be callable; a reading that is NaN or not a number raises
    an error naming ``clock()``.  A ring supports ``copy.copy``,
    ``copy.deepcopy`` and ``pickle`` (its keys and clock must be picklable: a
    lambda clock makes pickling fail); the copy is independent, and a pickle
    made by either implementation loads in the other.  Not thread-safe; a
    change made from user code (a finaliser) while another change is under
    way raises ``RuntimeError``.

    >>> r = TTLRing(10, clock=lambda: 0.0)
    >>> r.push("a", created_at=0.0); r.push("b", created_at=5.0)
    >>> r.expire(now=12.0)
    ['a']
    >>> r.next_expiry()
    15.0
    """

    cdef double _ttl
    cdef Py_ssize_t _size, _first, _head, _tail, _len
    cdef unsigned long long _pushed, _expired
    cdef object _clock
    cdef list _segs              # the outer index; [_first:] are live
    cdef _Segment _spare
    cdef _Segment _hseg, _tseg   # head and tail segments, cached
    cdef bint _busy              # a change is under way
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)
    __signature__ = _signature(("ttl", _EMPTY), ("segment_size", 1024), ("clock", time.monotonic))

    def __cinit__(self):
        # a valid empty ring even before __init__ or __setstate__
        self._clock = time.monotonic
        self._size = 1
        self._tail = 1
        self._segs = []

    def __init__(self, ttl, segment_size=1024, clock=time.monotonic):
        cdef double t = _ttl(ttl)
        cdef Py_ssize_t size = to_count(segment_size, "segment_size")
        if size < 1:
            raise ValueError(f"segment_size must be at least 1, got {size!r}")
        clock = _clock_of(clock)
        if self._busy:
            raise _reentered("TTLRing")
        # what a re-initialised ring held goes after the change is complete
        old = (self._segs, self._spare, self._clock)
        self._busy = True
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

    @property
    def ttl(self):
        """Seconds every entry lives; a new value applies to all from the next ``expire``."""
        return self._ttl

    @ttl.setter
    def ttl(self, value):
        self._ttl = _ttl(value)

    def push(self, key, created_at=None):
        """Append ``key``, created at ``created_at`` (default ``clock()``).  O(1) amortised."""
        cdef double t
        if created_at is None:
            clock = self._clock
            t = _reading(clock)
        else:
            t = _real(created_at, "created_at")
        if self._busy:
            raise _reentered("TTLRing")
        self._busy = True
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

    def expire(self, now=None, max_items=-1):
        """Pop and return every head key with ``created_at + ttl <= now``, oldest first.

        ``now`` defaults to ``clock()``; ``max_items`` >= 0 caps how many.
        O(1) when nothing is due, O(k) for k expired keys.
        """
        cdef double t
        cdef Py_ssize_t cap
        if now is None:
            clock = self._clock
            t = _reading(clock)
        else:
            t = _real(now, "now")
        cap = -1 if type(max_items) is int and max_items == -1 else _cap(max_items)
        if self._busy:
            raise _reentered("TTLRing")
        self._busy = True
        try:
            return self._expire(t, cap, True)
        finally:
            self._busy = False

    cdef list _expire(self, double t, Py_ssize_t max_items, bint due_only):
        # Pops up to max_items (< 0: no cap) head keys, only due ones if
        # due_only.  The caller holds _busy.
        cdef list out = []
        cdef Py_ssize_t head, n = self._len
        cdef _Segment seg
        if n == 0:
            return out
        seg = self._hseg
        head = self._head
        if due_only and not seg.times[head] + self._ttl <= t:
            return out
        while n and max_items:
            if due_only and not seg.times[head] + self._ttl <= t:
                break
            max_items -= 1
            out.append(<object>PyList_GET_ITEM(seg.keys, head))
            seg.keys[head] = None  # let go of the key at once (out holds it)
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
        self._expired += PyList_GET_SIZE(out)
        if self._first >= COMPACT_MIN and 2 * self._first > PyList_GET_SIZE(self._segs):
            del self._segs[:self._first]
            self._first = 0
        return out

    def popleft(self):
        """Pop and return the head key whether it is due or not.  O(1).

        Raises ``IndexError`` when the ring is empty.
        """
        if self._busy:
            raise _reentered("TTLRing")
        if not self._len:
            raise IndexError("pop from an empty ring")
        self._busy = True
        try:
            return self._expire(0.0, 1, False)[0]
        finally:
            self._busy = False

    cdef inline object _peek(self):
        # the head key; the ring must not be empty
        return <object>PyList_GET_ITEM(self._hseg.keys, self._head)

    def next_expiry(self):
        """When the head entry expires (``created_at + ttl``), or None if empty.  O(1).

        ``inf`` for an entry that never expires.
        """
        if not self._len:
            return None
        cdef double e = self._hseg.times[self._head] + self._ttl
        return e if e == e else float("inf")

    def __len__(self):
        return self._len

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
        nxt = self.next_expiry()
        tail = "" if nxt is None else f" next_expiry={nxt!r}"
        return f"<{type(self).__name__} len={self._len} ttl={self._ttl!r}{tail}>"

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

    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        return (STATE_VERSION, self._ttl, self._size, self._clock, self._pushed,
                self._expired, self._head if self._len else 0, self._entries())

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
        if self._busy:
            raise _reentered("TTLRing")
        old = (self._segs, self._spare, self._clock)  # released after the change
        self._busy = True
        self._ttl, self._size, self._clock = ttl, size, clock
        self._segs, self._first, self._head, self._tail = segs, 0, head, tail
        self._len, self._pushed, self._expired = n, pushed, expired
        self._spare = None
        self._hseg = segs[0] if n else None
        self._tseg = segs[len(segs) - 1] if n else None
        self._busy = False

    def __reduce__(self):
        from dq_core._compat import restore

        return restore, ("TTLRing", self.__getstate__())

    def __copy__(self):
        new = type(self).__new__(type(self))
        new.__setstate__(self.__getstate__())
        return new

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return new

    def _check(self):
        """Assert the ring's bookkeeping: counts, head/tail, released slots."""
        cdef Py_ssize_t size = self._size, first = self._first
        assert not self._busy
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


# -- TTLDictCore: the dict, the ring and the hot paths of TTLDict -------------

cdef inline bint _due(object entry, double ttl, double now) noexcept:
    # entry is one of ours: (key, value, created_at) with a float created_at
    return PyFloat_AS_DOUBLE(<object>PyTuple_GET_ITEM(entry, 2)) + ttl <= now


@cython.auto_pickle(False)
cdef class TTLDictCore:
    """The dict, the ring and the hot paths of TTLDict.

    Every set pushes its entry ``(key, value, created_at)`` on the ring; the
    dict maps each key to its latest entry, so a ring entry whose key was
    set again since is recognised as stale by identity and skipped.  Every
    entry the dict holds is on the ring, at every point where user code
    (a key's ``__hash__`` or ``__eq__``, the clock) can run.
    """

    # read by the shared layer (dq_core._ttldict)
    cdef readonly TTLRing _ring
    cdef readonly dict _data
    cdef readonly double _ttl
    cdef readonly object _clock
    cdef object _maxsize, _on_expire
    cdef bint _busy              # a change is under way
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)
    __signature__ = _signature(("ttl", _EMPTY), ("maxsize", None), ("clock", time.monotonic),
                               ("on_expire", None))

    def __cinit__(self):
        # a valid empty mapping even before __init__ or __setstate__
        self._ring = TTLRing(0)
        self._data = {}
        self._clock = time.monotonic

    def __init__(self, ttl, maxsize=None, clock=time.monotonic, on_expire=None):
        ring = TTLRing(ttl, clock=clock)
        maxsize = _maxsize(maxsize)
        on_expire = _callback(on_expire)
        if self._busy:
            raise _reentered("TTLDict")
        # what a re-initialised mapping held goes after the change is complete
        old = (self._ring, self._data, self._clock, self._on_expire)
        self._busy = True
        self._on_expire = on_expire
        self._maxsize = maxsize
        self._clock = clock
        self._ttl = ring._ttl
        self._ring = ring
        self._data = {}
        self._busy = False

    @property
    def ttl(self):
        """Seconds every entry lives; a new value applies to all entries at once."""
        return self._ttl

    @ttl.setter
    def ttl(self, value):
        cdef double t = _ttl(value)  # user code (__float__) runs before anything changes
        self._ring._ttl = t
        self._ttl = t

    @property
    def maxsize(self):
        """Most entries held (an int >= 1), or None for no limit; checked at the next set."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, value):
        self._maxsize = _maxsize(value)

    @property
    def on_expire(self):
        """Called as ``on_expire(key, value)`` for every expired or evicted entry, or None."""
        return self._on_expire

    @on_expire.setter
    def on_expire(self, value):
        self._on_expire = _callback(value)

    @property
    def clock(self):
        """The callable read for every "now"."""
        return self._clock

    @clock.setter
    def clock(self, value):
        self._clock = _clock_of(value)

    cdef inline double _now(self) except? -1.0:
        clock = self._clock
        return _reading(clock)

    cdef inline object _lookup(self, object key):
        # The current entry of key, or None.  The dict is held by a reference
        # of our own while key's __hash__/__eq__ run (they may clear() it),
        # and the entry is owned before anything else can run.
        cdef dict data = self._data
        cdef PyObject* e = PyDict_GetItemWithError(data, key)
        if e == NULL:
            return None
        return <object>e

    def __getitem__(self, key):
        entry = self._lookup(key)
        if entry is None:
            raise KeyError(key)
        cdef double now = self._now()
        if _due(entry, self._ttl, now):
            raise KeyError(key)
        return <object>PyTuple_GET_ITEM(entry, 1)

    def __contains__(self, key):
        entry = self._lookup(key)
        if entry is None:
            return False
        cdef double now = self._now()
        return not _due(entry, self._ttl, now)

    def __setitem__(self, key, value):
        cdef double now = self._now()
        cdef list removed = None
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            data = self._data
            entry = (key, value, now)
            ring = self._ring
            PyDict_SetItem(data, key, entry)  # a raising __hash__/__eq__ leaves everything as it was
            (<TTLRing>ring)._push(entry, now)
            maxsize = self._maxsize
            if maxsize is not None and len(data) > maxsize:
                removed = self._drop_due(now)
                while len(data) > maxsize and self._ring._len:
                    self._drop_head(removed)
        finally:
            self._busy = False
        if removed:
            self._notify(removed)

    def __delitem__(self, key):
        self._take(key)

    def _take(self, key):
        """Remove ``key`` and return its value; KeyError if absent or expired."""
        cdef double now = self._now()
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            data = self._data
            entry = data[key]
            if _due(entry, self._ttl, now):
                raise KeyError(key)
            del data[key]  # its ring entry is stale from now on
        finally:
            self._busy = False
        return <object>PyTuple_GET_ITEM(entry, 1)

    def _popfirst(self):
        """Remove and return the first live ``(key, value)`` in insertion order."""
        cdef double now = self._now()
        cdef double ttl
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            data = self._data
            ttl = self._ttl
            for key, entry in data.items():
                if not _due(entry, ttl, now):
                    break
            else:
                raise KeyError("popitem(): dictionary is empty")
            del data[key]
        finally:
            self._busy = False
        return key, <object>PyTuple_GET_ITEM(entry, 1)

    def clear(self):
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            ring, data = self._ring, self._data
            self._ring = TTLRing(self._ttl, clock=self._clock)
            self._data = {}
        finally:
            self._busy = False
        del ring, data  # the old entries go here, after the change is complete

    def _purge(self, double now):
        """Drop the expired entries still held; return them as (key, value)."""
        if self._busy:
            raise _reentered("TTLDict")
        self._busy = True
        try:
            return self._drop_due(now)
        finally:
            self._busy = False

    cdef list _drop_due(self, double now):
        # Each head entry leaves the dict before it leaves the ring, so a
        # key's __hash__/__eq__ raising here leaves every held entry on the ring.
        cdef list out = []
        cdef TTLRing ring = self._ring
        while ring._len:
            if not _due(ring._peek(), self._ttl, now):
                break
            self._drop_head(out)
        return out

    cdef int _drop_head(self, list out) except -1:
        # drop the ring's head entry, and from the dict if it is current there
        cdef TTLRing ring = self._ring
        entry = ring._peek()
        key = <object>PyTuple_GET_ITEM(entry, 0)
        data = self._data
        if self._lookup(key) is entry:
            PyDict_DelItem(data, key)
            out.append((key, <object>PyTuple_GET_ITEM(entry, 1)))
        ring._expire(0.0, 1, False)
        return 0

    # -- copying, pickling, invariants --------------------------------------

    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        held = {id(e) for e in self._data.values()}
        entries = [e for e, _ in self._ring._entries() if id(e) in held]
        return (STATE_VERSION, self._ttl, self._maxsize, self._clock, self._on_expire,
                entries)

    def __setstate__(self, state):
        ttl, maxsize, clock, on_expire, entries, data = check_dict_state(state)
        cdef TTLRing ring = TTLRing(ttl, clock=clock)
        for e in entries:
            ring.push(e, e[2])
        if self._busy:
            raise _reentered("TTLDict")
        old = (self._ring, self._data, self._clock, self._on_expire)  # released after the change
        self._busy = True
        self._ttl, self._maxsize, self._clock, self._on_expire = ttl, maxsize, clock, on_expire
        self._ring, self._data = ring, data
        self._busy = False

    def _check(self):
        """Assert every held entry is on the ring, and the bookkeeping around it."""
        assert not self._busy
        self._ring._check()
        assert self._ring.ttl == self._ttl
        on_ring = {id(e) for e, _ in self._ring._entries()}
        for e in self._data.values():
            assert type(e) is tuple and len(e) == 3 and type(e[2]) is float, e
            assert id(e) in on_ring, e
