"""Parking threads on their own locks, as threading.Condition does inside.

The queues keep one deque of waiter locks per reason to wait and touch it
only when a thread has to wait, so the uncontended put/get path never calls
into a Condition.
"""

from __future__ import annotations

import threading
from collections import deque
from threading import get_ident
from time import monotonic
from typing import Any, Optional

from ._exceptions import Full, ShutDown

__all__ = ["OwnedLock", "Bounded", "new_waiter", "wait", "notify_all", "check_timeout"]

_allocate_lock = threading.Lock
_TIMEOUT_MAX = threading.TIMEOUT_MAX


def new_waiter() -> Any:
    """A locked lock for one thread to park on until another releases it."""
    waiter = _allocate_lock()
    waiter.acquire()
    return waiter


def wait(owner: Any, waiters: "deque[Any]", timeout: Optional[float],
         waiter: Any = None) -> Any:
    """Release ``owner``'s lock, sleep until notified or ``timeout`` passes, re-take it.

    Returns the waiter lock when notified, None on timeout.  Callers re-check
    their condition either way, like ``Condition.wait`` callers must.
    """
    if waiter is None:
        waiter = new_waiter()
    waiters.append(waiter)
    owner._unlock()
    got = False
    try:
        if timeout is None:
            got = waiter.acquire()
        elif timeout > 0:
            got = waiter.acquire(True, min(timeout, _TIMEOUT_MAX))
        else:
            got = waiter.acquire(False)
        return waiter if got else None
    finally:
        owner._lock()
        if not got:
            try:
                waiters.remove(waiter)
            except ValueError:  # notified as the timeout struck
                pass


def notify_all(waiters: "deque[Any]") -> None:
    while waiters:
        waiters.popleft().release()


def check_timeout(timeout: object) -> None:
    """``ValueError`` for a negative timeout, worded as the queue module does."""
    if timeout < 0:  # type: ignore[operator]
        raise ValueError("'timeout' must be a non-negative number")


class OwnedLock:
    """``_lock``/``_unlock`` over a plain lock that knows its owner thread.

    Taking it again from the thread that holds it (a comparison or a clock
    calling back into the structure) raises ``RuntimeError`` instead of
    deadlocking.  The owner is looked at only when the lock is taken.
    """

    _mutex: Any
    _owner: int

    def _lock(self) -> None:
        """Take the queue's lock (not re-entrant: re-entry raises RuntimeError)."""
        me = get_ident()
        if not self._mutex.acquire(False):
            if self._owner == me:
                raise RuntimeError(
                    "the queue was re-entered while this thread holds its lock "
                    "(from a comparison of its items?)")
            self._mutex.acquire()
        self._owner = me

    def _unlock(self) -> None:
        """Release the queue's lock."""
        self._owner = 0
        self._mutex.release()


class Bounded:
    """The wait for room of a queue with ``maxsize``, as queue.Queue.put waits."""

    __slots__ = ()
    maxsize: Any
    is_shutdown: bool
    _putters: "deque[Any]"

    def _held(self) -> int:
        # The items counted against maxsize.  PriorityQueue, which has no
        # len() (as the stdlib's has none), overrides it.
        return len(self)  # type: ignore[arg-type]

    def _wait_for_room(self, block: bool, timeout: Optional[float]) -> None:
        # Called with the lock held and maxsize > 0.
        if not block:
            if self._held() >= self.maxsize:
                raise Full
        elif timeout is None:
            while self._held() >= self.maxsize:
                wait(self, self._putters, None)
                if self.is_shutdown:
                    raise ShutDown
        else:
            check_timeout(timeout)
            end = monotonic() + timeout
            while self._held() >= self.maxsize:
                remaining = end - monotonic()
                if remaining <= 0.0:
                    raise Full
                wait(self, self._putters, remaining)
                if self.is_shutdown:
                    raise ShutDown
