# cython: language_level=3
# The compiled queues' lock (QueueCore, DelayCore): a C lock that knows its
# owner thread, so that re-entering a queue raises instead of deadlocking.
# The C is src/include/dq_ownedlock.h, which says how it works.

cdef extern from "dq_ownedlock.h":
    ctypedef struct dq_owned_lock:
        pass
    int owned_init "dq_lock_init"(dq_owned_lock* lock) except -1
    void owned_free "dq_lock_free"(dq_owned_lock* lock) noexcept
    int owned_acquire "dq_lock_acquire"(dq_owned_lock* lock) except -1
    void owned_release "dq_lock_release"(dq_owned_lock* lock) noexcept
    bint owned_try "dq_lock_try"(dq_owned_lock* lock) noexcept
    bint owned_held "dq_lock_held"(dq_owned_lock* lock) noexcept
    # a count changed by one thread outside the lock, read by others under it:
    # a store-release after the change it counts, a load-acquire before reading it
    long count_load "dq_count_load"(long* p) noexcept
    void count_store "dq_count_store"(long* p, long v) noexcept
    # True on a free-threaded build.  A critical section costs nothing there
    # but a reference to its object (an incref and decref on a GIL build), so
    # the hot paths branch on this constant, which the C compiler folds.
    const bint DQ_FREE_THREADED


cdef inline int owned_unlock(dq_owned_lock* lock) except -1:
    # The Python-level _unlock(): releasing a free lock raises, as
    # threading.Lock.release does in the pure twin (never a count below 0).
    if not owned_held(lock):
        raise RuntimeError("release unlocked lock")
    owned_release(lock)
    return 0
