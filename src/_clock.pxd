# cython: language_level=3
# time.monotonic() read in C, shared by the compiled cores whose default
# clock it is (_delayq, _wheel).

cdef extern from *:
    """
    /* time.monotonic() read without a Python call; the same value, same source.
       On Linux, time.monotonic() is clock_gettime(CLOCK_MONOTONIC) made into
       nanoseconds and then seconds by _PyTime_AsSecondsDouble's rule: read
       it so directly (CPython's reading adds overflow checks that cannot
       trip for a clock of under 292 years, and costs twice the reading).
       Elsewhere, or if the call fails, CPython's own reading (which raises). */
    #if defined(__linux__)
    #include <time.h>
    #define DQ_NS_PER_SEC 1000000000LL
    static CYTHON_INLINE int dq_monotonic_linux(double *out) {
        struct timespec ts;
        long long t;
        if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
            return -1;
        t = (long long)ts.tv_sec * DQ_NS_PER_SEC + ts.tv_nsec;
        if (t % DQ_NS_PER_SEC == 0)
            *out = (double)(t / DQ_NS_PER_SEC);
        else
            *out = (double)t / 1e9;
        return 0;
    }
    #else
    #define dq_monotonic_linux(out) (-1)
    #endif

    #if PY_VERSION_HEX >= 0x030D0000
    static int dq_monotonic_python(double *out) {
        PyTime_t t;
        if (PyTime_Monotonic(&t) < 0) return -1;
        *out = PyTime_AsSecondsDouble(t);
        return 0;
    }
    #else
    static int dq_monotonic_python(double *out) {
        *out = _PyTime_AsSecondsDouble(_PyTime_GetMonotonicClock());
        return 0;
    }
    #endif

    static CYTHON_INLINE int dq_monotonic(double *out) {
        if (dq_monotonic_linux(out) == 0)
            return 0;
        return dq_monotonic_python(out);
    }
    """
    int dq_monotonic(double* out) except -1
