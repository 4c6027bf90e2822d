/* dq_wheelttl.h - WheelTTLDict's table (src/_wheelttlcore.pyx): its entries
 * in a slab, an open-addressing index over them, a recency list and a
 * hashed timing wheel of slot lists, all linked by int32 slab slots.
 *
 * An entry (key, value, hash, deadline and four links) takes 48 bytes of
 * the slab; a removed one goes on a free list (threaded through wnext).
 * The index is dq_ttltable.h's: int32 slots holding a slab slot, EMPTY or
 * DUMMY, probed as CPython's dict probes, a new key taking the first EMPTY
 * slot of its sequence.  The recency list (lprev, lnext) runs from the
 * least recently used (lfirst) to the most (llast): set order when the
 * mapping has no maxsize.  The wheel has nslots heads (a power of two,
 * about an eighth of the index): an entry of finite deadline sits in the
 * list of slot (deadline / tick) mod nslots, never below the cursor (the
 * tick the last purge reached), pushed at the head; wprev is a slab slot,
 * or -1 - s for the head of slot s, or DQ_WT_OFF for an entry of infinite
 * deadline, on no list.  A purge walks the slots from the cursor to now's
 * tick (all of them at most once), taking what is due: an entry of a
 * later round stays where it is.
 *
 * Nothing here runs Python code or takes a reference, except dq_wt_clear,
 * which drops them once the table is empty.  An allocation failure returns
 * -1 with MemoryError set and changes nothing.  Memory comes from PyMem,
 * so tracemalloc sees it.
 */
#ifndef DQ_WHEELTTL_H
#define DQ_WHEELTTL_H

#include "Python.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dq_ttltable.h" /* dq_tt_next, the probe recurrence */

typedef struct {
    PyObject *key; /* NULL: free */
    PyObject *value;
    Py_hash_t hash;
    double deadline;
    int32_t lprev, lnext; /* the recency list (-1: none) */
    int32_t wprev, wnext; /* the wheel slot's list; the free list (wnext) */
} dq_wt_entry;

typedef struct {
    dq_wt_entry *ents; /* cap slots, made of them in use or free */
    int32_t *ix;       /* isize index slots (0 or a power of two) */
    int32_t *wheel;    /* nslots heads (-1: empty) */
    Py_ssize_t cap, made, used, isize, ifill, nslots;
    int32_t free_; /* the first free slab slot below made (-1: none) */
    int32_t lfirst, llast;
    uint64_t version; /* raised by every change: a look-up that ran user code re-checks it */
    double tick;
    int64_t cursor; /* the tick the last purge reached */
} dq_wt_table;

#define DQ_WT_EMPTY   (-1)
#define DQ_WT_DUMMY   (-2)
#define DQ_WT_OFF     INT32_MIN
#define DQ_WT_MAX_CAP ((Py_ssize_t)1 << 30) /* slab slots, int32 links */

/* the tick of a deadline, never below the cursor (finite deadlines) */
static inline int64_t dq_wt_tick_of(const dq_wt_table *t, double deadline) {
    double q = floor(deadline / t->tick);
    if (q < (double)t->cursor) return t->cursor;
    if (q > 4e18) return (int64_t)4e18; /* beyond int64: a slot of its own, visited each round */
    return (int64_t)q;
}

static inline void dq_wt_wlink(dq_wt_table *t, int32_t pos) {
    dq_wt_entry *e = &t->ents[pos];
    Py_ssize_t s;
    if (e->deadline == INFINITY) {
        e->wprev = DQ_WT_OFF;
        return;
    }
    s = (Py_ssize_t)(dq_wt_tick_of(t, e->deadline) & (int64_t)(t->nslots - 1));
    e->wprev = -1 - (int32_t)s;
    e->wnext = t->wheel[s];
    if (e->wnext >= 0) t->ents[e->wnext].wprev = pos;
    t->wheel[s] = pos;
}

static inline void dq_wt_wunlink(dq_wt_table *t, int32_t pos) {
    dq_wt_entry *e = &t->ents[pos];
    if (e->wprev == DQ_WT_OFF) return;
    if (e->wprev >= 0)
        t->ents[e->wprev].wnext = e->wnext;
    else
        t->wheel[-1 - e->wprev] = e->wnext;
    if (e->wnext >= 0) t->ents[e->wnext].wprev = e->wprev;
}

/* links slab slot pos as the most recently used */
static inline void dq_wt_llink(dq_wt_table *t, int32_t pos) {
    t->ents[pos].lprev = t->llast;
    t->ents[pos].lnext = -1;
    if (t->llast >= 0)
        t->ents[t->llast].lnext = pos;
    else
        t->lfirst = pos;
    t->llast = pos;
}

static inline void dq_wt_lunlink(dq_wt_table *t, int32_t pos) {
    int32_t p = t->ents[pos].lprev, n = t->ents[pos].lnext;
    if (p >= 0)
        t->ents[p].lnext = n;
    else
        t->lfirst = n;
    if (n >= 0)
        t->ents[n].lprev = p;
    else
        t->llast = p;
}

/* makes slab slot pos the most recently used (not a change: the version stays) */
static inline void dq_wt_use(dq_wt_table *t, int32_t pos) {
    if (pos != t->llast) {
        dq_wt_lunlink(t, pos);
        dq_wt_llink(t, pos);
    }
}

/* the first EMPTY index slot of hash's probe sequence (the index is never full) */
static inline size_t dq_wt_first_empty(const dq_wt_table *t, Py_hash_t hash) {
    size_t mask = (size_t)t->isize - 1, perturb = (size_t)hash, i = (size_t)hash & mask;
    while (t->ix[i] != DQ_WT_EMPTY)
        i = dq_tt_next(i, &perturb, mask);
    return i;
}

/* the index slot that holds slab slot pos, whose entry has that hash */
static inline size_t dq_wt_slot_of(const dq_wt_table *t, Py_hash_t hash, int32_t pos) {
    size_t mask = (size_t)t->isize - 1, perturb = (size_t)hash, i = (size_t)hash & mask;
    while (t->ix[i] != pos) {
        assert(t->ix[i] != DQ_WT_EMPTY);
        i = dq_tt_next(i, &perturb, mask);
    }
    return i;
}

/* Makes room for one more entry: a free slab slot, an EMPTY index slot to
   spare (a full or DUMMY-laden index is rebuilt, larger if need be, along
   the recency list), and a wheel of about an eighth of the index.  -1 with
   MemoryError set, the table unchanged, if memory runs out. */
static inline int dq_wt_reserve(dq_wt_table *t) {
    if (t->free_ < 0 && t->made == t->cap) {
        Py_ssize_t cap = t->cap ? 2 * t->cap : 8;
        dq_wt_entry *ents =
            cap > DQ_WT_MAX_CAP
                ? NULL
                : (dq_wt_entry *)PyMem_Realloc(t->ents, (size_t)cap * sizeof(dq_wt_entry));
        if (ents == NULL) goto nomemory;
        t->ents = ents;
        t->cap = cap;
    }
    if (3 * (t->ifill + 1) > 2 * t->isize) { /* over 2/3 in use: rebuilt, used under half */
        Py_ssize_t isize = 8, k;
        int32_t *ix;
        while (isize < 2 * (t->used + 1))
            isize *= 2;
        if (isize != t->isize) {
            ix = (int32_t *)PyMem_Malloc((size_t)isize * sizeof(int32_t));
            if (ix == NULL) goto nomemory;
            PyMem_Free(t->ix);
            t->ix = ix;
            t->isize = isize;
        }
        memset(t->ix, 0xff, (size_t)t->isize * sizeof(int32_t)); /* EMPTY */
        for (k = t->lfirst; k >= 0; k = t->ents[k].lnext)
            t->ix[dq_wt_first_empty(t, t->ents[k].hash)] = (int32_t)k;
        t->ifill = t->used;
        t->version++;
    }
    if (t->nslots < t->isize / 8 || t->nslots == 0) {
        /* A larger wheel: each old slot's list, oldest first, onto the new
           ones, so that each list keeps the order its entries went on in. */
        Py_ssize_t n = t->isize / 8 > 8 ? t->isize / 8 : 8, k, old_n = t->nslots;
        int32_t *w = (int32_t *)PyMem_Malloc((size_t)n * sizeof(int32_t)), *old = t->wheel;
        int32_t pos, prev;
        if (w == NULL) goto nomemory;
        memset(w, 0xff, (size_t)n * sizeof(int32_t));
        t->wheel = w;
        t->nslots = n;
        for (k = 0; k < old_n; k++) {
            if ((pos = old[k]) < 0) continue;
            while (t->ents[pos].wnext >= 0)
                pos = t->ents[pos].wnext; /* the oldest */
            for (; pos >= 0; pos = prev) {
                prev = t->ents[pos].wprev;
                dq_wt_wlink(t, pos);
            }
        }
        PyMem_Free(old);
    }
    return 0;
nomemory:
    PyErr_NoMemory();
    return -1;
}

/* Holds a new entry (after dq_wt_reserve), taking the caller's references
   to key and value: the most recently used.  Its slab slot. */
static inline int32_t dq_wt_append(dq_wt_table *t, PyObject *key, PyObject *value, Py_hash_t hash,
                                   double deadline) {
    int32_t pos;
    dq_wt_entry *e;
    if (t->free_ >= 0) {
        pos = t->free_;
        t->free_ = t->ents[pos].wnext;
    } else
        pos = (int32_t)t->made++;
    e = &t->ents[pos];
    e->key = key;
    e->value = value;
    e->hash = hash;
    e->deadline = deadline;
    t->ix[dq_wt_first_empty(t, hash)] = pos;
    dq_wt_llink(t, pos);
    dq_wt_wlink(t, pos);
    t->used++;
    t->ifill++;
    t->version++;
    return pos;
}

/* Gives the entry at slab slot pos a new deadline (its wheel slot follows). */
static inline void dq_wt_redate(dq_wt_table *t, int32_t pos, double deadline) {
    dq_wt_wunlink(t, pos);
    t->ents[pos].deadline = deadline;
    dq_wt_wlink(t, pos);
    t->version++;
}

/* Takes the entry at slab slot pos, whose index slot is islot, out of the
   index, the lists and the slab: its key and value go to the caller
   (*key, *value: the table's references). */
static inline void dq_wt_take(dq_wt_table *t, int32_t pos, size_t islot, PyObject **key,
                              PyObject **value) {
    dq_wt_entry *e = &t->ents[pos];
    assert(e->key != NULL && t->ix[islot] == pos);
    *key = e->key;
    *value = e->value;
    dq_wt_lunlink(t, pos);
    dq_wt_wunlink(t, pos);
    t->ix[islot] = DQ_WT_DUMMY;
    e->key = e->value = NULL;
    e->wnext = t->free_;
    t->free_ = pos;
    t->used--;
    t->version++;
}

/* Visits every key and value held (tp_traverse). */
static inline int dq_wt_traverse(const dq_wt_table *t, visitproc visit, void *arg) {
    Py_ssize_t k;
    for (k = 0; k < t->made; k++) {
        if (t->ents[k].key != NULL) {
            Py_VISIT(t->ents[k].key);
            Py_VISIT(t->ents[k].value);
        }
    }
    return 0;
}

/* Empties the table (keeping its tick and cursor) and then drops its
   references, most recently used first: the table is empty and valid
   before any finaliser runs. */
static inline void dq_wt_clear(dq_wt_table *t) {
    dq_wt_table old = *t;
    Py_ssize_t k;
    memset(t, 0, sizeof(*t));
    t->version = old.version + 1;
    t->tick = old.tick;
    t->cursor = old.cursor;
    t->free_ = t->lfirst = t->llast = -1;
    for (k = old.llast; k >= 0; k = old.ents[k].lprev) {
        Py_DECREF(old.ents[k].value);
        Py_DECREF(old.ents[k].key);
    }
    PyMem_Free(old.ents);
    PyMem_Free(old.ix);
    PyMem_Free(old.wheel);
}

/* -- the entries a change removed, with their deadlines ------------------------
   Owned references, held until the change is complete. */

typedef struct {
    PyObject *key, *value;
    double deadline;
} dq_wt_gone;

typedef struct {
    dq_wt_gone *items;
    Py_ssize_t n, cap;
} dq_wt_out;

/* room for one more: -1 with MemoryError set if memory runs out */
static inline int dq_wt_out_reserve(dq_wt_out *o) {
    dq_wt_gone *items;
    Py_ssize_t cap;
    if (o->n < o->cap) return 0;
    cap = o->cap ? 2 * o->cap : 16;
    items = cap > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(dq_wt_gone)
                ? NULL
                : (dq_wt_gone *)PyMem_Realloc(o->items, (size_t)cap * sizeof(dq_wt_gone));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->items = items;
    o->cap = cap;
    return 0;
}

/* Sorts items from..n-1 by deadline, stably (a merge sort; one pass when
   they are in order already).  If memory runs out they stay as they are. */
static inline void dq_wt_out_sort(dq_wt_out *o, Py_ssize_t from) {
    Py_ssize_t n = o->n - from, k, w, lo, mid, hi, i, j;
    dq_wt_gone *a = o->items + from, *b, *tmp;
    for (k = 1; k < n && a[k - 1].deadline <= a[k].deadline; k++) {
    }
    if (k >= n) return;
    b = (dq_wt_gone *)PyMem_Malloc((size_t)n * sizeof(dq_wt_gone));
    if (b == NULL) return;
    for (w = 1; w < n; w *= 2) {
        for (lo = 0; lo < n; lo += 2 * w) {
            mid = lo + w < n ? lo + w : n;
            hi = lo + 2 * w < n ? lo + 2 * w : n;
            i = lo;
            j = mid;
            for (k = lo; k < hi; k++)
                b[k] = (i < mid && (j >= hi || a[i].deadline <= a[j].deadline)) ? a[i++] : a[j++];
        }
        tmp = a;
        a = b;
        b = tmp;
    }
    if (a != o->items + from) {
        memcpy(o->items + from, a, (size_t)n * sizeof(dq_wt_gone));
        PyMem_Free(a);
    } else
        PyMem_Free(b);
}

/* Drops the references of items from..n-1 (earlier ones were handed on), newest first, and frees
 * the room. */
static inline void dq_wt_out_release(dq_wt_out *o, Py_ssize_t from) {
    Py_ssize_t k;
    for (k = o->n - 1; k >= from; k--) {
        Py_XDECREF(o->items[k].value);
        Py_XDECREF(o->items[k].key);
    }
    PyMem_Free(o->items);
    o->items = NULL;
    o->n = o->cap = 0;
}

/* Moves the entries due at now to out, slot by slot from the cursor to
   now's tick (every slot at most once); the cursor then stands at now's
   tick (never lower).  Sorted by deadline, stably, when ordered: those
   of one deadline in the order they went on the wheel (else in no order:
   a purge that only drops them).  -1 with MemoryError set if out cannot
   grow (what was moved stays moved, the rest held). */
static inline int dq_wt_sweep(dq_wt_table *t, double now, dq_wt_out *out, int ordered) {
    Py_ssize_t from = out->n;
    int64_t c = t->cursor, end, mask = (int64_t)t->nslots - 1;
    double q = floor(now / t->tick);
    int32_t pos, nxt;
    int r = 0;
    if (t->nslots == 0 || t->used == 0) {
        if (q > (double)t->cursor && q < 4e18) t->cursor = (int64_t)q;
        return 0;
    }
    end = q > (double)c ? (q < 4e18 ? (int64_t)q : c + mask) : c;
    if (end - c > mask) c = end - mask;
    for (; c <= end && r == 0; c++) {
        Py_ssize_t lo = out->n, hi;
        for (pos = t->wheel[c & mask]; pos >= 0; pos = nxt) {
            dq_wt_entry *e = &t->ents[pos];
            nxt = e->wnext;
            if (e->deadline <= now) {
                if (dq_wt_out_reserve(out) < 0) {
                    r = -1;
                    break;
                }
                out->items[out->n].deadline = e->deadline;
                dq_wt_take(t, pos, dq_wt_slot_of(t, e->hash, pos), &out->items[out->n].key,
                           &out->items[out->n].value);
                out->n++;
            }
        }
        for (hi = ordered ? out->n - 1 : lo; lo < hi;
             lo++, hi--) { /* a slot lists its newest first */
            dq_wt_gone g = out->items[lo];
            out->items[lo] = out->items[hi];
            out->items[hi] = g;
        }
    }
    if (r == 0) t->cursor = end;
    if (ordered) dq_wt_out_sort(out, from);
    return r;
}

/* dq_wt_sweep, ordered. */
static inline int dq_wt_purge(dq_wt_table *t, double now, dq_wt_out *out) {
    return dq_wt_sweep(t, now, out, 1);
}

#endif /* DQ_WHEELTTL_H */
