/* dq_running_loop.h - asyncio.get_running_loop() as the aio cores call it
 * (src/_aioqueuecore.pyx).
 *
 * asyncio's C get_running_loop (METH_NOARGS) is called through its C
 * function, as the interpreter's vectorcall of it does, minus the generic
 * call's recursion check and argument handling (a shortcut,
 * DQ_SC_RUNNING_LOOP_CFUNC); any other function, or with the shortcut off,
 * by a call.
 */
#ifndef DQ_RUNNING_LOOP_H
#define DQ_RUNNING_LOOP_H

#include "Python.h"
#include "dq_shortcuts.h"

static PyCFunction dq_grl = NULL;
static PyObject *dq_grl_self = NULL; /* borrowed: _get_running_loop holds it */
static int dq_grl_setup(PyObject *f) {
    if (DQ_SC_RUNNING_LOOP_CFUNC && PyCFunction_CheckExact(f)
        && (PyCFunction_GET_FLAGS(f) & ~METH_COEXIST) == METH_NOARGS) {
        dq_grl = PyCFunction_GET_FUNCTION(f);
        dq_grl_self = PyCFunction_GET_SELF(f);
    }
    return dq_grl != NULL;
}
static inline PyObject *dq_running_loop(PyObject *f) {
    if (dq_grl != NULL) return dq_grl(dq_grl_self, NULL);
    return PyObject_CallNoArgs(f);
}

#endif /* DQ_RUNNING_LOOP_H */
