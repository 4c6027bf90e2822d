/* dq_ownedlock.h - the compiled queues' lock (QueueCore, DelayCore): a C
 * lock that knows its owner thread.  Taking it again from the thread that
 * holds it (a comparison or a clock calling back into the queue) raises
 * RuntimeError instead of deadlocking; the owner is looked at only when the
 * lock is busy.
 *
 * Uncontended, taking and releasing it is one atomic add each (a
 * "benaphore"): ``count`` is the holder plus the threads waiting for it, and
 * a PyThread lock, kept taken, is only what waiters sleep on; the release
 * that sees a waiter hands the lock over by releasing it once.  At most one
 * hand-over is ever pending (the next release needs the lock, which only the
 * woken waiter can have), so a plain lock serves as the semaphore.  The
 * atomics are real ones (C11-style builtins, MSVC intrinsics), so the lock is
 * as sound without a GIL (free-threaded builds) as with one.
 */
#ifndef DQ_OWNEDLOCK_H
#define DQ_OWNEDLOCK_H

#include "Python.h"
#include "dq_shortcuts.h"

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define DQ_FETCH_ADD(p, v)   _InterlockedExchangeAdd((volatile long *)(p), (long)(v))
#define DQ_LOAD_RELAXED(p)   (*(volatile const long *)(p))
#define DQ_LOAD_OWNER(p)     (*(volatile const unsigned long *)(p))
#define DQ_STORE_OWNER(p, v) (*(volatile unsigned long *)(p) = (v))
#define DQ_CAS(p, expected, desired)                                                      \
    (_InterlockedCompareExchange((volatile long *)(p), (long)(desired), (long)(expected)) \
     == (long)(expected))
#define DQ_LOAD_ACQUIRE(p)     _InterlockedOr((volatile long *)(p), 0)
#define DQ_STORE_RELEASE(p, v) _InterlockedExchange((volatile long *)(p), (long)(v))
#else
#define DQ_FETCH_ADD(p, v)   __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#define DQ_LOAD_RELAXED(p)   __atomic_load_n((p), __ATOMIC_RELAXED)
#define DQ_LOAD_OWNER(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define DQ_STORE_OWNER(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define DQ_CAS(p, expected, desired)                                                    \
    __extension__({                                                                     \
        long dq_expected_ = (expected);                                                 \
        __atomic_compare_exchange_n((p), &dq_expected_, (desired), 0, __ATOMIC_ACQ_REL, \
                                    __ATOMIC_RELAXED);                                  \
    })
#define DQ_LOAD_ACQUIRE(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define DQ_STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#endif

typedef struct {
    long count;               /* 0 free; 1 held; n: held, n - 1 threads waiting */
    unsigned long owner;      /* the holder's thread ident; 0 while free */
    PyThread_type_lock sleep; /* kept taken: waiters sleep on it, a release hands over */
} dq_owned_lock;

static inline int dq_lock_init(dq_owned_lock *l) {
    l->count = 0;
    l->owner = 0;
    l->sleep = PyThread_allocate_lock();
    if (l->sleep == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyThread_acquire_lock(l->sleep, NOWAIT_LOCK);
    return 0;
}

static inline void dq_lock_free(dq_owned_lock *l) {
    if (l->sleep != NULL) {
        PyThread_free_lock(l->sleep);
        l->sleep = NULL;
    }
}

static inline int dq_lock_acquire(dq_owned_lock *l) {
    unsigned long me = PyThread_get_thread_ident();
    if (DQ_FETCH_ADD(&l->count, 1) != 0) {
        /* Busy.  The owner field equals me only if this thread wrote it
           and has not released since: then it holds the lock. */
        if (DQ_LOAD_OWNER(&l->owner) == me) {
            DQ_FETCH_ADD(&l->count, -1);
            PyErr_SetString(PyExc_RuntimeError,
                            "the queue was re-entered while this thread holds its lock "
                            "(from a comparison of its items?)");
            return -1;
        }
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(l->sleep, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    DQ_STORE_OWNER(&l->owner, me);
    return 0;
}

static inline void dq_lock_release(dq_owned_lock *l) {
    DQ_STORE_OWNER(&l->owner, 0);
    if (DQ_FETCH_ADD(&l->count, -1) != 1)
        PyThread_release_lock(l->sleep); /* hand over to one waiter */
}

/* Take the lock only if it is free (no waiting, no owner check). */
static inline int dq_lock_try(dq_owned_lock *l) {
    if (!DQ_CAS(&l->count, 0, 1)) return 0;
    DQ_STORE_OWNER(&l->owner, PyThread_get_thread_ident());
    return 1;
}

/* Whether the lock is held (a snapshot, for the Python-level _unlock's check). */
static inline int dq_lock_held(dq_owned_lock *l) {
    return DQ_LOAD_RELAXED(&l->count) != 0;
}

/* A count that one thread changes outside the lock and others read under it
   (aio.PriorityQueue's items in transit, a long): DQ_STORE_RELEASE after the
   change it stands for, DQ_LOAD_ACQUIRE before reading what that change
   touched, so a reader that sees the new count sees the change too. */
static inline long dq_count_load(long *p) {
    return DQ_LOAD_ACQUIRE(p);
}
static inline void dq_count_store(long *p, long v) {
    DQ_STORE_RELEASE(p, v);
}

/* 1 on a free-threaded build.  A critical section costs nothing there but
   a reference to its object (an incref and decref on a GIL build), so the
   hot paths branch on this constant, which the C compiler folds. */
#define DQ_FREE_THREADED (!DQ_GIL_BUILD)

#endif /* DQ_OWNEDLOCK_H */
