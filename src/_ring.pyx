# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""Segmented FIFO ring for expiry when every entry shares one TTL (twin of ``_ring_py``).

Each segment keeps its keys in a list and its created_at times in a typed
memoryview; the outer index is a list of segments.  ``expire`` reads the
head segment through cached C pointers, so a call with nothing due costs a
comparison.
"""

cimport cython
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cython.view cimport array as cvarray

import time
import types

from dq_core._convert import to_count, to_real

__all__ = ["TTLRing", "TTLDictCore"]

# Shared with the pure twin; see dq_core._ring_py.
cdef Py_ssize_t COMPACT_MIN = 32


cdef double _ttl(object value) except? -1.0:
    cdef double ttl = to_real(value, "ttl")
    if ttl < 0:
        raise ValueError(f"ttl must be non-negative, got {ttl!r}")
    return ttl


@cython.final
cdef class _Segment:
    cdef list keys
    cdef double[::1] times

    def __cinit__(self, Py_ssize_t size):
        self.keys = [None] * size
        self.times = cvarray(shape=(size,), itemsize=sizeof(double), format="d")


@cython.final
cdef class TTLRing:
    """FIFO of keys that all live ``ttl`` seconds from their ``created_at``.

    ``push`` appends at the tail; ``expire`` pops every head entry with
    ``created_at + ttl <= now`` and stops at the first live one.  Entries are
    assumed pushed in ``created_at`` order: an out-of-order ``created_at`` is
    accepted and never lost, but it waits behind older heads and may expire
    late.

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
    cdef object __weakref__

    def __init__(self, ttl, segment_size=1024, clock=time.monotonic):
        self._ttl = _ttl(ttl)
        cdef Py_ssize_t size = to_count(segment_size, "segment_size")
        if size < 1:
            raise ValueError(f"segment_size must be at least 1, got {size!r}")
        self._size = size
        self._clock = clock
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
            c = self._clock()
            t = PyFloat_AS_DOUBLE(c) if type(c) is float else to_real(c, "clock()")
        elif type(created_at) is float and created_at == created_at:
            t = PyFloat_AS_DOUBLE(created_at)
        else:
            t = to_real(created_at, "created_at")
        self._push(key, t)

    cdef int _push(self, object key, double t) except -1:
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
        seg.keys[self._tail] = key
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
        if now is None:
            now = self._clock()
        if type(now) is float:
            t = PyFloat_AS_DOUBLE(now)
            if t != t:
                t = to_real(now, "now")
        else:
            t = to_real(now, "now")
        return self._expire(t, max_items)

    cdef list _expire(self, double t, Py_ssize_t max_items):
        cdef list out = []
        cdef Py_ssize_t head, n = self._len
        cdef _Segment seg
        if n == 0:
            return out
        seg = self._hseg
        head = self._head
        if seg.times[head] + self._ttl > t:
            return out
        while n and max_items:
            if seg.times[head] + self._ttl > t:
                break
            max_items -= 1
            out.append(<object>PyList_GET_ITEM(seg.keys, head))
            seg.keys[head] = None  # let go of the key at once
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
        self._expired += len(out)
        if self._first >= COMPACT_MIN and 2 * self._first > PyList_GET_SIZE(self._segs):
            del self._segs[:self._first]
            self._first = 0
        return out

    def popleft(self):
        """Pop and return the head key whether it is due or not.  O(1).

        Raises ``IndexError`` when the ring is empty.
        """
        if not self._len:
            raise IndexError("pop from an empty ring")
        # "now" is the head's own expiry: exactly the head is due
        return self._expire(self._hseg.times[self._head] + self._ttl, 1)[0]

    def next_expiry(self):
        """When the head entry expires (``created_at + ttl``), or None if empty.  O(1)."""
        if not self._len:
            return None
        return self._hseg.times[self._head] + self._ttl

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

    def _check(self):
        """Assert the ring's bookkeeping: counts, head/tail, released slots."""
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


# -- TTLDictCore: the dict, the ring and the hot paths of TTLDict -------------

from cpython.dict cimport PyDict_GetItemWithError as PyDict_GetItem, PyDict_SetItem, PyDict_DelItem
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM


cdef class TTLDictCore:
    """The dict, the ring and the hot paths of TTLDict.

    Every set pushes its entry ``(key, value, created_at)`` on the ring; the
    dict maps each key to its latest entry, so a ring entry whose key was
    set again since is recognised as stale by identity and skipped.
    """

    # visible to the shared layer (dq_core._ttldict), which clears them
    cdef public TTLRing _ring
    cdef public dict _data
    cdef readonly double _ttl
    cdef readonly object _clock
    cdef public object maxsize, on_expire
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, ttl, maxsize=None, clock=time.monotonic, on_expire=None):
        self._ring = TTLRing(ttl, clock=clock)
        if maxsize is not None:
            maxsize = to_count(maxsize, "maxsize")
            if maxsize < 1:
                raise ValueError(f"maxsize must be at least 1 or None, got {maxsize!r}")
        self.maxsize = maxsize
        self.on_expire = on_expire
        self._clock = clock
        self._ttl = self._ring._ttl
        self._data = {}

    @property
    def ttl(self):
        """Seconds every entry lives; a new value applies to all entries at once."""
        return self._ttl

    @ttl.setter
    def ttl(self, value):
        self._ring.ttl = value
        self._ttl = self._ring._ttl

    cdef inline double _now(self) except? -1.0:
        c = self._clock()
        if type(c) is float:
            return PyFloat_AS_DOUBLE(c)
        return c

    cdef inline bint _expired(self, object entry, double now) noexcept:
        return PyFloat_AS_DOUBLE(<object>PyTuple_GET_ITEM(entry, 2)) + self._ttl <= now

    def __getitem__(self, key):
        cdef PyObject* e = PyDict_GetItem(self._data, key)
        if e == NULL:
            raise KeyError(key)
        entry = <object>e  # a reference of our own before calling the clock
        if self._expired(entry, self._now()):
            raise KeyError(key)
        return <object>PyTuple_GET_ITEM(entry, 1)

    def __contains__(self, key):
        cdef PyObject* e = PyDict_GetItem(self._data, key)
        if e == NULL:
            return False
        entry = <object>e
        return not self._expired(entry, self._now())

    def __setitem__(self, key, value):
        c = self._clock()
        cdef double now = PyFloat_AS_DOUBLE(c) if type(c) is float else c
        cdef list removed = None
        maxsize = self.maxsize
        if maxsize is not None and len(self._data) >= maxsize and key not in self._data:
            removed = self._purge(now)
            if len(self._data) >= maxsize:
                removed.append(self._evict_oldest())
        entry = (key, value, now)
        PyDict_SetItem(self._data, key, entry)
        self._ring._push(entry, now)
        if removed:
            self._notify(removed)

    def __delitem__(self, key):
        cdef PyObject* e = PyDict_GetItem(self._data, key)
        if e == NULL:
            raise KeyError(key)
        entry = <object>e
        if self._expired(entry, self._now()):
            raise KeyError(key)
        PyDict_DelItem(self._data, key)  # its ring entry is stale from now on

    def _purge(self, double now):
        """Drop the expired entries still held; return them as (key, value)."""
        cdef list out = []
        cdef PyObject* e
        for entry in self._ring._expire(now, -1):
            key = <object>PyTuple_GET_ITEM(entry, 0)
            e = PyDict_GetItem(self._data, key)
            if e == <PyObject*>entry:
                PyDict_DelItem(self._data, key)
                out.append((key, <object>PyTuple_GET_ITEM(entry, 1)))
        return out

    def _evict_oldest(self):
        """Drop the oldest entry held, due or not; return it as (key, value)."""
        cdef PyObject* e
        while True:
            entry = self._ring.popleft()
            key = <object>PyTuple_GET_ITEM(entry, 0)
            e = PyDict_GetItem(self._data, key)
            if e == <PyObject*>entry:
                PyDict_DelItem(self._data, key)
                return key, <object>PyTuple_GET_ITEM(entry, 1)
