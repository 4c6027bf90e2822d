/* dq_tables.h - what the two hash tables of the TTL mappings share:
 * TTLDict's ring (dq_ttltable.h, src/_ttldictcore.pyx) and WheelTTLDict's
 * slab (dq_wheelttl.h, src/_wheelttlcore.pyx).
 *
 * DQ_TABLE_FIND defines a table's look-up: the entry of a key, probed as
 * CPython's dict probes, a stored key of the same hash compared by its
 * __eq__, and the search started again if that user code changed the
 * table (its version), as a dict look-up does.  The table must stay
 * allocated across the call: the caller holds the object that holds it.
 *
 * DQ_TABLE_GC defines the garbage collector's hooks of a type whose
 * objects hold a table at a fixed offset: its traverse and clear visit the
 * table's keys and values, then go on to the type's own (Cython's, for
 * its object fields).
 *
 * Both expand to static functions: each core's C file gets its own.
 */
#ifndef DQ_TABLES_H
#define DQ_TABLES_H

#include "Python.h"
#include <stdint.h>

#include "dq_ttltable.h" /* dq_tt_next, the probe recurrence */

/* POS NAME(TABLE *t, PyObject *key, Py_hash_t h, size_t *islot): the slot
   of key's entry (its index slot in *islot), -1 if none, -2 with an
   exception set if an __eq__ raised.  IX(t, i) reads index slot i, EMPTY
   marks a slot never used. */
#define DQ_TABLE_FIND(NAME, TABLE, POS, IX, EMPTY)                                         \
    static POS NAME(TABLE *t, PyObject *key, Py_hash_t h, size_t *islot) {                 \
        for (;;) {                                                                         \
            uint64_t version = t->version;                                                 \
            size_t mask = (size_t)t->isize - 1, perturb = (size_t)h, i = (size_t)h & mask; \
            if (t->isize == 0) return -1;                                                  \
            for (;;) {                                                                     \
                POS pos = IX(t, i);                                                        \
                if (pos == (EMPTY)) return -1;                                             \
                if (pos >= 0) {                                                            \
                    PyObject *stored = t->ents[pos].key;                                   \
                    if (stored == key) {                                                   \
                        *islot = i;                                                        \
                        return pos;                                                        \
                    }                                                                      \
                    if (t->ents[pos].hash == h) {                                          \
                        int eq;                                                            \
                        Py_INCREF(stored);                                                 \
                        eq = PyObject_RichCompareBool(stored, key, Py_EQ);                 \
                        Py_DECREF(stored); /* may run a finaliser: before the check */     \
                        if (eq < 0) return -2;                                             \
                        if (t->version != version) break; /* the table changed: again */   \
                        if (eq) {                                                          \
                            *islot = i;                                                    \
                            return pos;                                                    \
                        }                                                                  \
                    }                                                                      \
                }                                                                          \
                i = dq_tt_next(i, &perturb, mask);                                         \
            }                                                                              \
        }                                                                                  \
    }

/* PREFIX##_gc_hook(PyTypeObject *tp, Py_ssize_t offset): tp's objects hold
   a TABLE at offset; TRAVERSE(table, visit, arg) visits its references,
   CLEAR(table) drops them. */
#define DQ_TABLE_GC(PREFIX, TABLE, TRAVERSE, CLEAR)                            \
    static traverseproc PREFIX##_fields_traverse;                              \
    static inquiry PREFIX##_fields_clear;                                      \
    static Py_ssize_t PREFIX##_offset;                                         \
    static int PREFIX##_gc_traverse(PyObject *o, visitproc visit, void *arg) { \
        int e = TRAVERSE((TABLE *)((char *)o + PREFIX##_offset), visit, arg);  \
        return e ? e : PREFIX##_fields_traverse(o, visit, arg);                \
    }                                                                          \
    static int PREFIX##_gc_clear(PyObject *o) {                                \
        CLEAR((TABLE *)((char *)o + PREFIX##_offset));                         \
        return PREFIX##_fields_clear(o);                                       \
    }                                                                          \
    static void PREFIX##_gc_hook(PyTypeObject *tp, Py_ssize_t offset) {        \
        PREFIX##_offset = offset;                                              \
        PREFIX##_fields_traverse = tp->tp_traverse;                            \
        PREFIX##_fields_clear = tp->tp_clear;                                  \
        tp->tp_traverse = PREFIX##_gc_traverse;                                \
        tp->tp_clear = PREFIX##_gc_clear;                                      \
    }

#endif /* DQ_TABLES_H */
