/* dq_context_snapshot.h - the context aio.Timer's callbacks run in
 * (src/_aiotimercore.pyx): one snapshot shared between timers while the current
 * context's variables stay the same, instead of a copy per timer.
 */
#ifndef DQ_CONTEXT_SNAPSHOT_H
#define DQ_CONTEXT_SNAPSHOT_H

#include "Python.h"
#include <string.h>
#include "dq_shortcuts.h"

/* The context snapshot: what a callback scheduled with context=None runs in.
   asyncio copies the current context for every callback (PyContext_CopyCurrent):
   an allocation and one more object for the cyclic GC to walk per timer.  A
   context copy is its variables (an immutable HAMT, shared by the copy) and
   nothing else until entered, so while the current context's variables are
   the very HAMT of the last snapshot, that snapshot is such a copy: timers
   share it, and each callback runs in a fresh copy of it (made when it runs),
   as each runs in its own copy in asyncio.  The snapshot's reference keeps
   its HAMT alive, so an equal pointer is the same variables.
   Reading the current context and its variables is a shortcut
   (DQ_SC_CONTEXT_SNAPSHOT in dq_shortcuts.h); the import proves it on this
   interpreter (dq_snap_prove) or every timer copies. */
static PyObject *dq_snap = NULL; /* the last snapshot (a context copy never entered) */
static int dq_snap_ok = 0;

/* Called inside ctx.run() just after a ContextVar was set in ctx (whose
   variables were before_vars, a strong reference): the shortcut's reads
   must see ctx as the current context, variables changed by the set, and
   a copy sharing them. */
static int dq_snap_prove(PyObject *ctx, PyObject *before_vars) {
#if DQ_SC_CONTEXT_SNAPSHOT
    PyObject *cur = DQ_CTX_CURRENT(), *copy, *vars;
    int ok;
    if (cur != ctx || !PyContext_CheckExact(ctx)) return 0;
    vars = DQ_CTX_VARS(ctx);
    if (vars == NULL || vars == before_vars || strcmp(Py_TYPE(vars)->tp_name, "hamt") != 0)
        return 0;
    copy = PyContext_CopyCurrent();
    if (copy == NULL) {
        PyErr_Clear();
        return 0;
    }
    ok = PyContext_CheckExact(copy) && DQ_CTX_VARS(copy) == vars;
    Py_DECREF(copy);
    dq_snap_ok = ok;
#endif
    return dq_snap_ok;
}

/* ctx's variables (a new reference) where the shortcut can read them, else None */
static PyObject *dq_snap_vars(PyObject *ctx) {
#if DQ_SC_CONTEXT_SNAPSHOT
    if (PyContext_CheckExact(ctx) && DQ_CTX_VARS(ctx) != NULL) return Py_NewRef(DQ_CTX_VARS(ctx));
#endif
    return Py_NewRef(Py_None);
}

/* A new reference to a context holding the current variables; *shared is
   set when it is the shared snapshot (the callback must run in a copy). */
static PyObject *dq_context_snapshot(int *shared) {
#if DQ_SC_CONTEXT_SNAPSHOT
    PyObject *cur, *s;
    if (dq_snap_ok) {
        cur = DQ_CTX_CURRENT();
        if (cur != NULL && PyContext_CheckExact(cur)) {
            *shared = 1;
            if (dq_snap != NULL && DQ_CTX_VARS(cur) == DQ_CTX_VARS(dq_snap)) {
                Py_INCREF(dq_snap);
                return dq_snap;
            }
            s = PyContext_Copy(cur);
            if (s == NULL) return NULL;
            Py_INCREF(s);
            Py_XSETREF(dq_snap, s); /* the old one's variables may run __del__: set first */
            return s;
        }
    }
#endif
    *shared = 0;
    return PyContext_CopyCurrent();
}

#endif /* DQ_CONTEXT_SNAPSHOT_H */
