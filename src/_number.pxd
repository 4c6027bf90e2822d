# cython: language_level=3
# Number conversion without calling into Python, shared by the compiled cores.
# The full rules (and every error message) live in dq_core._convert.to_real;
# this is only its fast path, so both implementations accept the same values.

from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsLongLongAndOverflow

cdef extern from *:
    """
    #define DQ_MAX_EXACT_INT 9007199254740992LL  /* 2**53, dq_core._convert.MAX_EXACT_INT */
    """
    long long DQ_MAX_EXACT_INT


cdef inline bint fast_key(object x, double* out) noexcept:
    # Exact floats and ints within +-2**53 (NaN excluded).
    cdef double d
    cdef long long v
    cdef int overflow = 0
    if type(x) is float:
        d = PyFloat_AS_DOUBLE(x)
        if d == d:
            out[0] = d
            return True
    elif type(x) is int:
        v = PyLong_AsLongLongAndOverflow(x, &overflow)
        if not overflow and -DQ_MAX_EXACT_INT <= v <= DQ_MAX_EXACT_INT:
            out[0] = <double>v
            return True
    return False


cdef extern from *:
    """
    #ifdef DQ_CORE_DEBUG
    #define DQ_DEBUG_BUILD 1  /* setup.py with DQ_CORE_DEBUG=1: bounds checks on */
    #else
    #define DQ_DEBUG_BUILD 0
    #endif
    """
    const int DQ_DEBUG_BUILD


cdef inline double _real(object value, str name) except? -1.0:
    # value as a double: fast_key's values at once, anything else through
    # dq_core._convert.to_real, which holds the rules and names the
    # argument in its errors.
    cdef double d
    if fast_key(value, &d):
        return d
    from dq_core._convert import to_real  # off the fast path only
    return to_real(value, name)
