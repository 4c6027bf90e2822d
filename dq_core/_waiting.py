"""Parking threads on their own locks, as threading.Condition does inside.

The queues keep one deque of waiter locks per reason to wait and touch it
only when a thread has to wait, so the uncontended put/get path never calls
into a Condition.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Optional

__all__ = ["Waiters", "wait", "notify_all", "check_timeout"]

Waiters = deque  # of locked threading.Lock objects, oldest first
_allocate_lock = threading.Lock
_TIMEOUT_MAX = threading.TIMEOUT_MAX


def wait(owner: Any, waiters: "deque[Any]", timeout: Optional[float]) -> Any:
    """Release ``owner``'s lock, sleep until notified or ``timeout`` passes, re-take it.

    Returns the waiter lock when notified, None on timeout.  Callers re-check
    their condition either way, like ``Condition.wait`` callers must.
    """
    waiter = _allocate_lock()
    waiter.acquire()
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
