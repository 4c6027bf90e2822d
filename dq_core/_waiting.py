"""Parking threads on their own locks, as threading.Condition does inside.

The queues keep one deque of waiter locks per reason to wait and touch it
only when a thread has to wait, so the uncontended put/get path never calls
into a Condition.

Every timed wait here sleeps at most ``MAX_WAIT`` seconds at a time and lets
its caller re-check, so an infinite or huge timeout or deadline waits
(practically) forever instead of overflowing the C timeout of
``Lock.acquire`` or ``time.sleep``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from time import monotonic
from typing import Any, Optional

__all__ = ["new_waiter", "wait", "notify_all", "sleep", "MAX_WAIT"]

_allocate_lock = threading.Lock

#: The longest single sleep, in seconds; longer waits sleep in such chunks.
#: Far below threading.TIMEOUT_MAX, which time.sleep itself refuses.
MAX_WAIT = min(86400.0, threading.TIMEOUT_MAX)


def new_waiter() -> Any:
    """A locked lock for one thread to park on until another releases it."""
    waiter = _allocate_lock()
    waiter.acquire()
    return waiter


def wait(owner: Any, waiters: "deque[Any]", timeout: Optional[float], waiter: Any = None) -> Any:
    """Release ``owner``'s lock, sleep until notified or ``timeout`` passes, re-take it.

    Returns the waiter lock when notified, None on timeout.  Callers re-check
    their condition either way, like ``Condition.wait`` callers must: a
    ``timeout`` over ``MAX_WAIT`` returns after ``MAX_WAIT``.
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
            got = waiter.acquire(True, min(timeout, MAX_WAIT))
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


def sleep(seconds: float) -> None:
    """``time.sleep`` that takes any non-negative length, ``inf`` included."""
    end = monotonic() + seconds
    while True:
        left = end - monotonic()
        if not left > 0.0:
            return
        time.sleep(min(left, MAX_WAIT))
