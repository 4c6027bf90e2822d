"""DelayQueue: items that can be taken only once their deadline has passed.

Built on the keyed Heap (deadline as priority, so equal deadlines come out
first-in first-out and handles cancel or reschedule in O(log n)).  The
uncontended paths (put, get's first attempt, get_many, cancel, reschedule)
run in ``DelayCore``, compiled or pure, which holds the lock and reads the
clock.  This module adds what both implementations share: waiting and
shutdown.  Waiting follows java.util.concurrent.DelayQueue's leader-follower
pattern: of all the threads waiting in ``get``, one (the leader) sleeps
exactly until the head is due; the others sleep until woken.  A new earlier
head, or a cancelled or rescheduled one, wakes the leader, which re-sleeps
until the new head's deadline: no polling loop, no sleep granularity.

User code (the clock, an item's ``__del__``) never runs with the lock held
where it could lose an item: the clock is read under the lock only in
``get`` and ``get_many`` and raises out cleanly, and removed items are
dropped after the lock is released, so a finaliser may put into the queue.
"""

from __future__ import annotations

import types
from time import monotonic
from typing import TYPE_CHECKING, Generic, Iterator, Optional

from ._exceptions import SHUTDOWN_GET, Empty, ShutDown
from ._pickling import Uncopyable
from ._queueprotocol import QueueProtocol
from ._queuerepr import delay_queue_repr
from ._waiting import new_waiter, wait

if TYPE_CHECKING:
    from ._delaycore_py import DelayCore, T

    _Core = DelayCore
else:
    from typing import TypeVar

    T = TypeVar("T")
    _Core = Generic  # dq_core._assemble adds an implementation's DelayCore

__all__ = ["DelayQueue"]


class DelayQueue(QueueProtocol, Uncopyable, _Core[T]):
    """Thread-safe queue whose items can be taken only once their deadline passed.

    ``put(item, delay)`` makes ``item`` due at ``clock() + delay``; ``get``
    returns the earliest-due item once due, never early; equal deadlines
    come out first-in first-out.  ``put`` returns a handle for ``cancel`` and
    ``reschedule``.  ``maxsize > 0`` bounds the items held, due or not.
    A deadline of ``inf`` (an infinite delay) is never due: the item waits
    until cancelled, rescheduled or dropped.  ``clock`` must return finite
    real numbers.  The queue cannot be copied or pickled.

    >>> clock = iter([0.0, 0.0, 5.0]).__next__
    >>> dq = DelayQueue(clock=clock)
    >>> handle = dq.put("close order 7", delay=2.0)
    >>> dq.get_many()          # clock() == 0.0: nothing due yet
    []
    >>> dq.get_many()          # clock() == 5.0
    ['close order 7']
    """

    __slots__ = ()
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    def _wait_due(self, delay: Optional[float], end: Optional[float]) -> None:
        # Called by get with the lock held when nothing is due: the head is
        # ``delay`` seconds off (None: the queue is empty); give up with
        # Empty at monotonic time ``end`` (None: never).  Returns once the
        # head is due, for get to take it.
        heap = self._heap
        while True:
            remaining = None
            if end is not None:
                remaining = end - monotonic()
                if remaining <= 0.0:
                    raise Empty
            if delay is not None and self._leader is None and (remaining is None or delay <= remaining):
                waiter = self._leader = new_waiter()
                try:
                    wait(self, self._getters, delay, waiter)
                finally:
                    if self._leader is waiter:
                        self._leader = None
            else:
                wait(self, self._getters, remaining)
            if heap:
                deadline = heap.peekitem()[0]
                now = self._now()
                if now >= deadline:
                    return
                delay = deadline - now
            elif self.is_shutdown:
                raise ShutDown(SHUTDOWN_GET)
            else:
                delay = None

    def __iter__(self) -> Iterator[T]:
        """Yield items as they come due, until shut down and drained."""
        while True:
            try:
                yield self.get()
            except ShutDown:
                return

    # -- shutdown -------------------------------------------------------------

    def shutdown(self, immediate: bool = False) -> None:
        """Shut the queue down: ``put`` raises ``ShutDown`` from now on.

        Getters go on receiving items as they come due, then raise
        ``ShutDown``.  With ``immediate``, the items are dropped and every
        waiting and later ``get`` raises ``ShutDown`` at once.
        """
        self._shut_down(immediate)

    def _on_shutdown(self, immediate: bool) -> object:
        self._leader = None
        return self._heap.pop_many(len(self._heap)) if immediate else None

    def __repr__(self) -> str:
        return delay_queue_repr(self)
