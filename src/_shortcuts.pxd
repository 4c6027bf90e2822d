# cython: language_level=3
# The compiled cores' one door to src/include/dq_shortcuts.h: every shortcut
# past CPython's public API, its switch and its public fallback.  A core
# cimports what it uses from here; nothing else names a CPython version.

from cpython.object cimport PyObject, PyTypeObject

cdef extern from "dq_shortcuts.h":
    # the switches (0 or 1, fixed at compile time)
    bint DQ_GIL_BUILD
    bint DQ_SC_CONTEXT_SNAPSHOT
    bint DQ_SC_UNTRACK_PENDING
    bint DQ_SC_AWAIT_FREELIST
    bint DQ_SC_CODE_FLAGS
    bint DQ_SC_TYPE_TAG_CACHE
    bint DQ_SC_TYPE_LOOKUP
    bint DQ_SC_RUNNING_LOOP_CFUNC
    bint DQ_SC_RUNNING_LOOP_ENTRY
    bint DQ_SC_METHOD_DESCR
    bint DQ_SC_LIST_APPEND
    bint DQ_SC_LIST_HOLE
    bint DQ_SC_LONG_DIGITS
    bint DQ_SC_MONOTONIC_CLOCK_GETTIME
    bint DQ_MARK_COROUTINE_FUNCTION

    dict dq_shortcut_switches()
    # type(obj).<name> as the MRO's dicts hold it: a new reference, or NULL
    PyObject* dq_type_lookup(PyTypeObject* tp, object name)
    # a method descriptor's PyMethodDef (NULL where DQ_SC_METHOD_DESCR is off)
    ctypedef struct PyMethodDef:
        pass
    PyMethodDef* DQ_METHOD_DEF(object descr)
    # the int hi * 2**64 + lo (a handle), and back: 1 if 0 <= v < 2**128, else 0
    object dq_long_from_u128(unsigned long long hi, unsigned long long lo)
    int dq_long_as_u128(object v, unsigned long long* hi, unsigned long long* lo) except -1
    # time.monotonic(), read in C
    int dq_monotonic(double* out) except -1
