/* dq_shortcuts.h - every place where dq_core's compiled cores reach past
 * CPython's public C API, or lean on what one CPython version happens to do.
 *
 * The rule (no PY_VERSION_HEX and no _Py* symbol outside this file):
 *  - A shortcut that mirrors a private layout, reuses memory the interpreter
 *    manages or hides objects from the cyclic GC is on only for the CPython
 *    minor versions dq_core's suite has run on: DQ_TESTED (3.10 up to
 *    DQ_TESTED_UP_TO).  A newer CPython takes the public path until the suite
 *    has passed on it and DQ_TESTED_UP_TO is raised.
 *  - A free-threaded build (no DQ_GIL_BUILD) takes the public path unless the
 *    shortcut is shown safe there (none is, yet).
 *  - One switch per shortcut, DQ_SC_<NAME> (0 or 1), its public-API fallback
 *    beside it.  Most can be forced off at build time (CFLAGS=-DDQ_SC_<NAME>=0),
 *    to measure what one is worth.  DQ_SHORTCUT_TABLE lists them for the SHORTCUTS mapping each
 *    compiled core exposes (tests read it; pytest prints it in its header).
 *  - Plain API differences between versions (a function added in 3.12) are
 *    DQ_PY3xx feature tests, also here, so the cores test no version.
 */
#ifndef DQ_SHORTCUTS_H
#define DQ_SHORTCUTS_H

#include "Python.h"

/* -- the gates ------------------------------------------------------------ */

/* the newest CPython minor the whole suite has passed on (0x030F: 3.15) */
#define DQ_TESTED_UP_TO 0x030F
#define DQ_TESTED       ((PY_VERSION_HEX >> 16) <= DQ_TESTED_UP_TO)

#ifdef Py_GIL_DISABLED
#define DQ_GIL_BUILD 0
#else
#define DQ_GIL_BUILD 1
#endif

#define DQ_PY311 (PY_VERSION_HEX >= 0x030B0000)
#define DQ_PY312 (PY_VERSION_HEX >= 0x030C0000)
#define DQ_PY313 (PY_VERSION_HEX >= 0x030D0000)

/* -- version differences of the public API (no shortcut) ------------------ */

/* a str's kind and data may be read: before 3.12 a legacy str may not be "ready" */
#if DQ_PY312
#define DQ_STR_READY(s) 1
#else
#define DQ_STR_READY(s) PyUnicode_IS_READY(s)
#endif

/* the raised exception saved and restored around a warning */
#if DQ_PY312
#define DQ_ERR_SAVE()    PyObject *dq_saved_exc = PyErr_GetRaisedException()
#define DQ_ERR_RESTORE() PyErr_SetRaisedException(dq_saved_exc)
#else
#define DQ_ERR_SAVE()                                \
    PyObject *dq_saved_t, *dq_saved_v, *dq_saved_tb; \
    PyErr_Fetch(&dq_saved_t, &dq_saved_v, &dq_saved_tb)
#define DQ_ERR_RESTORE() PyErr_Restore(dq_saved_t, dq_saved_v, dq_saved_tb)
#endif

/* a list's items i and j swapped through the public macros (atomic stores
   on a free-threaded build) */
Py_LOCAL_INLINE(void) dq_list_swap(PyObject *list, Py_ssize_t i, Py_ssize_t j) {
    PyObject *t = PyList_GET_ITEM(list, i);
    PyList_SET_ITEM(list, i, PyList_GET_ITEM(list, j));
    PyList_SET_ITEM(list, j, t);
}

/* dict watchers (3.12+) tell when time.monotonic may have been replaced; with
   the GIL only (the flag they clear is not atomic) */
#define DQ_DICT_WATCH (DQ_PY312 && DQ_GIL_BUILD)

/* inspect.markcoroutinefunction exists (3.12+) */
#define DQ_MARK_COROUTINE_FUNCTION DQ_PY312

/* -- shortcut: the current context's variables, read in place --------------
   aio.Timer shares one context snapshot between timers while the current
   context's variables (an immutable HAMT) are the snapshot's.  That reads
   tstate->context and PyContext's private layout (ctx_prev, ctx_vars; the
   same from 3.7 to 3.15); the import proves both (dq_ctx_proved) or the
   shortcut stays off.  Fallback: PyContext_CopyCurrent for every timer. */
#if DQ_GIL_BUILD && DQ_TESTED && !defined(Py_LIMITED_API)
#define DQ_SC_CONTEXT_SNAPSHOT 1
typedef struct {
    PyObject_HEAD
    PyObject *ctx_prev;
    PyObject *ctx_vars;
} dq_ctx_head;
#define DQ_CTX_VARS(ctx) (((dq_ctx_head *)(ctx))->ctx_vars)
#define DQ_CTX_CURRENT() (PyThreadState_Get()->context) /* borrowed, may be NULL */
#else
#define DQ_SC_CONTEXT_SNAPSHOT 0
#define DQ_CTX_VARS(ctx)       ((PyObject *)NULL)
#define DQ_CTX_CURRENT()       ((PyObject *)NULL)
#endif

/* -- shortcut: pending timer handles off the GC's lists --------------------
   A million pending handles are walked by every full collection; while the
   loop holds their Timer none can be garbage, so they are untracked and
   tracked again as they leave.  Fallback: they stay tracked. */
#ifndef DQ_SC_UNTRACK_PENDING
#define DQ_SC_UNTRACK_PENDING (DQ_GIL_BUILD && DQ_TESTED)
#endif

/* -- shortcut: a freelist of finished put()/get() coroutine objects --------
   Reuses GC-managed memory the allocator handed out (PyObject_Init on a dead
   object).  Fallback: PyObject_GC_New and PyObject_GC_Del every time. */
#ifndef DQ_SC_AWAIT_FREELIST
#define DQ_SC_AWAIT_FREELIST (DQ_GIL_BUILD && DQ_TESTED)
#endif

/* -- shortcut: CO_COROUTINE written into a code object's co_flags ----------
   So that inspect.iscoroutinefunction(q.get) is true before 3.12; from 3.12
   the public path, inspect.markcoroutinefunction, does it. */
#ifndef DQ_SC_CODE_FLAGS
#define DQ_SC_CODE_FLAGS (!DQ_MARK_COROUTINE_FUNCTION && DQ_TESTED)
#endif
#if DQ_SC_CODE_FLAGS
#define DQ_MARK_CODE_COROUTINE(code) (((PyCodeObject *)(code))->co_flags |= CO_COROUTINE)
#else
#define DQ_MARK_CODE_COROUTINE(code) ((void)(code))
#endif

/* -- shortcut: attribute lookups remembered under a type's version tag -----
   A type seen to have the core's own method keeps that finding while its
   tp_version_tag is unchanged.  Not on 3.10: sys._clear_type_cache() restarts
   the tag counter there, so a changed type can get an old tag back.
   Fallback: the lookup every time. */
#ifndef DQ_SC_TYPE_TAG_CACHE
#define DQ_SC_TYPE_TAG_CACHE (DQ_GIL_BUILD && DQ_TESTED && DQ_PY311)
#endif
#if DQ_SC_TYPE_TAG_CACHE
#if DQ_PY312 /* a changed type's tag is 0 until looked up again */
#define DQ_TYPE_TAG(tp) ((tp)->tp_version_tag)
#else
#define DQ_TYPE_TAG(tp) \
    (((tp)->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? (tp)->tp_version_tag : 0u)
#endif
#else
#define DQ_TYPE_TAG(tp) ((void)(tp), 0u)
#endif

/* -- shortcut: _PyType_Lookup ----------------------------------------------
   What type(obj).<name> finds in the MRO's dicts, without descriptors: a new
   reference, or NULL (never an error set).  Shortcut: the interpreter's
   cached lookup (a borrowed result, taken at once).  Fallback: the MRO walked
   through public calls. */
#ifndef DQ_SC_TYPE_LOOKUP
#define DQ_SC_TYPE_LOOKUP (DQ_GIL_BUILD && DQ_TESTED)
#endif
Py_LOCAL_INLINE(PyObject *) dq_type_lookup(PyTypeObject *tp, PyObject *name) {
#if DQ_SC_TYPE_LOOKUP
    return Py_XNewRef(_PyType_Lookup(tp, name));
#else
    PyObject *mro, *res = NULL;
    Py_ssize_t i, n;
    mro = PyObject_GetAttrString((PyObject *)tp, "__mro__");
    if (mro == NULL || !PyTuple_Check(mro)) {
        Py_XDECREF(mro);
        PyErr_Clear();
        return NULL;
    }
    n = PyTuple_GET_SIZE(mro);
    for (i = 0; i < n && res == NULL; i++) {
        PyObject *base = PyTuple_GET_ITEM(mro, i), *d;
        if (!PyType_Check(base)) continue;
#if DQ_PY312
        d = PyType_GetDict((PyTypeObject *)base);
#else
        d = Py_XNewRef(((PyTypeObject *)base)->tp_dict);
#endif
        if (d == NULL) continue;
#if DQ_PY313
        if (PyDict_GetItemRef(d, name, &res) < 0) {
            PyErr_Clear();
            res = NULL;
        }
#else
        res = Py_XNewRef(PyDict_GetItemWithError(d, name));
        if (res == NULL) PyErr_Clear();
#endif
        Py_DECREF(d);
    }
    Py_DECREF(mro);
    return res;
#endif
}

/* -- shortcut: an instance's own dict read through _PyObject_GetDictPtr ---
   1 if obj's own __dict__ may hold name, 0 if it surely does not.  Shortcut:
   the dict read in place (no call can run in between with the GIL held), and
   an object with no dict yet has none made.  Fallback: PyObject_GenericGetDict,
   a strong reference; but it makes the dict of an object whose attributes
   are still inline values, which costs the interpreter's specialised access
   to that object's attributes afterwards (callgrind, 3.13, aio 4 producers
   + 4 consumers: about 700 instructions more per item). */
#ifndef DQ_SC_INSTANCE_DICT_PTR
#define DQ_SC_INSTANCE_DICT_PTR (DQ_GIL_BUILD && DQ_TESTED)
#endif
Py_LOCAL_INLINE(int) dq_instance_may_hold(PyObject *obj, PyObject *name) {
    int found;
#if DQ_SC_INSTANCE_DICT_PTR
    PyObject **dp = _PyObject_GetDictPtr(obj); /* NULL: no dict could be made */
    if (dp == NULL) {
        PyErr_Clear();
        return 1;
    }
    if (*dp == NULL) return 0;
    found = PyDict_Contains(*dp, name); /* no error state saved and restored */
#else
    PyObject *d = PyObject_GenericGetDict(obj, NULL);
    if (d == NULL) {
        PyErr_Clear();
        return 1;
    }
    found = PyDict_Contains(d, name);
    Py_DECREF(d);
#endif
    if (found < 0) {
        PyErr_Clear();
        return 1;
    }
    return found;
}

/* -- shortcut: asyncio's C get_running_loop called through its C function --
   As the interpreter's vectorcall of a METH_NOARGS function does, minus the
   recursion check.  Fallback: PyObject_CallNoArgs. */
#ifndef DQ_SC_RUNNING_LOOP_CFUNC
#define DQ_SC_RUNNING_LOOP_CFUNC (DQ_GIL_BUILD && DQ_TESTED)
#endif

/* -- shortcut: asyncio's running-loop entry in the thread state's dict -----
   Before 3.12, asyncio's C get_running_loop() asks the OS for the process id
   on every call; the entry it keeps in the thread state's dict (an asyncio
   private) tells whether the loop last seen still runs.  3.12+ keeps no such
   entry: there, always the call. */
#ifndef DQ_SC_RUNNING_LOOP_ENTRY
#define DQ_SC_RUNNING_LOOP_ENTRY (DQ_GIL_BUILD && DQ_TESTED && !DQ_PY312)
#endif

/* -- shortcut: a method descriptor's C method read in place ---------------
   PyMethodDescrObject's d_method (CPython's own layout, outside the stable
   API): adopt_methods gives a class its own descriptor of an inherited C
   method (PyDescr_NewMethod), so that CPython's specialised call takes it,
   and the aio cores know such a copy for the method it copies.  Fallback:
   no copies (a subclass's instances take the generic call), and a method is
   known only by identity. */
#ifndef DQ_SC_METHOD_DESCR
#define DQ_SC_METHOD_DESCR (DQ_GIL_BUILD && DQ_TESTED)
#endif
#if DQ_SC_METHOD_DESCR
#define DQ_METHOD_DEF(descr) (((PyMethodDescrObject *)(descr))->d_method)
#else
#define DQ_METHOD_DEF(descr) ((void)(descr), (PyMethodDef *)NULL)
#endif

/* -- shortcut: list.append with the room check inline ----------------------
   As Cython's own list.append: while the list has room (PyListObject's
   allocated), the item is stored and the size raised in place.  Fallback:
   PyList_Append (on a free-threaded build the one that publishes a list's
   items and size atomically, for lock-free readers). */
#ifndef DQ_SC_LIST_APPEND
#define DQ_SC_LIST_APPEND (DQ_GIL_BUILD && DQ_TESTED)
#endif
/* 0, or -1 with an exception set */
Py_LOCAL_INLINE(int) dq_list_append(PyObject *list, PyObject *x) {
#if DQ_SC_LIST_APPEND
    PyListObject *L = (PyListObject *)list;
    Py_ssize_t len = Py_SIZE(list);
    if (L->allocated > len) {
        Py_INCREF(x);
        PyList_SET_ITEM(list, len, x);
        Py_SET_SIZE(list, len + 1);
        return 0;
    }
#endif
    return PyList_Append(list, x);
}

/* -- shortcut: the list's item array moved as a heap's "hole" --------------
   ItemHeap's sifts hold the sifted item aside and leave its list slot stale
   until they write it back (no code runs meanwhile).  Fallback: swaps
   through PyList_GET_ITEM/PyList_SET_ITEM, the list always a permutation. */
#ifndef DQ_SC_LIST_HOLE
#define DQ_SC_LIST_HOLE (DQ_GIL_BUILD && DQ_TESTED)
#endif

/* -- shortcut: time.monotonic() read with clock_gettime --------------------
   On Linux, CPython's time.monotonic() (3.10-3.15) is clock_gettime(
   CLOCK_MONOTONIC) made into nanoseconds, then seconds by
   PyTime_AsSecondsDouble's rule: read so directly (CPython adds overflow
   checks that cannot trip, and costs twice the reading).  Fallback:
   PyTime_Monotonic (3.13+), or before 3.13, where only the private reading
   exists in C, a call of time.monotonic(). */
#if defined(__linux__) && DQ_TESTED
#define DQ_SC_MONOTONIC_CLOCK_GETTIME 1
#else
#define DQ_SC_MONOTONIC_CLOCK_GETTIME 0
#endif

#if DQ_SC_MONOTONIC_CLOCK_GETTIME
#include <time.h>
Py_LOCAL_INLINE(int) dq_monotonic_direct(double *out) {
    struct timespec ts;
    long long t;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return -1;
    t = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (t % 1000000000LL == 0)
        *out = (double)(t / 1000000000LL);
    else
        *out = (double)t / 1e9;
    return 0;
}
#else
#define dq_monotonic_direct(out) (-1)
#endif

/* time.monotonic() into *out; -1 with an exception set on failure */
Py_LOCAL_INLINE(int) dq_monotonic_public(double *out) {
#if DQ_PY313
    PyTime_t t;
    if (PyTime_Monotonic(&t) < 0) return -1;
    *out = PyTime_AsSecondsDouble(t);
    return 0;
#else
    PyObject *time, *v;
    double d;
    time = PyImport_ImportModule("time");
    if (time == NULL) return -1;
    v = PyObject_CallMethod(time, "monotonic", NULL);
    Py_DECREF(time);
    if (v == NULL) return -1;
    d = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    *out = d;
    return 0;
#endif
}

Py_LOCAL_INLINE(int) dq_monotonic(double *out) {
    if (dq_monotonic_direct(out) == 0) return 0;
    return dq_monotonic_public(out);
}

/* -- shortcut: an int's digits read and written in place -------------------
   The handles of Heap and TimingWheel are ints of up to 128 bits (a
   container id above a generation and a slot: dq_core/_handles.py).  Read
   and made through PyLongObject's digits (CPython's own layout: ob_size
   before 3.12, lv_tag from 3.12), as Cython's own conversions do, they
   cost what a 64-bit int costs.  Fallback: the public API, through a shift
   by 64 bits (an int made and dropped each time). */
#ifndef DQ_SC_LONG_DIGITS
#define DQ_SC_LONG_DIGITS (DQ_GIL_BUILD && DQ_TESTED)
#endif
#if DQ_SC_LONG_DIGITS && !DQ_PY311
#include "longintrepr.h" /* before 3.11, Python.h leaves it out */
#endif
#if DQ_SC_LONG_DIGITS
#if DQ_PY312
#define DQ_LONG_DIGIT(v)    (((PyLongObject *)(v))->long_value.ob_digit)
#define DQ_LONG_NEGATIVE(v) ((((PyLongObject *)(v))->long_value.lv_tag & 3) == 2)
#define DQ_LONG_NDIGITS(v)  ((Py_ssize_t)(((PyLongObject *)(v))->long_value.lv_tag >> 3))
#else
#define DQ_LONG_DIGIT(v)    (((PyLongObject *)(v))->ob_digit)
#define DQ_LONG_NEGATIVE(v) (Py_SIZE(v) < 0)
#define DQ_LONG_NDIGITS(v)  (Py_SIZE(v))
#endif
#endif

#if DQ_SC_LONG_DIGITS
/* A new positive int of n digits d (n >= 1): 3.14 made _PyLong_New deprecated
   for PyLongWriter (PEP 757), whose digits are the same */
Py_LOCAL_INLINE(PyObject *) dq_long_from_digits(const digit *d, Py_ssize_t n) {
    Py_ssize_t i;
#if PY_VERSION_HEX >= 0x030E0000
    void *out;
    PyLongWriter *w = PyLongWriter_Create(0, n, &out);
    if (w == NULL) return NULL;
    for (i = 0; i < n; i++)
        ((digit *)out)[i] = d[i];
    return PyLongWriter_Finish(w);
#else
    PyLongObject *v = _PyLong_New(n);
    if (v == NULL) return NULL;
    for (i = 0; i < n; i++)
        DQ_LONG_DIGIT(v)[i] = d[i];
    return (PyObject *)v;
#endif
}
#endif

/* The int hi * 2**64 + lo: a new reference, or NULL with an exception set. */
Py_LOCAL_INLINE(PyObject *) dq_long_from_u128(unsigned long long hi, unsigned long long lo) {
    if (hi == 0) return PyLong_FromUnsignedLongLong(lo);
#if DQ_SC_LONG_DIGITS
    {
        digit d[(128 + PyLong_SHIFT - 1) / PyLong_SHIFT];
        Py_ssize_t n = 0;
#if PyLong_SHIFT == 30
        if (hi < (1ULL << 26)) { /* a wide handle: three digits, made straight */
            d[0] = (digit)(lo & PyLong_MASK);
            d[1] = (digit)((lo >> 30) & PyLong_MASK);
            d[2] = (digit)((lo >> 60) | (hi << 4));
            return dq_long_from_digits(d, 3);
        }
#endif
        while (hi | lo) {
            d[n++] = (digit)(lo & PyLong_MASK);
            lo = (lo >> PyLong_SHIFT) | (hi << (64 - PyLong_SHIFT));
            hi >>= PyLong_SHIFT;
        }
        return dq_long_from_digits(d, n);
    }
#else
    {
        PyObject *h, *shift, *high, *low, *out;
        h = PyLong_FromUnsignedLongLong(hi);
        if (h == NULL) return NULL;
        shift = PyLong_FromLong(64);
        if (shift == NULL) {
            Py_DECREF(h);
            return NULL;
        }
        high = PyNumber_Lshift(h, shift);
        Py_DECREF(h);
        Py_DECREF(shift);
        if (high == NULL) return NULL;
        low = PyLong_FromUnsignedLongLong(lo);
        if (low == NULL) {
            Py_DECREF(high);
            return NULL;
        }
        out = PyNumber_Or(high, low);
        Py_DECREF(high);
        Py_DECREF(low);
        return out;
    }
#endif
}

/* For v, an exact int: 1 with *hi and *lo set if 0 <= v < 2**128 (v is
   *hi * 2**64 + *lo), 0 if v is out of that range (nothing raised), -1 with
   an exception set if the fallback ran out of memory. */
Py_LOCAL_INLINE(int) dq_long_as_u128(PyObject *v, unsigned long long *hi, unsigned long long *lo) {
#if DQ_SC_LONG_DIGITS
    Py_ssize_t i, n;
    unsigned long long h = 0, l = 0;
    if (DQ_LONG_NEGATIVE(v)) return 0;
    n = DQ_LONG_NDIGITS(v);
#if PyLong_SHIFT == 30
    if (n == 2) { /* a compact handle, read straight */
        const digit *d = DQ_LONG_DIGIT(v);
        *lo = (unsigned long long)d[0] | ((unsigned long long)d[1] << 30);
        *hi = 0;
        return 1;
    }
    if (n == 3) { /* a wide handle, read straight */
        const digit *d = DQ_LONG_DIGIT(v);
        *lo = (unsigned long long)d[0] | ((unsigned long long)d[1] << 30)
              | ((unsigned long long)d[2] << 60);
        *hi = (unsigned long long)d[2] >> 4;
        return 1;
    }
#endif
    if (n > (128 + PyLong_SHIFT - 1) / PyLong_SHIFT) return 0;
    for (i = n - 1; i >= 0; i--) {
        if (h >> (64 - PyLong_SHIFT)) return 0; /* 2**128 or more */
        h = (h << PyLong_SHIFT) | (l >> (64 - PyLong_SHIFT));
        l = (l << PyLong_SHIFT) | DQ_LONG_DIGIT(v)[i];
    }
    *hi = h;
    *lo = l;
    return 1;
#else
    int overflow = 0;
    long long small = PyLong_AsLongLongAndOverflow(v, &overflow);
    PyObject *shift, *high;
    unsigned long long h;
    if (!overflow) {
        if (small == -1 && PyErr_Occurred()) return -1;
        if (small < 0) return 0;
        *hi = 0;
        *lo = (unsigned long long)small;
        return 1;
    }
    if (overflow < 0) return 0;
    shift = PyLong_FromLong(64);
    if (shift == NULL) return -1;
    high = PyNumber_Rshift(v, shift);
    Py_DECREF(shift);
    if (high == NULL) return -1;
    h = PyLong_AsUnsignedLongLong(high);
    Py_DECREF(high);
    if (h == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear(); /* 2**128 or more */
        return 0;
    }
    *lo = PyLong_AsUnsignedLongLongMask(v);
    if (*lo == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *hi = h;
    return 1;
#endif
}

/* -- the table ------------------------------------------------------------- */

/* name -> switch, in the order the SHORTCUTS mappings show them */
#define DQ_SHORTCUT_TABLE(X)                        \
    X(context_snapshot, DQ_SC_CONTEXT_SNAPSHOT)     \
    X(untrack_pending, DQ_SC_UNTRACK_PENDING)       \
    X(await_freelist, DQ_SC_AWAIT_FREELIST)         \
    X(code_flags, DQ_SC_CODE_FLAGS)                 \
    X(type_tag_cache, DQ_SC_TYPE_TAG_CACHE)         \
    X(type_lookup, DQ_SC_TYPE_LOOKUP)               \
    X(instance_dict_ptr, DQ_SC_INSTANCE_DICT_PTR)   \
    X(running_loop_cfunc, DQ_SC_RUNNING_LOOP_CFUNC) \
    X(running_loop_entry, DQ_SC_RUNNING_LOOP_ENTRY) \
    X(method_descr, DQ_SC_METHOD_DESCR)             \
    X(list_append, DQ_SC_LIST_APPEND)               \
    X(list_hole, DQ_SC_LIST_HOLE)                   \
    X(long_digits, DQ_SC_LONG_DIGITS)               \
    X(monotonic_clock_gettime, DQ_SC_MONOTONIC_CLOCK_GETTIME)

/* {name: bool} of every shortcut this build compiled in (a new dict) */
Py_LOCAL_INLINE(PyObject *) dq_shortcut_switches(void) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
#define DQ_SC_ITEM(name, on)                                             \
    if (PyDict_SetItemString(d, #name, (on) ? Py_True : Py_False) < 0) { \
        Py_DECREF(d);                                                    \
        return NULL;                                                     \
    }
    DQ_SHORTCUT_TABLE(DQ_SC_ITEM)
#undef DQ_SC_ITEM
    return d;
}

#endif /* DQ_SHORTCUTS_H */
