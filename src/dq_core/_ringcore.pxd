# cython: language_level=3
# The C interface of dq_core._ringcore: TTLRing's fields and cdef methods, for
# a core that drives a ring without Python calls.
# This file's path names the module, dq_core._ringcore, so that a module that
# cimports TTLRing imports the type from there at run time (a src/_ringcore.pxd
# would name a top-level "_ringcore").

cimport cython
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyObject


from _number cimport _real


cdef inline double _reading(object clock) except? -1.0:
    # One reading of clock; a NaN or a non-number raises naming clock().
    # Callers pass a reference of their own: the call may replace the clock.
    return _real(clock(), "clock()")


cdef inline int _begin_change(bint *busy, str name) except -1:
    # A change begins (as _ringstate.enter): a clock, __float__, __hash__ or
    # finaliser re-entering the structure meets RuntimeError, not a half-made change.
    if busy[0]:
        raise RuntimeError(f"{name} was re-entered while it was being changed")
    busy[0] = True
    return 0


@cython.final
cdef class _Segment:
    cdef list keys
    cdef double[::1] times


# not final (TTLRing refuses subclasses in __init_subclass__), its methods are
cdef class TTLRing:
    cdef double _ttl
    cdef Py_ssize_t _size, _first, _head, _tail, _len
    cdef unsigned long long _pushed, _expired
    cdef object _clock
    cdef list _segs              # the outer index; [_first:] are live
    cdef _Segment _spare
    cdef _Segment _hseg, _tseg   # head and tail segments, cached
    cdef bint _busy              # a change is under way
    cdef object __weakref__

    @cython.final
    cdef double _time(self, value, str name) except? -1.0
    @cython.final
    cdef int _push(self, object key, double t) except -1
    @cython.final
    cdef bint _due(self, double t) noexcept
    @cython.final
    cdef list _expire(self, double t, Py_ssize_t max_items, bint due_only)
    @cython.final
    cdef Py_ssize_t _pop(self, double t, Py_ssize_t max_items, bint due_only, list out,
                         PyObject** keys) except -1
    @cython.final
    cdef list _entries(self)
    @cython.final
    cdef _check_held(self)

    @cython.final
    cdef inline object _next_expiry(self):
        # when the head entry expires, or None if empty (TTLRing.next_expiry)
        if not self._len:
            return None
        cdef double e = self._hseg.times[self._head] + self._ttl
        return e if e == e else float("inf")

    @cython.final
    cdef inline object _peek(self):
        # the head key; the ring must not be empty
        return <object>PyList_GET_ITEM(self._hseg.keys, self._head)
