# cython: language_level=3
# The compiled queues' lock (QueueCore, DelayCore): a plain C lock that knows
# its owner thread.  Taking it again from the thread that holds it (a
# comparison or a clock calling back into the queue) raises RuntimeError
# instead of deadlocking; the owner is looked at only when the lock is busy.

from cpython.pythread cimport (
    NOWAIT_LOCK, WAIT_LOCK, PyThread_acquire_lock, PyThread_get_thread_ident,
    PyThread_release_lock, PyThread_type_lock,
)


cdef inline int owned_acquire(PyThread_type_lock mutex, unsigned long* owner) except -1:
    cdef unsigned long me = PyThread_get_thread_ident()
    if not PyThread_acquire_lock(mutex, NOWAIT_LOCK):
        if owner[0] == me:
            raise RuntimeError(
                "the queue was re-entered while this thread holds its lock "
                "(from a comparison of its items?)")
        with nogil:
            PyThread_acquire_lock(mutex, WAIT_LOCK)
    owner[0] = me
    return 0


cdef inline void owned_release(PyThread_type_lock mutex, unsigned long* owner) noexcept:
    owner[0] = 0
    PyThread_release_lock(mutex)
