/* dq_item_key.h - what orders PriorityQueue items without calling their
 * ``<`` (src/_itemheapcore.pyx's ItemHeap): str comparison in C, and the cached
 * 64-bit key of a tuple's second element.
 */
#ifndef DQ_ITEM_KEY_H
#define DQ_ITEM_KEY_H

#include "Python.h"
#include <string.h>
#include "dq_shortcuts.h"

/* PyUnicode_Compare(a, b) for two exact strs (so it never fails): code
   point order.  Two strs of one byte per code point, the usual keys,
   compare with memcmp (unsigned bytes are the code points) without
   PyUnicode_Compare's type checks and its dispatch on the kinds. */
static inline int dq_str_cmp(PyObject *a, PyObject *b) {
    Py_ssize_t la, lb;
    int c;
    if (a == b) return 0;
    if (!DQ_STR_READY(a) || !DQ_STR_READY(b)) return PyUnicode_Compare(a, b);
    if (PyUnicode_KIND(a) != PyUnicode_1BYTE_KIND || PyUnicode_KIND(b) != PyUnicode_1BYTE_KIND)
        return PyUnicode_Compare(a, b);
    la = PyUnicode_GET_LENGTH(a);
    lb = PyUnicode_GET_LENGTH(b);
    c = memcmp(PyUnicode_1BYTE_DATA(a), PyUnicode_1BYTE_DATA(b), (size_t)(la < lb ? la : lb));
    if (c != 0) return c < 0 ? -1 : 1;
    return (la > lb) - (la < lb);
}

/* ItemKey.s: what orders a tuple's second element, in its top 56 bits,
   and its kind in the low byte (0: nothing cached).  Two of one kind
   whose s differ order their elements; equal s decide nothing. */
#define DQ_SUB_NONE 0ULL
#define DQ_SUB_STR  1ULL /* an exact str of one byte per code point */
#define DQ_SUB_NUM  2ULL /* one of fast_key's numbers */
#define DQ_SUB_KIND 0xFFULL

/* A str's first 7 code points, big-endian and zero-padded: two that
   differ order their strs as str comparison does (at the first
   differing byte, either both strs have a code point there, or the
   shorter str ends, a prefix of the other: padding 0 < the other's
   byte).  DQ_SUB_NONE: no such str (another kind; not ready before
   3.12). */
static inline unsigned long long dq_str_sub(PyObject *a) {
    Py_ssize_t i, n;
    const unsigned char *p;
    unsigned long long v = 0;
    if (!DQ_STR_READY(a)) return DQ_SUB_NONE;
    if (PyUnicode_KIND(a) != PyUnicode_1BYTE_KIND) return DQ_SUB_NONE;
    n = PyUnicode_GET_LENGTH(a);
    p = PyUnicode_1BYTE_DATA(a);
    if (n >= 7) { /* one expression, which compilers make one load */
        v = ((unsigned long long)p[0] << 56) | ((unsigned long long)p[1] << 48)
            | ((unsigned long long)p[2] << 40) | ((unsigned long long)p[3] << 32)
            | ((unsigned long long)p[4] << 24) | ((unsigned long long)p[5] << 16)
            | ((unsigned long long)p[6] << 8);
        return v | DQ_SUB_STR;
    }
    for (i = 0; i < 7; i++)
        v = (v << 8) | (i < n ? p[i] : 0u);
    return (v << 8) | DQ_SUB_STR;
}
/* d (never NaN) as an unsigned number in the same order (-0.0 is 0.0,
   negatives' bits inverted, positives' sign bit set), its low 8 bits
   dropped: a coarser order, still never a wrong one. */
static inline unsigned long long dq_num_sub(double d) {
    unsigned long long u;
    if (d == 0.0) d = 0.0;
    memcpy(&u, &d, sizeof u);
    u = (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
    return (u & ~DQ_SUB_KIND) | DQ_SUB_NUM;
}

#endif /* DQ_ITEM_KEY_H */
