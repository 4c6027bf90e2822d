# cython: language_level=3
# A coroutine that needs no frame when it does not wait: what the compiled
# aio queues' put() and get() return (_aioqueuecore).  The C is
# src/include/dq_await.h, which says how it works.

from cpython.object cimport PyObject

cdef extern from "dq_await.h":
    ctypedef object (*dq_await_start)(object, object, PyObject**)
    object dq_await_new(object queue, int kind, PyObject* arg)
    int dq_mark_coroutine_function(object func) except -1
    object dq_await_ready(const char* spec_name, object stand_in, const dq_await_start* starts,
                          const char* const* qualnames)
