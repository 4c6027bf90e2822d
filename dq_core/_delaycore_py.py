"""DelayQueue's core: the pure-Python twin of the compiled ``dq_core._delaycore``.

``DelayCore`` holds the lock, the keyed Heap (deadline as priority) and the
uncontended paths of ``dq_core.DelayQueue``: put, get's first attempt,
get_many, cancel and reschedule, with the head check and the clock read.
Waiting (``_wait_due``, ``_wait_for_room``) and shutdown live in
``dq_core._delayqueue``, shared by both implementations; they call back into
``_lock()``/``_unlock()`` and ``_now()`` and park on the waiter deques.

The core alone never waits:

>>> core = DelayCore(clock=iter([0.0, 0.0, 5.0]).__next__)
>>> handle = core.put("due at 2", delay=2.0)
>>> core.get_many(), core.get_many()
([], ['due at 2'])
"""

from __future__ import annotations

import threading
import time
from collections import deque
from time import monotonic
from types import MappingProxyType
from typing import Any, Callable, Generic, Mapping, Optional, TypeVar

from ._convert import to_count, to_real
from ._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT, Empty, ShutDown
from ._heapcore_py import Heap
from ._lockcore_py import LockedBase
from ._validate import check_clock, check_maxsize, check_timeout, read_clock
from ._waiting import notify_all

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = MappingProxyType({})


__all__ = ["DelayCore"]

T = TypeVar("T")


class DelayCore(LockedBase, Generic[T]):
    """The lock, the heap and the uncontended paths of DelayQueue.

    Items are held in a keyed ``Heap`` with their deadline as priority, so
    equal deadlines come out first-in first-out and handles cancel or
    reschedule in O(log n).  What waits (a ``get`` with nothing due, a
    ``put`` with no room) calls the hooks ``_wait_due`` and
    ``_wait_for_room`` that ``dq_core._delayqueue`` provides, with the lock
    held.  User code (the clock, an item's ``__del__``) runs where it cannot
    lose an item: the clock is read under the lock only in ``get`` and
    ``get_many``, and removed items are dropped after the lock is released.
    """

    __slots__ = (
        "_heap",
        "_mutex",
        "_owner",
        "_clock",
        "_maxsize",
        "is_shutdown",
        "_getters",
        "_putters",
        "_leader",
    )

    is_shutdown: bool

    def __init__(self, maxsize: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        check_clock(clock)
        self._maxsize = check_maxsize(maxsize)
        self.is_shutdown = False
        self._clock = clock
        self._heap: Heap[T] = Heap()
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
        n = check_maxsize(maxsize)
        self._lock()
        try:
            self._maxsize = n
            notify_all(self._putters)  # they re-check for room
        finally:
            self._unlock()

    # Hooks the shared layer (dq_core._delayqueue) provides.
    def _wait_for_room(self, block: bool, timeout: Optional[float]) -> None:
        raise NotImplementedError

    def _wait_due(self, delay: Optional[float], end: Optional[float]) -> None:
        raise NotImplementedError

    def _now(self, /) -> float:
        """One reading of the queue's clock (a finite float)."""
        return read_clock(self._clock)

    # -- sizes ----------------------------------------------------------------

    def qsize(self, /) -> int:
        """Return the number of items held, due or not (not reliable!).  O(1)."""
        return len(self._heap)

    def __len__(self, /) -> int:
        """Return len(self)."""
        return len(self._heap)

    def next_deadline(self, /) -> Optional[float]:
        """Return the earliest deadline held, or None if empty.  O(1)."""
        self._lock()
        try:
            heap = self._heap
            return heap.peekitem()[0] if heap else None
        finally:
            self._unlock()

    # -- put ------------------------------------------------------------------

    def put(
        self, /, item: T, delay: float = 0.0, *, block: bool = True, timeout: Optional[float] = None
    ) -> int:
        """Add ``item``, due ``delay`` seconds from now; return its handle.  O(log n).

        A ``delay`` <= 0 makes it due at once.  With ``maxsize`` reached,
        blocks like ``queue.Queue.put`` (``block``, ``timeout``, ``Full``).
        Raises ``ShutDown`` once the queue is shut down.
        """
        d = delay if type(delay) is float and delay == delay else to_real(delay, "delay")
        # read_clock refuses a non-finite reading, so an infinite delay
        # makes an infinite deadline, never NaN.
        return self._put(item, read_clock(self._clock) + d, block, timeout)

    def put_at(
        self, /, item: T, deadline: float, *, block: bool = True, timeout: Optional[float] = None
    ) -> int:
        """Add ``item``, due at ``deadline`` (on the queue's clock); return its handle.  O(log n).

        Otherwise as ``put``.
        """
        return self._put(item, to_real(deadline, "deadline"), block, timeout)

    def _put(self, item: T, deadline: float, block: bool, timeout: Optional[float]) -> int:
        self._lock()
        try:
            if self.is_shutdown:
                raise ShutDown(SHUTDOWN_PUT)
            if self._maxsize > 0:
                self._wait_for_room(block, timeout)
            heap = self._heap
            head = heap.peekitem()[0] if heap else None
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

    def get(self, /, block: bool = True, timeout: Optional[float] = None) -> T:
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
            if heap:
                deadline = heap.peekitem()[0]
                now = read_clock(self._clock)
                if now >= deadline:
                    return self._take()
                if not block:
                    raise Empty
                self._wait_due(deadline - now, end)
            else:
                if self.is_shutdown:
                    raise ShutDown(SHUTDOWN_GET)
                if not block:
                    raise Empty
                self._wait_due(None, end)
            return self._take()
        finally:
            # Someone must watch the head: hand the lead on.
            if self._leader is None and self._heap and self._getters:
                self._getters.popleft().release()
            self._unlock()

    def get_nowait(self, /) -> T:
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

    def get_many(self, /, max_items: Optional[int] = None) -> list[T]:
        """Remove and return every item due now (at most ``max_items``), earliest first.  O(k log n).

        Never blocks.  Once shut down and empty, raises ``ShutDown``.
        """
        limit = None if max_items is None else to_count(max_items, "max_items")
        self._lock()
        try:
            heap = self._heap
            if self.is_shutdown and not heap:
                raise ShutDown(SHUTDOWN_GET)
            now = read_clock(self._clock)
            out: list[T] = []
            while heap and (limit is None or len(out) < limit) and heap.peekitem()[0] <= now:
                out.append(self._take())
            return out
        finally:
            self._unlock()

    # -- handles ----------------------------------------------------------------

    def cancel(self, /, handle: int) -> bool:
        """Remove the item behind ``handle``; True if it was still held.  O(log n)."""
        item: Any = None
        self._lock()
        try:
            heap = self._heap
            head = heap.peekitem()[0] if heap else None
            try:
                item = heap.remove(handle)
            except KeyError:
                return False
            if not heap or heap.peekitem()[0] != head:
                self._head_changed()
            if self._putters:
                self._putters.popleft().release()
            if self.is_shutdown and not heap:
                notify_all(self._getters)
            return True
        finally:
            self._unlock()
            del item  # its finaliser may use the queue: not under the lock

    def reschedule(self, /, handle: int, delay: float) -> bool:
        """Make the item behind ``handle`` due ``delay`` seconds from now.  O(log n).

        Returns False if the handle is stale.  The item goes behind others
        with the same deadline.
        """
        deadline = to_real(delay, "delay")
        deadline += read_clock(self._clock)
        self._lock()
        try:
            heap = self._heap
            head = heap.peekitem()[0] if heap else None
            try:
                heap.update(handle, deadline)
            except KeyError:
                return False
            if heap.peekitem()[0] != head:
                self._head_changed()
            return True
        finally:
            self._unlock()

    def _check(self, /) -> None:
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
