"""The lock of the threaded queue cores: the pure-Python twin of the compiled ``dq_core._lockcore``.

``LockedBase`` takes a plain lock that knows its owner thread, as the C lock
of ``src/_ownedlock.pxd`` does; ``QueueCore`` (``_queuecore_py``) and
``DelayCore`` (``_delaycore_py``) extend it.

>>> import threading
>>> class Guarded(LockedBase):
...     def __init__(self) -> None:
...         self._mutex, self._owner = threading.Lock(), 0
>>> g = Guarded()
>>> g._lock()
>>> g._lock()
Traceback (most recent call last):
  ...
RuntimeError: the queue was re-entered while this thread holds its lock (from a comparison of its items?)
>>> g._unlock()
"""

from __future__ import annotations

from threading import get_ident
from types import MappingProxyType
from typing import Any, Mapping

__all__ = ["LockedBase"]

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = MappingProxyType({})


class LockedBase:
    """``_lock``/``_unlock`` over a plain lock that knows its owner thread.

    Taking it again from the thread that holds it (a comparison or a clock
    calling back into the structure) raises ``RuntimeError`` instead of
    deadlocking.  The owner is looked at only when the lock is taken.
    """

    _mutex: Any
    _owner: int

    def _lock(self, /) -> None:
        """Take the queue's lock (not re-entrant: re-entry raises RuntimeError)."""
        me = get_ident()
        if not self._mutex.acquire(False):
            if self._owner == me:
                raise RuntimeError(
                    "the queue was re-entered while this thread holds its lock "
                    "(from a comparison of its items?)"
                )
            self._mutex.acquire()
        self._owner = me

    def _unlock(self, /) -> None:
        """Release the queue's lock."""
        self._owner = 0
        self._mutex.release()
