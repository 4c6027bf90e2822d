# cython: language_level=3
# time.monotonic() read in C, shared by the compiled cores whose default
# clock it is (_delaycore, _wheelcore, _aioqueuecore, _wheelttlcore): see
# dq_monotonic in src/include/dq_shortcuts.h (a shortcut on Linux, public
# calls elsewhere).

from _shortcuts cimport dq_monotonic

from _number cimport _real


cdef inline double clock_reading(object clock, object monotonic) except? -1.0:
    # One reading of clock: read in C when it is time.monotonic (the caller
    # passes the function it saw at import), else called, and a NaN or a
    # non-number raises naming clock().  Callers pass a reference of their
    # own: the call may replace the clock.
    cdef double t
    if clock is monotonic:
        dq_monotonic(&t)
        return t
    return _real(clock(), "clock()")
