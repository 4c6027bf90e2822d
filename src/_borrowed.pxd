# cython: language_level=3
# Public CPython macros declared to take a PyObject*: a core passes
# <PyObject*>self._x, which takes no reference.  Declared with an object
# argument, Cython increfs and decrefs the attribute around every call (two
# refcount updates, each with a branch for immortal objects since 3.12), which
# on a hot path such as a heap comparison costs more than the macro.  None of
# these runs Python code, so nothing can rebind the attribute meanwhile.

from cpython.object cimport PyObject

cdef extern from "Python.h":
    Py_ssize_t dq_size "Py_SIZE"(PyObject* o) noexcept
    PyObject* dq_list_item "PyList_GET_ITEM"(PyObject* list, Py_ssize_t i) noexcept
    Py_ssize_t dq_list_size "PyList_GET_SIZE"(PyObject* list) noexcept
