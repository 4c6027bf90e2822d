/* dq_await.h - a coroutine that needs no frame when it does not wait: what
 * the compiled aio queues' put() and get() return (src/_aioqueuecore.pyx, through
 * src/_await.pxd).
 *
 * ``await q.get()`` on an async def makes a coroutine object, its frame and,
 * on return, a StopIteration: pure overhead when an item is there.  Here
 * get() returns a small object that runs a C "start" function at its first
 * send (at await time, never at call time: a get never awaited takes
 * nothing).  The start function either finishes (a result or an exception:
 * returned as PYGEN_RETURN through am_send, no exception object) or makes
 * the slow coroutine (the face's Python _wait_get/_wait_put), to which every
 * later send, throw and close goes.  It is a collections.abc.Coroutine (the
 * module registers it), so create_task, wait_for, ensure_future and
 * asyncio.timeout take it as they take a coroutine.
 */
#ifndef DQ_AWAIT_H
#define DQ_AWAIT_H

#include "Python.h"
#include <string.h>
#include "dq_shortcuts.h"

/* start(queue, arg, &inner): the result (a new reference), with *inner
   left NULL; or NULL with an exception set; or, when it must wait, any
   new reference (dropped) with *inner set to the slow coroutine (a new
   reference).  Runs with the object's own references held. */
typedef PyObject *(*dq_await_start)(PyObject *, PyObject *, PyObject **);

typedef struct {
    dq_await_start start;
    const char *qualname; /* as the coroutine of the async def it replaces */
    PyObject *name;       /* __name__ and __qualname__ strings, made at init */
    PyObject *qualname_str;
} dq_await_kind;

#define DQ_AWAIT_MAX_KINDS 4
static dq_await_kind dq_await_kinds[DQ_AWAIT_MAX_KINDS];
static PyTypeObject *dq_await_type = NULL;
static PyObject *dq_await_fresh_stand_in = NULL; /* makes a native coroutine to throw into */

enum { DQ_FRESH = 0, DQ_WAITING = 1, DQ_DONE = 2 };

typedef struct {
    PyObject_HEAD
    PyObject *queue; /* NULL once done */
    PyObject *arg;   /* put's item, or NULL */
    PyObject *inner; /* the slow coroutine, while waiting */
    int kind;
    char state;
    char running; /* inside a send, throw or close: re-entry is refused */
} dq_await;

#if !DQ_GIL_BUILD
#define DQ_AWAIT_LOCK(o)  Py_BEGIN_CRITICAL_SECTION(o)
#define DQ_AWAIT_UNLOCK() Py_END_CRITICAL_SECTION()
#else
#define DQ_AWAIT_LOCK(o)  {
#define DQ_AWAIT_UNLOCK() }
#endif

#if DQ_SC_AWAIT_FREELIST
/* A few dead objects kept for the next put or get, as CPython's own
   freelists do (a shortcut, dq_shortcuts.h; the GIL guards it): no
   allocation and no GC link per call.  Each is untracked, cleared and
   never finalised; it holds no reference, not even to its type. */
#define DQ_AWAIT_FREELIST 8
static dq_await *dq_await_free[DQ_AWAIT_FREELIST];
static int dq_await_nfree = 0;
#endif

static PyObject *dq_await_new(PyObject *queue, int kind, PyObject *arg) {
    dq_await *self;
#ifdef DQ_AWAIT_FREELIST
    if (dq_await_nfree > 0) {
        self = dq_await_free[--dq_await_nfree];
        (void)PyObject_Init((PyObject *)self, dq_await_type); /* a new reference to the type too */
    } else
#endif
    {
        self = PyObject_GC_New(dq_await, dq_await_type);
        if (self == NULL) return NULL;
    }
    self->queue = Py_NewRef(queue);
    self->arg = Py_XNewRef(arg);
    self->inner = NULL;
    self->kind = kind;
    self->state = DQ_FRESH;
    self->running = 0;
    PyObject_GC_Track((PyObject *)self);
    return (PyObject *)self;
}

static void dq_await_finish(dq_await *self) {
    /* done for good: drop everything (which may run finalisers, with the
       object consistent) */
    PyObject *queue = self->queue, *arg = self->arg, *inner = self->inner;
    self->state = DQ_DONE;
    self->queue = self->arg = self->inner = NULL;
    Py_XDECREF(inner);
    Py_XDECREF(arg);
    Py_XDECREF(queue);
}

static int dq_await_refuse(dq_await *self) {
    /* 1 with an exception set if it cannot be resumed, as a coroutine says */
    if (self->running) {
        PyErr_SetString(PyExc_ValueError, "coroutine already executing");
        return 1;
    }
    if (self->state == DQ_DONE) {
        PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited coroutine");
        return 1;
    }
    return 0;
}

static PySendResult dq_await_send_locked(dq_await *self, PyObject *arg, PyObject **presult) {
    PyObject *inner, *res;
    PySendResult status;
    *presult = NULL;
    if (dq_await_refuse(self)) return PYGEN_ERROR;
    self->running = 1;
    if (self->state == DQ_FRESH) {
        PyObject *queue = Py_NewRef(self->queue), *item = Py_XNewRef(self->arg);
        if (arg != Py_None) {
            PyErr_SetString(PyExc_TypeError,
                            "can't send non-None value to a just-started coroutine");
            self->running = 0;
            Py_DECREF(queue);
            Py_XDECREF(item);
            return PYGEN_ERROR;
        }
        inner = NULL;
        res = dq_await_kinds[self->kind].start(queue, item, &inner);
        Py_DECREF(queue);
        Py_XDECREF(item);
        if (inner == NULL) { /* finished: a result or an exception */
            self->running = 0;
            dq_await_finish(self);
            *presult = res;
            return res != NULL ? PYGEN_RETURN : PYGEN_ERROR;
        }
        Py_XDECREF(res);
        self->state = DQ_WAITING;
        self->inner = inner;
        Py_CLEAR(self->arg); /* the slow coroutine holds what it needs */
    }
    inner = Py_NewRef(self->inner);
    status = PyIter_Send(inner, arg, presult);
    Py_DECREF(inner);
    self->running = 0;
    if (status != PYGEN_NEXT) dq_await_finish(self);
    return status;
}

static PySendResult dq_await_am_send(PyObject *op, PyObject *arg, PyObject **presult) {
    PySendResult status;
    DQ_AWAIT_LOCK(op)
    status = dq_await_send_locked((dq_await *)op, arg, presult);
    DQ_AWAIT_UNLOCK()
    return status;
}

static void dq_await_set_stop(PyObject *value) {
    /* StopIteration(value), steals value; a tuple or an exception stays the value */
    PyObject *exc = PyObject_CallOneArg(PyExc_StopIteration, value);
    Py_DECREF(value);
    if (exc != NULL) {
        PyErr_SetObject(PyExc_StopIteration, exc);
        Py_DECREF(exc);
    }
}

static PyObject *dq_await_iternext(PyObject *op) {
    PyObject *res;
    PySendResult status = dq_await_am_send(op, Py_None, &res);
    if (status == PYGEN_NEXT) return res;
    if (status == PYGEN_RETURN) {
        if (res == Py_None)
            Py_DECREF(res); /* NULL, no exception: StopIteration() */
        else
            dq_await_set_stop(res);
    }
    return NULL;
}

static PyObject *dq_await_send_method(PyObject *op, PyObject *arg) {
    PyObject *res;
    PySendResult status = dq_await_am_send(op, arg, &res);
    if (status == PYGEN_NEXT) return res;
    if (status == PYGEN_RETURN) {
        if (res == Py_None) {
            Py_DECREF(res);
            PyErr_SetNone(PyExc_StopIteration);
        } else {
            dq_await_set_stop(res);
        }
    }
    return NULL;
}

static PyObject *dq_await_str_throw = NULL, *dq_await_str_close = NULL;

static PyObject *dq_await_call_inner(dq_await *self, PyObject *target, PyObject *name,
                                     PyObject *const *args, Py_ssize_t nargs) {
    /* target.<name>(*args), the object marked running; done unless it yielded */
    PyObject *meth, *res = NULL;
    self->running = 1;
    meth = PyObject_GetAttr(target, name);
    if (meth != NULL) {
        res = PyObject_Vectorcall(meth, args, (size_t)nargs, NULL);
        Py_DECREF(meth);
    }
    self->running = 0;
    Py_DECREF(target);
    if (res == NULL || name == dq_await_str_close) dq_await_finish(self);
    return res;
}

static PyObject *dq_await_throw_locked(dq_await *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *target;
    if (dq_await_refuse(self)) return NULL;
    if (self->state == DQ_FRESH) {
        /* as a coroutine that has not started: nothing runs, the exception
           is raised and the coroutine is done.  A native coroutine that
           has not started either makes the exception from the arguments
           exactly as CPython does. */
        dq_await_finish(self);
        target = PyObject_CallNoArgs(dq_await_fresh_stand_in);
        if (target == NULL) return NULL;
    } else {
        target = Py_NewRef(self->inner);
    }
    return dq_await_call_inner(self, target, dq_await_str_throw, args, nargs);
}

static PyObject *dq_await_throw(PyObject *op, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *res;
    if (nargs < 1) {
        PyErr_Format(PyExc_TypeError, "throw expected at least 1 argument, got %zd", nargs);
        return NULL;
    }
    if (nargs > 3) {
        PyErr_Format(PyExc_TypeError, "throw expected at most 3 arguments, got %zd", nargs);
        return NULL;
    }
    DQ_AWAIT_LOCK(op)
    res = dq_await_throw_locked((dq_await *)op, args, nargs);
    DQ_AWAIT_UNLOCK()
    return res;
}

static PyObject *dq_await_close_locked(dq_await *self) {
    if (self->running) {
        PyErr_SetString(PyExc_ValueError, "coroutine already executing");
        return NULL;
    }
    if (self->state != DQ_WAITING) { /* never started (nothing taken), or done */
        dq_await_finish(self);
        Py_RETURN_NONE;
    }
    return dq_await_call_inner(self, Py_NewRef(self->inner), dq_await_str_close, NULL, 0);
}

static PyObject *dq_await_close(PyObject *op, PyObject *Py_UNUSED(ignored)) {
    PyObject *res;
    DQ_AWAIT_LOCK(op)
    res = dq_await_close_locked((dq_await *)op);
    DQ_AWAIT_UNLOCK()
    return res;
}

static PyObject *dq_await_self(PyObject *op) {
    return Py_NewRef(op);
}

static void dq_await_finalize(PyObject *op) {
    /* as a native coroutine: one that never started warns; one left
       waiting is closed (its slow coroutine's own finaliser does that) */
    dq_await *self = (dq_await *)op;
    if (self->state != DQ_FRESH) return;
    {
        DQ_ERR_SAVE();
        int err = PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "coroutine '%s' was never awaited",
                                   dq_await_kinds[self->kind].qualname);
        if (err < 0) PyErr_WriteUnraisable(op);
        DQ_ERR_RESTORE();
    }
}

static int dq_await_traverse(PyObject *op, visitproc visit, void *arg) {
    dq_await *self = (dq_await *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->queue);
    Py_VISIT(self->arg);
    Py_VISIT(self->inner);
    return 0;
}

static int dq_await_clear(PyObject *op) {
    dq_await *self = (dq_await *)op;
    self->state = DQ_DONE; /* a later send finds it done, never a NULL queue */
    Py_CLEAR(self->inner);
    Py_CLEAR(self->arg);
    Py_CLEAR(self->queue);
    return 0;
}

static void dq_await_dealloc(PyObject *op) {
    PyTypeObject *tp = Py_TYPE(op);
    /* the finaliser does something only for one never started: the
       others skip the call (most of them: every awaited put and get) */
    if (((dq_await *)op)->state == DQ_FRESH && PyObject_CallFinalizerFromDealloc(op) < 0)
        return; /* resurrected */
    PyObject_GC_UnTrack(op);
    dq_await_clear(op);
#ifdef DQ_AWAIT_FREELIST
    /* a finalised one keeps its mark (its finaliser would never run
       again): freed, as is any beyond the list's room */
    if (dq_await_nfree < DQ_AWAIT_FREELIST && !PyObject_GC_IsFinalized(op)) {
        dq_await_free[dq_await_nfree++] = (dq_await *)op;
        Py_DECREF(tp);
        return;
    }
#endif
    PyObject_GC_Del(op);
    Py_DECREF(tp);
}

static PyObject *dq_await_repr(PyObject *op) {
    return PyUnicode_FromFormat("<coroutine object %s at %p>",
                                dq_await_kinds[((dq_await *)op)->kind].qualname, op);
}

static PyObject *dq_await_get_name(PyObject *op, void *Py_UNUSED(closure)) {
    return Py_NewRef(dq_await_kinds[((dq_await *)op)->kind].name);
}

static PyObject *dq_await_get_qualname(PyObject *op, void *Py_UNUSED(closure)) {
    return Py_NewRef(dq_await_kinds[((dq_await *)op)->kind].qualname_str);
}

static PyObject *dq_await_get_await(PyObject *op, void *Py_UNUSED(closure)) {
    /* what it waits on (the slow coroutine), as a coroutine's cr_await */
    PyObject *res;
    DQ_AWAIT_LOCK(op)
    res = Py_NewRef(((dq_await *)op)->inner != NULL ? ((dq_await *)op)->inner : Py_None);
    DQ_AWAIT_UNLOCK()
    return res;
}

static PyObject *dq_await_get_running(PyObject *op, void *Py_UNUSED(closure)) {
    return PyBool_FromLong(((dq_await *)op)->running);
}

static PyMethodDef dq_await_methods[] = {
    {"send",  (PyCFunction)dq_await_send_method,           METH_O,
     "send(arg) -> send 'arg' into coroutine,\nreturn next iterated value or raise StopIteration."                          },
    {"throw", (PyCFunction)(void (*)(void))dq_await_throw, METH_FASTCALL,
     "throw(value)\nthrow(type[,value[,traceback]])\n\nRaise exception in coroutine, "
     "return next iterated value or raise StopIteration."                                                                   },
    {"close", dq_await_close,                              METH_NOARGS,   "close() -> raise GeneratorExit inside coroutine."},
    {NULL,    NULL,                                        0,             NULL                                              },
};

static PyGetSetDef dq_await_getset[] = {
    {"__name__",     dq_await_get_name,     NULL, NULL, NULL},
    {"__qualname__", dq_await_get_qualname, NULL, NULL, NULL},
    {"cr_await",     dq_await_get_await,    NULL, NULL, NULL},
    {"cr_running",   dq_await_get_running,  NULL, NULL, NULL},
    {NULL,           NULL,                  NULL, NULL, NULL},
};

static PyType_Slot dq_await_slots[] = {
    {Py_tp_dealloc,  (void *)dq_await_dealloc },
    {Py_tp_repr,     (void *)dq_await_repr    },
    {Py_tp_traverse, (void *)dq_await_traverse},
    {Py_tp_clear,    (void *)dq_await_clear   },
    {Py_tp_finalize, (void *)dq_await_finalize},
    {Py_tp_iter,     (void *)dq_await_self    },
    {Py_tp_iternext, (void *)dq_await_iternext},
    {Py_tp_methods,  (void *)dq_await_methods },
    {Py_tp_getset,   (void *)dq_await_getset  },
    {Py_am_await,    (void *)dq_await_self    },
    {Py_am_send,     (void *)dq_await_am_send },
    {0,              NULL                     },
};

static int dq_mark_coroutine_function(PyObject *func) {
    /* inspect.iscoroutinefunction(func) true, as for the async def it
       replaces.  From 3.12, inspect.markcoroutinefunction(func); before,
       CO_COROUTINE in the flags of its code object, as Cython marks an
       async def's (a shortcut, DQ_SC_CODE_FLAGS: that code object
       describes the function and is never run) */
#if DQ_MARK_COROUTINE_FUNCTION
    PyObject *inspect, *res;
    inspect = PyImport_ImportModule("inspect");
    if (inspect == NULL) return -1;
    res = PyObject_CallMethod(inspect, "markcoroutinefunction", "O", func);
    Py_DECREF(inspect);
    if (res == NULL) return -1;
    Py_DECREF(res);
    return 0;
#elif DQ_SC_CODE_FLAGS
    PyObject *code = PyObject_GetAttrString(func, "__code__");
    if (code == NULL) return -1;
    if (!PyCode_Check(code)) {
        Py_DECREF(code);
        PyErr_SetString(PyExc_TypeError, "not a function with a code object");
        return -1;
    }
    DQ_MARK_CODE_COROUTINE(code);
    Py_DECREF(code);
    return 0;
#else
    (void)func;
    PyErr_SetString(PyExc_SystemError, "no way to mark a coroutine function");
    return -1;
#endif
}

/* The type (named spec_name), the stand-in that makes an unstarted native
   coroutine, and the kinds' start functions and names (NULL ends them).
   Returns the type (a new reference), or NULL with an exception set. */
static PyObject *dq_await_ready(const char *spec_name, PyObject *stand_in,
                                const dq_await_start *starts, const char *const *qualnames) {
    static PyType_Spec spec;
    int i;
    for (i = 0; starts[i] != NULL; i++) {
        const char *dot = strrchr(qualnames[i], '.');
        if (i >= DQ_AWAIT_MAX_KINDS) {
            PyErr_SetString(PyExc_SystemError, "too many awaitable kinds");
            return NULL;
        }
        dq_await_kinds[i].start = starts[i];
        dq_await_kinds[i].qualname = qualnames[i];
        dq_await_kinds[i].qualname_str = PyUnicode_FromString(qualnames[i]);
        dq_await_kinds[i].name = PyUnicode_FromString(dot != NULL ? dot + 1 : qualnames[i]);
        if (dq_await_kinds[i].qualname_str == NULL || dq_await_kinds[i].name == NULL) return NULL;
    }
    dq_await_str_throw = PyUnicode_InternFromString("throw");
    dq_await_str_close = PyUnicode_InternFromString("close");
    if (dq_await_str_throw == NULL || dq_await_str_close == NULL) return NULL;
    dq_await_fresh_stand_in = Py_NewRef(stand_in);
    spec.name = spec_name;
    spec.basicsize = (int)sizeof(dq_await);
    spec.itemsize = 0;
    spec.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION;
    spec.slots = dq_await_slots;
    dq_await_type = (PyTypeObject *)PyType_FromSpec(&spec);
    return Py_XNewRef((PyObject *)dq_await_type);
}

#endif /* DQ_AWAIT_H */
