"""OwnedLock: a plain lock that knows its owner thread (the twin of ``src/_ownedlock.pxd``)."""

from __future__ import annotations

from threading import get_ident
from typing import Any

__all__ = ["OwnedLock"]


class OwnedLock:
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
                    "(from a comparison of its items?)")
            self._mutex.acquire()
        self._owner = me

    def _unlock(self, /) -> None:
        """Release the queue's lock."""
        self._owner = 0
        self._mutex.release()
