# cython: language_level=3
# The C interface of dq_core._lockcore: LockedBase, the lock of both threaded
# queue cores (QueueCore in _queuecore, DelayCore in _delaycore), which take
# and release it without a Python call.  This file's path names the module,
# dq_core._lockcore (see dq_core/_ringcore.pxd).

cimport cython
from _ownedlock cimport dq_owned_lock, owned_acquire, owned_release


cdef class LockedBase:
    # The queue's C lock (see _ownedlock.pxd): made with the object, freed
    # with it; _lock/_unlock are its Python face (dq_core._waiting's waits
    # release and retake it).
    cdef dq_owned_lock _mutex

    @cython.final
    cdef inline int _acquire(self) except -1:
        return owned_acquire(&self._mutex)

    @cython.final
    cdef inline void _release(self) noexcept:
        owned_release(&self._mutex)
