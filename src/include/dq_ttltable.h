/* dq_ttltable.h - TTLDict's table (src/_ttldictcore.pyx): its entries in a
 * FIFO ring, and an open-addressing index over them, as CPython's compact
 * dict keeps a dict's entries apart from its index.
 *
 * The ring holds one 32-byte entry (key, value, hash, created_at) a key, in
 * the order the keys were last set: with one TTL for all, that is expiry
 * order, so what is due sits at the head and one comparison tells whether
 * anything is.  A key set again or deleted leaves a hole (key NULL) where it
 * was; holes reaching the head are skipped at once, so the head is always a
 * held entry, and a ring that fills up with holes is compacted rather than
 * grown.  The index maps a hash to ring slots: int32 slots (int64 for rings
 * over 2**31 slots) holding a ring slot, EMPTY or DUMMY (a removed one),
 * probed as CPython's dict probes (perturbed by the high bits of the hash).
 * A new key always takes the first EMPTY index slot of its probe sequence,
 * never a DUMMY one: so the keys of one hash are met along the sequence in
 * ring order, the order in which the pure twin's buckets keep them, and a
 * key's __eq__ runs at the same points in both implementations.
 *
 * A table made for LRU (dq_tt_lru_init) also keeps a recency order: a
 * doubly linked list of ring slots, in two arrays beside the ring (prev and
 * next, cap slots each, -1 ending it), from the least recently used
 * (lru_first) to the most (lru_last).  An appended entry is linked last, a
 * removed one unlinked, dq_tt_lru_use moves one last, all in O(1); a resize
 * carries the order over to the entries' new slots.  A table without it
 * (the default) allocates nothing more and only tests the flag.
 *
 * Nothing here runs Python code or takes a reference; only dq_tt_clear and
 * dq_out_release drop references, once the table is consistent.  An
 * allocation failure returns -1 with MemoryError set and changes nothing.
 * The core does the rest (hashing, comparing, reporting) around these
 * functions.  Memory comes from PyMem, so tracemalloc sees it.
 */
#ifndef DQ_TTLTABLE_H
#define DQ_TTLTABLE_H

#include "Python.h"
#include <stdint.h>
#include <string.h>

typedef struct {
    PyObject *key; /* NULL: a hole */
    PyObject *value;
    Py_hash_t hash;
    double t; /* created_at */
} dq_ttl_entry;

typedef struct {
    dq_ttl_entry *ents; /* cap slots, a circular buffer (NULL while cap is 0) */
    void *ix;           /* isize index slots: int32_t, or int64_t when wide */
    Py_ssize_t cap;     /* 0 or a power of two */
    Py_ssize_t head;    /* ring slot of the oldest entry */
    Py_ssize_t span;    /* ring slots from the head to the tail, holes included */
    Py_ssize_t used;    /* entries held (each in the index) */
    Py_ssize_t isize;   /* 0, or 2 * cap */
    Py_ssize_t ifill;   /* index slots not EMPTY: used + DUMMY */
    int wide;
    uint64_t version; /* raised by every change: a lookup that ran user code re-checks it */
    int lru;          /* keeps the recency order below */
    Py_ssize_t *prev; /* lru: cap slots, the ring slot used just before (-1: none) */
    Py_ssize_t *next; /* lru: cap slots, the ring slot used just after (-1: none) */
    Py_ssize_t lru_first, lru_last; /* lru: the least and the most recently used (-1: none) */
} dq_ttl_table;

#define DQ_TT_EMPTY         (-1)
#define DQ_TT_DUMMY         (-2)
#define DQ_TT_MIN_CAP       8
#define DQ_TT_PERTURB_SHIFT 5
/* the largest ring: its slots and index must fit a Py_ssize_t */
#define DQ_TT_MAX_CAP ((Py_ssize_t)1 << (sizeof(Py_ssize_t) * 8 - 7))

static inline Py_ssize_t dq_tt_ix(const dq_ttl_table *t, size_t i) {
    return t->wide ? (Py_ssize_t)((int64_t *)t->ix)[i] : (Py_ssize_t)((int32_t *)t->ix)[i];
}

static inline void dq_tt_set_ix(dq_ttl_table *t, size_t i, Py_ssize_t v) {
    if (t->wide)
        ((int64_t *)t->ix)[i] = (int64_t)v;
    else
        ((int32_t *)t->ix)[i] = (int32_t)v;
}

/* Makes an empty table (zeroed) keep the recency order. */
static inline void dq_tt_lru_init(dq_ttl_table *t) {
    t->lru = 1;
    t->lru_first = t->lru_last = -1;
}

/* Links ring slot pos as the most recently used (lru). */
static inline void dq_tt_lru_link(dq_ttl_table *t, Py_ssize_t pos) {
    t->prev[pos] = t->lru_last;
    t->next[pos] = -1;
    if (t->lru_last >= 0)
        t->next[t->lru_last] = pos;
    else
        t->lru_first = pos;
    t->lru_last = pos;
}

/* Unlinks ring slot pos from the recency order (lru). */
static inline void dq_tt_lru_unlink(dq_ttl_table *t, Py_ssize_t pos) {
    Py_ssize_t p = t->prev[pos], n = t->next[pos];
    if (p >= 0)
        t->next[p] = n;
    else
        t->lru_first = n;
    if (n >= 0)
        t->prev[n] = p;
    else
        t->lru_last = p;
}

/* Makes the entry at ring slot pos the most recently used (lru).  Not a
   change of the mapping's contents: the version stays. */
static inline void dq_tt_lru_use(dq_ttl_table *t, Py_ssize_t pos) {
    if (pos != t->lru_last) {
        dq_tt_lru_unlink(t, pos);
        dq_tt_lru_link(t, pos);
    }
}

/* the next index slot of a probe sequence (CPython's dict recurrence) */
static inline size_t dq_tt_next(size_t i, size_t *perturb, size_t mask) {
    *perturb >>= DQ_TT_PERTURB_SHIFT;
    return (i * 5 + *perturb + 1) & mask;
}

/* the first EMPTY index slot of hash's probe sequence (the index is never full) */
static inline size_t dq_tt_first_empty(const dq_ttl_table *t, Py_hash_t hash) {
    size_t mask = (size_t)t->isize - 1, perturb = (size_t)hash, i = (size_t)hash & mask;
    while (dq_tt_ix(t, i) != DQ_TT_EMPTY)
        i = dq_tt_next(i, &perturb, mask);
    return i;
}

/* the index slot that holds ring slot pos, whose entry has that hash */
static inline size_t dq_tt_slot_of(const dq_ttl_table *t, Py_hash_t hash, Py_ssize_t pos) {
    size_t mask = (size_t)t->isize - 1, perturb = (size_t)hash, i = (size_t)hash & mask;
    while (dq_tt_ix(t, i) != pos) {
        assert(dq_tt_ix(t, i) != DQ_TT_EMPTY);
        i = dq_tt_next(i, &perturb, mask);
    }
    return i;
}

/* Points the index at every held entry, from the head (ring order), in a
   fresh index of the table's isize: no DUMMY left. */
static inline void dq_tt_index_all(dq_ttl_table *t) {
    Py_ssize_t k, pos;
    size_t mask = (size_t)t->cap - 1;
    memset(t->ix, 0xff,
           (size_t)t->isize * (t->wide ? sizeof(int64_t) : sizeof(int32_t))); /* EMPTY */
    for (k = 0; k < t->span; k++) {
        pos = (Py_ssize_t)(((size_t)t->head + (size_t)k) & mask);
        if (t->ents[pos].key != NULL) dq_tt_set_ix(t, dq_tt_first_empty(t, t->ents[pos].hash), pos);
    }
    t->ifill = t->used;
}

/* Moves the held entries, in ring order, into a ring of cap slots (a power
   of two >= used, or 0 when none is held) and a fresh index: -1 with
   MemoryError set, the table unchanged, if memory runs out. */
static inline int dq_tt_resize(dq_ttl_table *t, Py_ssize_t cap) {
    dq_ttl_entry *ents = NULL;
    void *ix = NULL;
    Py_ssize_t *prev = NULL, *next = NULL;
    Py_ssize_t k, n = 0;
    size_t mask = (size_t)t->cap - 1;
    int wide = (int64_t)cap > ((int64_t)1 << 31); /* int32 holds every slot below 2**31 */
    assert(cap == 0 || (cap & (cap - 1)) == 0);
    assert(cap >= t->used);
    if (cap > DQ_TT_MAX_CAP) {
        PyErr_NoMemory();
        return -1;
    }
    if (cap) {
        ents = (dq_ttl_entry *)PyMem_Malloc((size_t)cap * sizeof(dq_ttl_entry));
        ix = PyMem_Malloc((size_t)(2 * cap) * (wide ? sizeof(int64_t) : sizeof(int32_t)));
        if (t->lru) {
            prev = (Py_ssize_t *)PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t));
            next = (Py_ssize_t *)PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t));
        }
        if (ents == NULL || ix == NULL || (t->lru && (prev == NULL || next == NULL))) {
            PyMem_Free(ents);
            PyMem_Free(ix);
            PyMem_Free(prev);
            PyMem_Free(next);
            PyErr_NoMemory();
            return -1;
        }
    }
    for (k = 0; k < t->span; k++) {
        Py_ssize_t pos = (Py_ssize_t)(((size_t)t->head + (size_t)k) & mask);
        dq_ttl_entry *e = &t->ents[pos];
        if (e->key != NULL) {
            if (t->lru) t->prev[pos] = n; /* the old prev becomes the map to new slots */
            ents[n++] = *e;
        }
    }
    assert(n == t->used);
    if (t->lru) { /* the recency order, along the old links, in the new slots */
        Py_ssize_t p = t->lru_first, last = -1, q;
        while (p >= 0) {
            q = t->prev[p];
            prev[q] = last;
            if (last >= 0)
                next[last] = q;
            else
                t->lru_first = q;
            last = q;
            p = t->next[p];
        }
        if (last >= 0)
            next[last] = -1;
        else
            t->lru_first = -1;
        t->lru_last = last;
        PyMem_Free(t->prev);
        PyMem_Free(t->next);
        t->prev = prev;
        t->next = next;
    }
    PyMem_Free(t->ents);
    PyMem_Free(t->ix);
    t->ents = ents;
    t->ix = ix;
    t->cap = cap;
    t->isize = 2 * cap;
    t->wide = wide;
    t->head = 0;
    t->span = n;
    t->version++;
    if (cap)
        dq_tt_index_all(t);
    else
        t->ifill = 0;
    return 0;
}

/* The smallest ring (at least DQ_TT_MIN_CAP slots) that holds n entries at
   most half full. */
static inline Py_ssize_t dq_tt_fitting(Py_ssize_t n) {
    Py_ssize_t cap = DQ_TT_MIN_CAP;
    while (cap < 2 * n)
        cap *= 2;
    return cap;
}

/* Makes room for one more entry: the ring gets a free slot at its tail, and
   the index an EMPTY slot to spare (a DUMMY-laden index is rebuilt; a ring
   full of holes is compacted, one mostly held doubles).  -1 with
   MemoryError set, the table unchanged, if memory runs out. */
static inline int dq_tt_reserve(dq_ttl_table *t) {
    if (t->span == t->cap) {
        if (t->cap == 0) return dq_tt_resize(t, DQ_TT_MIN_CAP);
        return dq_tt_resize(t, 2 * t->used >= t->cap ? 2 * t->cap : t->cap);
    }
    if (3 * (t->ifill + 1) > 2 * t->isize) { /* over 2/3 of the index in use */
        dq_tt_index_all(t);
        t->version++;
    }
    return 0;
}

/* Appends an entry (after dq_tt_reserve), taking the caller's references to
   key and value. */
static inline void dq_tt_append(dq_ttl_table *t, PyObject *key, PyObject *value, Py_hash_t hash,
                                double created_at) {
    Py_ssize_t pos = (Py_ssize_t)(((size_t)t->head + (size_t)t->span) & ((size_t)t->cap - 1));
    dq_ttl_entry *e = &t->ents[pos];
    assert(t->span < t->cap);
    e->key = key;
    e->value = value;
    e->hash = hash;
    e->t = created_at;
    dq_tt_set_ix(t, dq_tt_first_empty(t, hash), pos);
    if (t->lru) dq_tt_lru_link(t, pos);
    t->span++;
    t->used++;
    t->ifill++;
    t->version++;
}

/* Skips the holes at the head: the head is a held entry, or the ring is empty. */
static inline void dq_tt_skip_holes(dq_ttl_table *t) {
    size_t mask = (size_t)t->cap - 1;
    while (t->span && t->ents[t->head].key == NULL) {
        t->head = (Py_ssize_t)(((size_t)t->head + 1) & mask);
        t->span--;
    }
    if (t->span == 0) t->head = 0;
}

/* Takes the entry at ring slot pos, whose index slot is islot, out of the
   ring and the index: its key and value go to the caller (*key, *value:
   the table's references).  An lru table's caller unlinks it first. */
static inline void dq_tt_take(dq_ttl_table *t, Py_ssize_t pos, size_t islot, PyObject **key,
                              PyObject **value) {
    dq_ttl_entry *e = &t->ents[pos];
    assert(e->key != NULL && dq_tt_ix(t, islot) == pos);
    *key = e->key;
    *value = e->value;
    e->key = NULL;
    e->value = NULL;
    dq_tt_set_ix(t, islot, DQ_TT_DUMMY);
    t->used--;
    t->version++;
    if (pos == t->head) dq_tt_skip_holes(t);
}

/* Removes the entry at ring slot pos, whose index slot is islot, as
   dq_tt_take, from the recency order too. */
static inline void dq_tt_remove(dq_ttl_table *t, Py_ssize_t pos, size_t islot, PyObject **key,
                                PyObject **value) {
    if (t->lru) dq_tt_lru_unlink(t, pos);
    dq_tt_take(t, pos, islot, key, value);
}

/* Takes the head entry (the table holds one), as dq_tt_take: the hot loop
   of expiry, which unlinks it first from an lru table's order. */
static inline void dq_tt_pop_head(dq_ttl_table *t, PyObject **key, PyObject **value) {
    Py_ssize_t pos = t->head;
    dq_tt_take(t, pos, dq_tt_slot_of(t, t->ents[pos].hash, pos), key, value);
}

/* Removes the least recently used entry (an lru table that holds one), as
   dq_tt_remove. */
static inline void dq_tt_pop_lru(dq_ttl_table *t, PyObject **key, PyObject **value) {
    Py_ssize_t pos = t->lru_first;
    dq_tt_remove(t, pos, dq_tt_slot_of(t, t->ents[pos].hash, pos), key, value);
}

/* Whether the head entry is due at now (with ttl), the table holding one. */
static inline int dq_tt_head_due(const dq_ttl_table *t, double ttl, double now) {
    return t->ents[t->head].t + ttl <= now;
}

/* After removals: a ring under a quarter held shrinks to fit, at least
   DQ_TT_MIN_CAP slots (if memory runs out it stays as it is: shrinking can
   wait). */
static inline void dq_tt_shrink(dq_ttl_table *t) {
    if (t->cap > DQ_TT_MIN_CAP && 4 * t->used < t->cap
        && dq_tt_resize(t, dq_tt_fitting(t->used)) < 0)
        PyErr_Clear();
}

/* Visits every key and value held (tp_traverse). */
static inline int dq_tt_traverse(const dq_ttl_table *t, visitproc visit, void *arg) {
    Py_ssize_t k;
    size_t mask = (size_t)t->cap - 1;
    for (k = 0; k < t->span; k++) {
        const dq_ttl_entry *e = &t->ents[((size_t)t->head + (size_t)k) & mask];
        if (e->key != NULL) {
            Py_VISIT(e->key);
            Py_VISIT(e->value);
        }
    }
    return 0;
}

/* Empties the table and drops its references, newest entry first (as a
   list lets go of its items): the table is empty and valid before any
   finaliser runs, so one that reaches the table finds it so. */
static inline void dq_tt_clear(dq_ttl_table *t) {
    dq_ttl_table old = *t;
    Py_ssize_t k;
    size_t mask = (size_t)old.cap - 1;
    memset(t, 0, sizeof(*t));
    t->version = old.version + 1;
    if (old.lru) dq_tt_lru_init(t);
    for (k = old.span - 1; k >= 0; k--) {
        dq_ttl_entry *e = &old.ents[((size_t)old.head + (size_t)k) & mask];
        if (e->key != NULL) {
            Py_DECREF(e->value);
            Py_DECREF(e->key);
        }
    }
    PyMem_Free(old.ents);
    PyMem_Free(old.ix);
    PyMem_Free(old.prev);
    PyMem_Free(old.next);
}

/* -- the (key, value) pairs a change removed ----------------------------------
   Held, as owned references, until the change is complete: only then may
   on_expire see them and finalisers run.  The first few fit inline. */

#define DQ_OUT_INLINE 16 /* pairs */

typedef struct {
    PyObject **items; /* key, value, key, value, ... */
    Py_ssize_t n;     /* pairs */
    Py_ssize_t cap;
    PyObject *inline_items[2 * DQ_OUT_INLINE];
} dq_ttl_out;

static inline void dq_out_init(dq_ttl_out *o) {
    o->items = o->inline_items;
    o->n = 0;
    o->cap = DQ_OUT_INLINE;
}

/* room for one more pair: -1 with MemoryError set if memory runs out */
static inline int dq_out_reserve(dq_ttl_out *o) {
    PyObject **items;
    if (o->n < o->cap) return 0;
    if (o->cap > PY_SSIZE_T_MAX / (4 * (Py_ssize_t)sizeof(PyObject *))) {
        PyErr_NoMemory();
        return -1;
    }
    items = (PyObject **)PyMem_Malloc((size_t)(4 * o->cap) * sizeof(PyObject *));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(items, o->items, (size_t)(2 * o->n) * sizeof(PyObject *));
    if (o->items != o->inline_items) PyMem_Free(o->items);
    o->items = items;
    o->cap *= 2;
    return 0;
}

/* takes the references to key and value (after dq_out_reserve) */
static inline void dq_out_push(dq_ttl_out *o, PyObject *key, PyObject *value) {
    assert(o->n < o->cap);
    o->items[2 * o->n] = key;
    o->items[2 * o->n + 1] = value;
    o->n++;
}

/* Drops the pairs' references, newest first (as a list of (key, value)
   tuples lets go of them), pairs from..n-1 (earlier ones were handed on),
   and frees the room. */
static inline void dq_out_release(dq_ttl_out *o, Py_ssize_t from) {
    Py_ssize_t k;
    for (k = o->n - 1; k >= from; k--) {
        Py_DECREF(o->items[2 * k + 1]);
        Py_DECREF(o->items[2 * k]);
    }
    o->n = 0;
    if (o->items != o->inline_items) PyMem_Free(o->items);
    o->items = o->inline_items;
    o->cap = DQ_OUT_INLINE;
}

#endif /* DQ_TTLTABLE_H */
