"""Parking threads on their own locks, as threading.Condition does inside.

The queues keep one deque of waiter locks per reason to wait and touch it
only when a thread has to wait, so the uncontended put/get path never calls
into a Condition.

Every timed wait here sleeps at most ``MAX_WAIT`` seconds at a time and lets
its caller re-check, so an infinite or huge timeout or deadline waits
(practically) forever instead of overflowing the C timeout of
``Lock.acquire`` or ``time.sleep``.  Also here: the checks of what users pass
for a timeout or a clock, and ``Uncopyable`` for the classes that own locks
and waiting threads.
"""

from __future__ import annotations

import operator
import threading
import time
from collections import deque
from threading import get_ident
from time import monotonic
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional

from ._convert import to_real
from ._exceptions import Full, ShutDown

__all__ = [
    "OwnedLock", "QueueProtocol", "Uncopyable", "new_waiter", "wait", "notify_all", "check_timeout",
    "check_clock", "read_clock", "check_reading", "check_maxsize", "check_real_maxsize", "sleep", "MAX_WAIT",
]

_allocate_lock = threading.Lock
_INF = float("inf")

#: The longest single sleep, in seconds; longer waits sleep in such chunks.
#: Far below threading.TIMEOUT_MAX, which time.sleep itself refuses.
MAX_WAIT = 86400.0


def new_waiter() -> Any:
    """A locked lock for one thread to park on until another releases it."""
    waiter = _allocate_lock()
    waiter.acquire()
    return waiter


def wait(owner: Any, waiters: "deque[Any]", timeout: Optional[float],
         waiter: Any = None) -> Any:
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


def check_timeout(timeout: object) -> float:
    """Return ``timeout`` as a float; ``ValueError`` if negative or NaN, worded as queue does.

    An integer too large for a float is infinite: a wait that long never ends.
    """
    tp = type(timeout)
    if tp is float:
        t: float = timeout  # type: ignore[assignment]
    elif hasattr(tp, "__index__"):
        i = operator.index(timeout)  # type: ignore[arg-type]
        t = float(i) if -2**1000 < i < 2**1000 else (_INF if i > 0 else -_INF)
    elif hasattr(tp, "__float__"):
        try:
            t = float(timeout)  # type: ignore[arg-type]
        except TypeError as exc:
            raise TypeError(f"timeout must be a real number, not {tp.__name__!r}") from exc
    else:
        raise TypeError(f"timeout must be a real number, not {tp.__name__!r}")
    if not t >= 0.0:
        raise ValueError("'timeout' must be a non-negative number")
    return t


def sleep(seconds: float) -> None:
    """``time.sleep`` that takes any non-negative length, ``inf`` included."""
    end = monotonic() + seconds
    while True:
        left = end - monotonic()
        if not left > 0.0:
            return
        time.sleep(min(left, MAX_WAIT))


def check_clock(clock: object) -> None:
    """``TypeError`` naming ``clock`` unless it is callable."""
    if not callable(clock):
        raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")


def read_clock(clock: Callable[[], float]) -> float:
    """Call ``clock`` and return its reading; a non-number or non-finite one names ``clock()``."""
    return check_reading(clock())


def check_reading(reading: object) -> float:
    """A clock's ``reading`` as a finite float; else ``TypeError``/``ValueError`` naming ``clock()``."""
    if type(reading) is float:
        t: float = reading
    else:
        t = to_real(reading, "clock()")
    if t - t != 0.0:  # inf or NaN
        raise ValueError(f"clock() must return a finite number, got {t!r}")
    return t


def check_maxsize(maxsize: object) -> int:
    """``maxsize`` as an int; ``TypeError`` naming ``maxsize`` unless it is one."""
    if not hasattr(type(maxsize), "__index__"):
        raise TypeError(f"maxsize must be an int, not {type(maxsize).__name__!r}")
    return operator.index(maxsize)  # type: ignore[arg-type]


def check_real_maxsize(maxsize: object) -> float:
    """``maxsize`` of a drop-in asyncio queue: an int as an int, another real number as given.

    asyncio's queues take any number (``full()`` is ``qsize() >= maxsize >
    0``: a float 1.5 holds two items, NaN or infinity never fills); anything
    else raises ``TypeError`` naming ``maxsize``.
    """
    tp = type(maxsize)
    if hasattr(tp, "__index__"):
        return operator.index(maxsize)  # type: ignore[arg-type]
    try:
        if hasattr(tp, "__float__"):
            maxsize > 0  # type: ignore[operator]  # noqa: B015 -- what full() will compare, once now
            return maxsize  # type: ignore[return-value]
    except TypeError:
        pass
    raise TypeError(f"maxsize must be a number, not {tp.__name__!r}")


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


class Uncopyable:
    """Refuses copy.copy, copy.deepcopy and pickle: the object owns locks and waiting threads."""

    __slots__ = ()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError(
            f"cannot pickle or copy {type(self).__name__!r} object: "
            "it owns a lock and the threads waiting on it")


class QueueProtocol:
    """What the thread-safe queues share: admission (shutdown, room) and shutdown.

    A queue using it has ``maxsize``, ``is_shutdown``, the waiter deques
    ``_getters`` and ``_putters``, ``_lock``/``_unlock``, and ``_on_shutdown``,
    which empties it on an immediate shutdown.
    """

    maxsize: Any
    is_shutdown: bool
    _getters: "deque[Any]"
    _putters: "deque[Any]"

    if TYPE_CHECKING:  # provided by the queue (OwnedLock or QueueCore)
        def _lock(self) -> None: ...
        def _unlock(self) -> None: ...

    def _held(self) -> int:
        # The items counted against maxsize.  PriorityQueue, which has no
        # len() (as the stdlib's has none), overrides it.
        return len(self)  # type: ignore[arg-type]

    def _check_drained(self) -> None:
        # What a taker meets once the queue is shut down and holds nothing.
        if self.is_shutdown and not self._held():
            raise ShutDown

    def _on_shutdown(self, immediate: bool) -> object:
        """Called with the lock held by shutdown: return what an immediate one drops."""
        raise NotImplementedError

    def _admit(self, block: bool, timeout: Optional[float]) -> None:
        """Called with the lock held before an item goes in: ShutDown, or wait for room."""
        if self.is_shutdown:
            raise ShutDown
        if self.maxsize > 0:
            self._wait_for_room(block, timeout)

    def _wait_for_room(self, block: bool, timeout: Optional[float]) -> None:
        # Called with the lock held and maxsize > 0, as queue.Queue.put waits.
        if not block:
            if self._held() >= self.maxsize:
                raise Full
        elif timeout is None:
            while self._held() >= self.maxsize:
                wait(self, self._putters, None)
                if self.is_shutdown:
                    raise ShutDown
        else:
            end = monotonic() + check_timeout(timeout)
            while self._held() >= self.maxsize:
                remaining = end - monotonic()
                if remaining <= 0.0:
                    raise Full
                wait(self, self._putters, remaining)
                if self.is_shutdown:
                    raise ShutDown

    def _shut_down(self, immediate: bool) -> None:
        """The work of ``shutdown``: from now on ``put`` raises ``ShutDown``; wake every waiter."""
        dropped: object = None
        self._lock()
        try:
            self.is_shutdown = True
            dropped = self._on_shutdown(immediate)
            notify_all(self._getters)
            notify_all(self._putters)
        finally:
            self._unlock()
        del dropped  # item finalisers run outside the lock
