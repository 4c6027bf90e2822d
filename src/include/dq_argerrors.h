/* dq_argerrors.h - a compiled method called with missing, extra or unknown
 * arguments raises the TypeError CPython raises for its pure twin, word for
 * word: "Heap.push() missing 1 required positional argument: 'item'".
 *
 * Cython's argument parsing says "push() takes exactly 2 positional
 * arguments (1 given)", and offers no directive to change it.  Its wrappers
 * report those errors through two calls, __Pyx_RaiseArgtupleInvalid (too
 * few or too many positional arguments) and __Pyx_RejectKeywords (a keyword
 * given to a method taking none), and through __PYX_ERR after its keyword
 * parser failed (an unknown keyword, a value given twice).  A core includes
 * this header after Cython's own definitions (cdef extern from, in each
 * .pyx), and the macros below route these three here, where
 * dq_core._argerrors.message words CPython's message from what the wrapper
 * holds: self, the positional counts and the keywords (the names come from
 * the method's signature).  Only error paths change: these run after the
 * arguments were found wrong, never on a good call.
 *
 * The class a message names is the public one a user reached (the first
 * in type(self).__mro__ defined in dq_core); the pure twins' methods carry
 * the same class in their __qualname__.  Outside a method (no self) the
 * message names the function alone.
 */
#ifndef DQ_ARGERRORS_H
#define DQ_ARGERRORS_H

#include "Python.h"
#include "dq_shortcuts.h"

/* Stand-ins for the wrapper locals the macros read, for a wrapper without
 * them: a module-level function has no self (its __pyx_self is the module,
 * or the function itself when it binds as a method), a method has no
 * __pyx_self.  A wrapper's own locals hide these. */
#if defined(__GNUC__)
#define DQ_ARGERR_UNUSED __attribute__((unused))
/* out of the hot code: the compiler lays the calls out as never taken */
#define DQ_ARGERR_COLD __attribute__((cold, noinline))
#else
#define DQ_ARGERR_UNUSED
#define DQ_ARGERR_COLD
#endif
static PyObject *const __pyx_v_self DQ_ARGERR_UNUSED = NULL;
static PyObject *const __pyx_self DQ_ARGERR_UNUSED = NULL;

/* Sets the TypeError that dq_core._argerrors.message(kind, self, function,
 * func, *details) words, details built by format as by Py_BuildValue (a
 * tuple).  If the wording fails, its error is the one raised. */
DQ_ARGERR_COLD static void dq_argerr_raise(const char *kind, PyObject *self, PyObject *function,
                                           const char *func, const char *format, ...) {
    PyObject *module = PyImport_ImportModule("dq_core._argerrors");
    PyObject *wording = module != NULL ? PyObject_GetAttrString(module, "message") : NULL;
    va_list va;
    va_start(va, format);
    PyObject *details = wording != NULL ? Py_VaBuildValue(format, va) : NULL;
    va_end(va);
    PyObject *head = details != NULL ? Py_BuildValue("(sOOs)", kind, self ? self : Py_None,
                                                     function ? function : Py_None, func)
                                     : NULL;
    PyObject *args = head != NULL ? PySequence_Concat(head, details) : NULL;
    PyObject *msg = args != NULL ? PyObject_Call(wording, args, NULL) : NULL;
    if (msg != NULL) {
        PyErr_SetObject(PyExc_TypeError, msg);
    }
    Py_XDECREF(msg);
    Py_XDECREF(args);
    Py_XDECREF(head);
    Py_XDECREF(details);
    Py_XDECREF(wording);
    Py_XDECREF(module);
}

/* Too few or too many positional arguments. */
DQ_ARGERR_COLD static void dq_argerr_arity(PyObject *self, PyObject *function, PyObject *kwds,
                                           const char *func, Py_ssize_t low, Py_ssize_t high,
                                           Py_ssize_t given) {
    dq_argerr_raise("arity", self, function, func, "(nnnO)", low, high, given,
                    kwds != NULL ? kwds : Py_None);
}

/* A keyword given to a function that takes none. */
DQ_ARGERR_COLD static void dq_argerr_reject(PyObject *self, PyObject *function, const char *func,
                                            PyObject *kwds) {
    PyObject *key = NULL, *value;
    Py_ssize_t pos = 0;
    if (PyTuple_Check(kwds)) {
        key = PyTuple_GET_SIZE(kwds) > 0 ? PyTuple_GET_ITEM(kwds, 0) : NULL;
    } else if (!PyDict_Next(kwds, &pos, &key, &value)) {
        key = NULL;
    }
    if (key != NULL) {
        dq_argerr_raise("keyword", self, function, func, "(O)", key);
    }
}

/* The length of func in text, if text is Cython's keyword parser's
 * "func() got ..." with a bare name (CPython's own messages, and reworded
 * ones, say Class.func()); else 0. */
static Py_ssize_t dq_argerr_cythons(const char *text) {
    const char *got = text != NULL ? strstr(text, "() got ") : NULL;
    if (got == NULL) {
        return 0;
    }
    for (const char *c = text; c < got; c++) {
        if (!(Py_ISALNUM(*c) || *c == '_')) {
            return 0;
        }
    }
    return got - text;
}

/* On an error exit: the TypeError Cython's keyword parser raised just now
 * (exactly TypeError, no traceback yet) in self's method or a function
 * bound as a method, reworded; any other error passes untouched.  The cores
 * hold no `with nogil:` block, so the GIL is held here. */
DQ_ARGERR_COLD static void dq_argerr_after(PyObject *self, PyObject *function) {
    if ((self == NULL && function == NULL) || !PyErr_ExceptionMatches(PyExc_TypeError)) {
        return;
    }
#if DQ_PY312
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *type = Py_NewRef((PyObject *)Py_TYPE(exc));
    PyObject *tb = PyException_GetTraceback(exc);
#else
    PyObject *type, *exc, *tb;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
#endif
    PyObject *args = NULL, *text = NULL, *func = NULL;
    if (tb == NULL && type == PyExc_TypeError && exc != NULL) {
        args = PyObject_GetAttrString(exc, "args");
        if (args != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1
            && PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
            text = PyTuple_GET_ITEM(args, 0);
            const char *s = PyUnicode_AsUTF8(text);
            Py_ssize_t n = dq_argerr_cythons(s);
            func = n > 0 ? PyUnicode_FromStringAndSize(s, n) : NULL;
        }
        PyErr_Clear();
    }
    const char *name = func != NULL ? PyUnicode_AsUTF8(func) : NULL;
    if (name != NULL) {
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        dq_argerr_raise("reword", self, function, name, "(O)", text);
    } else {
#if DQ_PY312
        Py_XDECREF(tb);
        Py_DECREF(type);
        PyErr_SetRaisedException(exc);
#else
        PyErr_Restore(type, exc, tb);
#endif
    }
    Py_XDECREF(func);
    Py_XDECREF(args);
}

/* Cython's two argument-error calls, and its error exit (defined before
 * this header), routed through the functions above.  In a method, self is a
 * typed pointer: hence the casts. */
#define __Pyx_RaiseArgtupleInvalid(func, exact, num_min, num_max, num_found)             \
    dq_argerr_arity((PyObject *)__pyx_v_self, __pyx_self, __pyx_kwds, (func), (num_min), \
                    (num_max), __pyx_nargs)
#define __Pyx_RejectKeywords(func, kwds) \
    dq_argerr_reject((PyObject *)__pyx_v_self, __pyx_self, (func), (kwds))
/* The hook on the error exit only where a wrapper's argument parsing fails:
 * Cython jumps to __pyx_L3_error there (its wrappers' parsing error label).
 * DQ_ARGERR_PARSING(label) is 1 for that label and 0 for any other, so the
 * compiler drops the call from every other error exit, where it would keep
 * self alive through a whole function body for nothing. */
#define DQ_ARGERR_SECOND(a, b, ...) b
#define DQ_ARGERR_PROBE(...)        DQ_ARGERR_SECOND(__VA_ARGS__, 0, 0)
#define DQ_ARGERR_IS___pyx_L3_error ~, 1
#define DQ_ARGERR_PARSING(label)    DQ_ARGERR_PROBE(DQ_ARGERR_IS_##label)
#ifdef __PYX_ERR
#undef __PYX_ERR
#define __PYX_ERR(f_index, lineno, Ln_error)                       \
    {                                                              \
        if (DQ_ARGERR_PARSING(Ln_error)) {                         \
            dq_argerr_after((PyObject *)__pyx_v_self, __pyx_self); \
        }                                                          \
        __PYX_MARK_ERR_POS(f_index, lineno) goto Ln_error;         \
    }
#endif

#endif /* DQ_ARGERRORS_H */
