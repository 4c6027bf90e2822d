# cython: language_level=3
# time.monotonic() read in C, shared by the compiled cores whose default
# clock it is (_delayq, _wheel).

cdef extern from *:
    """
    /* time.monotonic() read without a Python call; the same value, same source. */
    #if PY_VERSION_HEX >= 0x030D0000
    static int dq_monotonic(double *out) {
        PyTime_t t;
        if (PyTime_Monotonic(&t) < 0) return -1;
        *out = PyTime_AsSecondsDouble(t);
        return 0;
    }
    #else
    static int dq_monotonic(double *out) {
        *out = _PyTime_AsSecondsDouble(_PyTime_GetMonotonicClock());
        return 0;
    }
    #endif
    """
    int dq_monotonic(double* out) except -1
