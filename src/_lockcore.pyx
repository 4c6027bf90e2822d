# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""The lock of the threaded queue cores: the compiled twin of ``dq_core._lockcore_py``.

``LockedBase`` holds the C lock of ``src/_ownedlock.pxd``, which knows its
owner thread, so that a comparison or a clock re-entering the queue gets
``RuntimeError`` instead of a deadlock.  ``QueueCore`` (``_queuecore``) and
``DelayCore`` (``_delaycore``) extend it, through its C interface in
``dq_core/_lockcore.pxd``.
"""

import types

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
from _ownedlock cimport owned_free, owned_init, owned_unlock

__all__ = ["LockedBase"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({})


cdef class LockedBase:
    """LockedBase()\n--\n\nThe C lock of a threaded queue core (QueueCore, DelayCore)."""

    def __cinit__(self, *args, **kwargs):
        owned_init(&self._mutex)

    def __dealloc__(self):
        owned_free(&self._mutex)

    def _lock(self):
        """Take the queue's lock (not re-entrant: re-entry raises RuntimeError)."""
        self._acquire()

    def _unlock(self):
        """Release the queue's lock."""
        owned_unlock(&self._mutex)
