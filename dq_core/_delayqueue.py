"""DelayQueue: items that can be taken only once their deadline has passed.

Built on the keyed Heap (deadline as priority, so equal deadlines come out
first-in first-out and handles cancel or reschedule in O(log n)).  Waiting
follows java.util.concurrent.DelayQueue's leader-follower pattern: of all
the threads waiting in ``get``, one (the leader) sleeps exactly until the
head is due; the others sleep until woken.  A new earlier head, or a
cancelled or rescheduled one, wakes the leader, which re-sleeps until the
new head's deadline: no polling loop, no sleep granularity.

User code (the clock, an item's ``__del__``) never runs with the lock held
where it could lose an item: the clock is read under the lock only in
``get`` and raises out cleanly, and removed items are dropped after the
lock is released, so a finaliser may put into the queue.
"""

from __future__ import annotations

import operator
import reprlib
import threading
import time
import types
from collections import deque
from time import monotonic
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Iterator, Optional, TypeVar

from ._convert import to_count, to_real
from ._exceptions import Empty, ShutDown
from ._waiting import (
    QueueProtocol,
    OwnedLock,
    Uncopyable,
    check_clock,
    check_timeout,
    new_waiter,
    notify_all,
    read_clock,
    wait,
)

if TYPE_CHECKING:
    from ._heap_py import Heap

__all__ = ["DelayQueue"]

T = TypeVar("T")


class DelayQueue(QueueProtocol, OwnedLock, Uncopyable, Generic[T]):
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

    #: The keyed heap class of the implementation: set by dq_core._assemble.
    _Heap: ClassVar[type[Heap[Any]]]

    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, maxsize: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        check_clock(clock)
        self._maxsize = _check_maxsize(maxsize)
        self.is_shutdown = False
        self._clock = clock
        self._heap: Heap[T] = self._Heap()
        self._mutex = threading.Lock()
        self._owner = 0
        self._getters: deque[Any] = deque()  # every thread waiting in get
        self._leader: Any = None  # the waiter lock of the one sleeping until the head
        self._putters: deque[Any] = deque()

    @property
    def maxsize(self) -> int:
        """The most items held at once (due or not); 0 or less: no bound."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, maxsize: int) -> None:
        n = _check_maxsize(maxsize)
        self._lock()
        try:
            self._maxsize = n
            notify_all(self._putters)  # they re-check for room
        finally:
            self._unlock()

    # -- sizes ----------------------------------------------------------------

    def qsize(self) -> int:
        """Return the number of items held, due or not (not reliable!).  O(1)."""
        return len(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def _head_deadline(self) -> Optional[float]:
        heap = self._heap
        return heap.peekitem()[0] if heap else None

    def next_deadline(self) -> Optional[float]:
        """Return the earliest deadline held, or None if empty.  O(1)."""
        self._lock()
        try:
            return self._head_deadline()
        finally:
            self._unlock()

    # -- put ------------------------------------------------------------------

    def put(self, item: T, delay: float = 0.0, *, block: bool = True,
            timeout: Optional[float] = None) -> int:
        """Add ``item``, due ``delay`` seconds from now; return its handle.  O(log n).

        A ``delay`` <= 0 makes it due at once.  With ``maxsize`` reached,
        blocks like ``queue.Queue.put`` (``block``, ``timeout``, ``Full``).
        Raises ``ShutDown`` once the queue is shut down.
        """
        d = delay if type(delay) is float and delay == delay else to_real(delay, "delay")
        # read_clock refuses a non-finite reading, so an infinite delay
        # makes an infinite deadline, never NaN.
        return self._put(item, read_clock(self._clock) + d, block, timeout)

    def put_at(self, item: T, deadline: float, *, block: bool = True,
               timeout: Optional[float] = None) -> int:
        """Add ``item``, due at ``deadline`` (on the queue's clock); return its handle.  O(log n).

        Otherwise as ``put``.
        """
        return self._put(item, to_real(deadline, "deadline"), block, timeout)

    def _put(self, item: T, deadline: float, block: bool, timeout: Optional[float]) -> int:
        self._lock()
        try:
            self._admit(block, timeout)
            heap = self._heap
            head = self._head_deadline()
            handle = heap.push(deadline, item)
            if head is None or deadline < head:
                self._head_changed()
            return handle
        finally:
            self._unlock()

    def _head_changed(self) -> None:
        # Wake the leader to re-sleep until the new head; with no leader, wake
        # a follower to become one.
        leader = self._leader
        if leader is not None:
            self._leader = None
            try:
                self._getters.remove(leader)
            except ValueError:  # its sleep is already over
                return
            leader.release()
        elif self._getters:
            self._getters.popleft().release()

    # -- get ------------------------------------------------------------------

    def get(self, block: bool = True, timeout: Optional[float] = None) -> T:
        """Remove and return the earliest-due item once it is due.  O(log n).

        With ``block`` true, waits until an item is due (at most ``timeout``
        seconds, then ``Empty``); with ``block`` false, raises ``Empty`` at
        once if nothing is due.  Once shut down, raises ``ShutDown`` when no
        item is left.
        """
        end = None if timeout is None or not block else check_timeout(timeout)
        self._lock()
        try:
            if end is not None:
                end += monotonic()
            heap = self._heap
            while True:
                if heap:
                    deadline = heap.peekitem()[0]
                    now = read_clock(self._clock)
                    if now >= deadline:
                        return self._take()
                    if not block:
                        raise Empty
                    delay: Optional[float] = deadline - now
                else:
                    if self.is_shutdown:
                        raise ShutDown
                    if not block:
                        raise Empty
                    delay = None
                remaining = None
                if end is not None:
                    remaining = end - monotonic()
                    if remaining <= 0.0:
                        raise Empty
                if delay is not None and self._leader is None and (
                        remaining is None or delay <= remaining):
                    waiter = self._leader = new_waiter()
                    try:
                        wait(self, self._getters, delay, waiter)
                    finally:
                        if self._leader is waiter:
                            self._leader = None
                else:
                    wait(self, self._getters, remaining)
        finally:
            # Someone must watch the head: hand the lead on.
            if self._leader is None and self._heap and self._getters:
                self._getters.popleft().release()
            self._unlock()

    def get_nowait(self) -> T:
        """Remove and return the earliest-due item if it is due, else ``Empty``.  O(log n)."""
        return self.get(False)

    def _take(self) -> T:
        heap = self._heap
        item = heap.pop()
        if self._putters:
            self._putters.popleft().release()
        if self.is_shutdown and not heap:
            notify_all(self._getters)  # they raise ShutDown now
        return item

    def get_many(self, max_items: Optional[int] = None) -> list[T]:
        """Remove and return every item due now (at most ``max_items``), earliest first.  O(k log n).

        Never blocks.  Once shut down and empty, raises ``ShutDown``.
        """
        limit = None if max_items is None else to_count(max_items, "max_items")
        self._lock()
        try:
            heap = self._heap
            if self.is_shutdown and not heap:
                raise ShutDown
            now = read_clock(self._clock)
            out: list[T] = []
            while heap and (limit is None or len(out) < limit) and heap.peekitem()[0] <= now:
                out.append(self._take())
            return out
        finally:
            self._unlock()

    def __iter__(self) -> Iterator[T]:
        """Yield items as they come due, until shut down and drained."""
        while True:
            try:
                yield self.get()
            except ShutDown:
                return

    # -- handles ----------------------------------------------------------------

    def cancel(self, handle: int) -> bool:
        """Remove the item behind ``handle``; True if it was still held.  O(log n)."""
        item: Any = None
        self._lock()
        try:
            heap = self._heap
            head = self._head_deadline()
            try:
                item = heap.remove(handle)
            except KeyError:
                return False
            if self._head_deadline() != head:
                self._head_changed()
            if self._putters:
                self._putters.popleft().release()
            if self.is_shutdown and not heap:
                notify_all(self._getters)
            return True
        finally:
            self._unlock()
            del item  # its finaliser may use the queue: not under the lock

    def reschedule(self, handle: int, delay: float) -> bool:
        """Make the item behind ``handle`` due ``delay`` seconds from now.  O(log n).

        Returns False if the handle is stale.  The item goes behind others
        with the same deadline.
        """
        deadline = to_real(delay, "delay")
        deadline += read_clock(self._clock)
        self._lock()
        try:
            heap = self._heap
            head = self._head_deadline()
            try:
                heap.update(handle, deadline)
            except KeyError:
                return False
            if self._head_deadline() != head:
                self._head_changed()
            return True
        finally:
            self._unlock()

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

    def _check(self) -> None:
        """Assert the invariants: heap order, and no lock or leader left behind when idle."""
        assert self._mutex.acquire(False), "the lock is held"
        try:
            self._heap._check()
            if not self._getters:
                assert self._leader is None, "a leader without waiting getters"
            else:
                assert self._leader is None or self._leader in self._getters
        finally:
            self._mutex.release()

    def __repr__(self) -> str:
        heap = self._heap
        if not heap:
            return f"<{type(self).__name__} len=0>"
        return (f"<{type(self).__name__} len={len(heap)} "
                f"next_deadline={reprlib.repr(heap.peekitem()[0])}>")


def _check_maxsize(maxsize: object) -> int:
    if not hasattr(type(maxsize), "__index__"):
        raise TypeError(f"maxsize must be an int, not {type(maxsize).__name__!r}")
    return operator.index(maxsize)  # type: ignore[arg-type]
