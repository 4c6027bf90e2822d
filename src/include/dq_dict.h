/* dq_dict.h - TTLDict's dict reads (src/_ttldictcore.pyx), as new references.
 */
#ifndef DQ_DICT_H
#define DQ_DICT_H

#include "Python.h"
#include "dq_shortcuts.h"

/* d[k] as a new reference, None if absent, NULL on error.  A borrowed
   reference is safe only while nothing else can change the dict: with
   the GIL it is owned at once; a free-threaded build asks for it owned. */
static inline PyObject *dq_dict_get(PyObject *d, PyObject *k) {
#if !DQ_GIL_BUILD
    PyObject *v;
    if (PyDict_GetItemRef(d, k, &v) < 0) return NULL;
    return v ? v : Py_NewRef(Py_None);
#else
    PyObject *v = PyDict_GetItemWithError(d, k);
    if (v == NULL && PyErr_Occurred()) return NULL;
    v = v ? v : Py_None;
    Py_INCREF(v);
    return v;
#endif
}

/* d.setdefault(k, v) as a new reference, NULL on error: owned at once,
   as dq_dict_get's (a free-threaded build asks for it owned). */
static inline PyObject *dq_dict_setdefault(PyObject *d, PyObject *k, PyObject *v) {
#if !DQ_GIL_BUILD
    PyObject *r;
    if (PyDict_SetDefaultRef(d, k, v, &r) < 0) return NULL;
    return r;
#else
    PyObject *r = PyDict_SetDefault(d, k, v);
    Py_XINCREF(r);
    return r;
#endif
}

#endif /* DQ_DICT_H */
