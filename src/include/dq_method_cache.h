/* dq_method_cache.h - what a type's attribute is, remembered under the
 * type's version tag (src/_aioqueuecore.pyx): the checks that let a C path stand
 * in for a Python-level method call.
 */
#ifndef DQ_METHOD_CACHE_H
#define DQ_METHOD_CACHE_H

#include "Python.h"
#include "dq_shortcuts.h"

/* found is method, or a method descriptor of the same C function (its copy
   made for a subclass by adopt_methods: the same code, a subclass's
   instances only).  Where the shortcut DQ_SC_METHOD_DESCR is off no such
   copy is made, and found is method or not the same. */
static inline int dq_same_method(PyObject *found, PyObject *method) {
    return found == method
           || (DQ_SC_METHOD_DESCR && found != NULL && Py_IS_TYPE(found, &PyMethodDescr_Type)
               && Py_IS_TYPE(method, &PyMethodDescr_Type)
               && DQ_METHOD_DEF(found) == DQ_METHOD_DEF(method));
}

/* A type last found to have the method a C path stands in for, one record
   per call site (only compared, never followed); DQ_TYPE_TAG is 0 where the
   shortcut DQ_SC_TYPE_TAG_CACHE is off, and then nothing is remembered. */
typedef struct {
    PyTypeObject *tp;
    unsigned int tag;
} dq_own_seen_t;
static dq_own_seen_t dq_own_time, dq_own_put_nowait, dq_own_empty, dq_own_get_nowait, dq_own_due;
static inline int dq_own_seen(dq_own_seen_t *c, PyTypeObject *tp) {
    unsigned int tag = DQ_TYPE_TAG(tp);
    return tp == c->tp && tag != 0 && tag == c->tag;
}
static inline void dq_own_see(dq_own_seen_t *c, PyTypeObject *tp) {
    unsigned int tag = DQ_TYPE_TAG(tp);
    if (tag != 0) {
        c->tp = tp;
        c->tag = tag;
    }
}

/* The time method of the loop type last seen, under the same rule. */
static PyTypeObject *dq_meth_type = NULL; /* compared only, never followed */
static unsigned int dq_meth_tag = 0;
static PyObject *dq_meth = NULL; /* strong */
static int dq_meth_mono = 0;
static inline PyObject *dq_meth_seen(PyTypeObject *tp, int *mono) {
    unsigned int tag = DQ_TYPE_TAG(tp);
    if (tp == dq_meth_type && tag != 0 && tag == dq_meth_tag) {
        *mono = dq_meth_mono;
        return dq_meth;
    }
    return NULL;
}
static inline unsigned int dq_type_tag(PyTypeObject *tp) {
    /* tp's version tag, 0 if it has no valid one */
    return DQ_TYPE_TAG(tp);
}
static int dq_meth_see(PyTypeObject *tp, unsigned int tag, PyObject *meth, int mono) {
    /* remember meth (a new reference taken) as tp's time while tp's tag is tag (not 0) */
    PyObject *old = dq_meth;
    if (tag == 0) return 0;
    dq_meth = Py_NewRef(meth);
    dq_meth_type = tp;
    dq_meth_tag = tag;
    dq_meth_mono = mono;
    Py_XDECREF(old); /* last: whatever it runs finds the cache consistent */
    return 1;
}
static inline int dq_is_method_like(PyObject *meth) {
    return PyType_HasFeature(Py_TYPE(meth), Py_TPFLAGS_METHOD_DESCRIPTOR);
}
static inline PyObject *dq_call_with(PyObject *meth, PyObject *self) {
    PyObject *args[1] = {self};
    return PyObject_Vectorcall(meth, args, 1, NULL);
}

#endif /* DQ_METHOD_CACHE_H */
