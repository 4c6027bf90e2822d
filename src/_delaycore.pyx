# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""DelayQueue's core: the compiled twin of ``dq_core._delaycore_py``.

``DelayCore`` holds the C lock, the keyed Heap (deadline as priority;
the compiled one, driven through its C interface in dq_core/_heapcore.pxd)
and the uncontended paths of ``dq_core.DelayQueue``: put, get's first
attempt, get_many, cancel and reschedule, with the head check and the
clock read (``time.monotonic`` is read in C).  Waiting (``_wait_due``,
``_wait_for_room``) and shutdown live in ``dq_core._delayqueue``, shared
by both implementations; they call back into ``_lock()``/``_unlock()`` and
``_now()`` and park on the waiter deques.
"""

cimport cython
from _shortcuts cimport dq_shortcut_switches
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.object cimport Py_SIZE
from _ownedlock cimport DQ_FREE_THREADED, owned_release, owned_try

from _clock cimport dq_monotonic
from _number cimport _real
from dq_core._heapcore cimport Heap
from dq_core._lockcore cimport LockedBase

import time
import types
from collections import deque

from dq_core._convert import to_count
from dq_core._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT, Empty, ShutDown
from dq_core._signature import signature
from dq_core._validate import check_clock, check_maxsize, check_reading, check_timeout
from dq_core._waiting import notify_all

__all__ = ["DelayCore"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({
    "monotonic_clock_gettime": dq_shortcut_switches()["monotonic_clock_gettime"],
})

cdef object MONOTONIC = time.monotonic
cdef Py_ssize_t NO_LIMIT = <Py_ssize_t>(<size_t>-1 >> 1)
cdef object _STALE = object()  # _by_handle's answer for a stale handle


# The heap operations of the hot paths, which run in a critical section on
# the heap on a free-threaded build only (see DQ_FREE_THREADED).

cdef inline object _push(Heap heap, double deadline, object item, bint* was_empty, double* head):
    was_empty[0] = heap._n == 0
    head[0] = heap._hkey[heap._off]  # read only if not empty
    return heap._push_key(deadline, item)


cdef inline Py_ssize_t _head(Heap heap, double* deadline) noexcept:
    deadline[0] = heap._hkey[heap._off]  # read only if not empty
    return heap._n


@cython.no_gc_clear  # _heap and the waiter deques are never None under a method
@cython.auto_pickle(False)
cdef class DelayCore(LockedBase):
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

    cdef readonly Heap _heap
    # _clock and _maxsize are replaced by __init__ and the maxsize setter
    # while other threads may read them: without a GIL, reading such a field
    # while another thread replaces it could take a reference to a freed
    # object, so both happen in a critical section (nothing on a GIL build).
    # The heap is driven under the lock and, for a free-threaded build, in a
    # critical section on it too, as its own methods run (``_heapcore`` is
    # reachable from Python).
    cdef object _clock
    cdef object _maxsize
    cdef bint _bounded            # _maxsize > 0
    cdef public bint is_shutdown
    # threads parked in get (every one) and put, and the waiter lock of the
    # one sleeping until the head (see dq_core._waiting); always exact
    # deques, whose length Py_SIZE reads without a call
    cdef readonly object _getters, _putters
    cdef public object _leader

    __class_getitem__ = classmethod(types.GenericAlias)
    # the class's signature for inspect (clock=time.monotonic has no text form)
    __signature__ = signature(("maxsize", 0), ("clock", time.monotonic))

    def __cinit__(self, *args, **kwargs):
        self._heap = Heap()
        self._getters = deque()
        self._putters = deque()
        self._clock = MONOTONIC
        self._maxsize = 0

    def __init__(self, maxsize=0, clock=time.monotonic):
        check_clock(clock)
        self._set_maxsize(check_maxsize(maxsize))
        self.is_shutdown = False
        with cython.critical_section(self):
            old = self._clock
            self._clock = clock
        del old  # dies out of the critical section

    # -- the lock: LockedBase's (dq_core._lockcore) ----------------------------

    @property
    def maxsize(self):
        """The most items held at once (due or not); 0 or less: no bound."""
        with cython.critical_section(self):
            return self._maxsize

    @maxsize.setter
    def maxsize(self, maxsize):
        n = check_maxsize(maxsize)
        self._acquire()
        try:
            self._set_maxsize(n)
            notify_all(self._putters)  # they re-check for room
        finally:
            self._release()

    @cython.final
    cdef inline int _set_maxsize(self, object n) except -1:
        # n is an int: nothing here runs Python code
        with cython.critical_section(self):
            old = self._maxsize
            self._maxsize = n
            self._bounded = n > 0
        return 0  # old dies out of the critical section

    # Hooks the shared layer (dq_core._delayqueue) provides.
    def _wait_for_room(self, block, timeout):
        raise NotImplementedError

    def _wait_due(self, delay, end):
        raise NotImplementedError

    def _now(self):
        """One reading of the queue's clock (a finite float)."""
        return self._read()

    @cython.final
    cdef inline double _read(self) except? -1.0:
        cdef double t
        if self._clock is MONOTONIC:
            dq_monotonic(&t)
            return t
        return self._read_clock()

    @cython.final
    cdef double _read_clock(self) except? -1.0:
        # A clock of the user's: a Python call, and its reading checked.
        cdef double t
        with cython.critical_section(self):
            clock = self._clock
        reading = clock()
        if type(reading) is float:
            t = PyFloat_AS_DOUBLE(reading)
            if t - t == 0.0:  # finite
                return t
        return check_reading(reading)

    # -- sizes ----------------------------------------------------------------

    def qsize(self):
        """Return the number of items held, due or not (not reliable!).  O(1)."""
        return self._heap._n

    def __len__(self):
        return self._heap._n

    def next_deadline(self):
        """Return the earliest deadline held, or None if empty.  O(1)."""
        cdef Heap heap = self._heap
        self._acquire()
        try:
            with cython.critical_section(heap):
                return heap._hkey[heap._off] if heap._n else None
        finally:
            self._release()

    # -- put ------------------------------------------------------------------

    def put(self, item, delay=0.0, *, block=True, timeout=None):
        """Add ``item``, due ``delay`` seconds from now; return its handle.  O(log n).

        A ``delay`` <= 0 makes it due at once.  With ``maxsize`` reached,
        blocks like ``queue.Queue.put`` (``block``, ``timeout``, ``Full``).
        Raises ``ShutDown`` once the queue is shut down.
        """
        cdef double d = _real(delay, "delay")
        # _read refuses a non-finite reading, so an infinite delay makes an
        # infinite deadline, never NaN.
        return self._put(item, self._read() + d, block, timeout)

    def put_at(self, item, deadline, *, block=True, timeout=None):
        """Add ``item``, due at ``deadline`` (on the queue's clock); return its handle.  O(log n).

        Otherwise as ``put``.
        """
        return self._put(item, _real(deadline, "deadline"), block, timeout)

    @cython.final
    cdef object _put(self, object item, double deadline, object block, object timeout):
        cdef Heap heap = self._heap
        cdef bint was_empty
        cdef double head
        self._acquire()
        try:
            if self.is_shutdown:
                raise ShutDown(SHUTDOWN_PUT)
            if self._bounded:
                self._wait_for_room(block, timeout)
            if DQ_FREE_THREADED:
                with cython.critical_section(heap):
                    handle = _push(heap, deadline, item, &was_empty, &head)
            else:
                handle = _push(heap, deadline, item, &was_empty, &head)
            if was_empty or deadline < head:
                self._head_changed()
            return handle
        finally:
            self._release()

    @cython.final
    cdef int _head_changed(self) except -1:
        # Wake the leader to re-sleep until the new head; with no leader, wake
        # a follower to become one.
        leader = self._leader
        if leader is not None:
            self._leader = None
            try:
                self._getters.remove(leader)
            except ValueError:  # its sleep is already over
                return 0
            leader.release()
        elif Py_SIZE(self._getters):
            self._getters.popleft().release()
        return 0

    # -- get ------------------------------------------------------------------

    def get(self, block=True, timeout=None):
        """Remove and return the earliest-due item once it is due.  O(log n).

        With ``block`` true, waits until an item is due (at most ``timeout``
        seconds, then ``Empty``); with ``block`` false, raises ``Empty`` at
        once if nothing is due.  Once shut down, raises ``ShutDown`` when no
        item is left.
        """
        cdef double now
        end = None if timeout is None or not block else check_timeout(timeout)
        self._acquire()
        try:
            if end is not None:
                dq_monotonic(&now)
                end += now
            return self._get(block, end)
        finally:
            self._hand_on_and_release()

    def get_nowait(self):
        """Remove and return the earliest-due item if it is due, else ``Empty``.  O(log n)."""
        self._acquire()
        try:
            return self._get(False, None)
        finally:
            self._hand_on_and_release()

    @cython.final
    cdef object _get(self, bint block, object end):
        # With the lock held: the head if it is due, else wait for it.
        cdef Heap heap = self._heap
        cdef double deadline, now
        cdef Py_ssize_t n
        if DQ_FREE_THREADED:
            with cython.critical_section(heap):
                n = _head(heap, &deadline)
        else:
            n = _head(heap, &deadline)
        if n:
            now = self._read()
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

    @cython.final
    cdef inline int _hand_on(self) except -1:
        # Someone must watch the head: hand the lead on.
        if self._leader is None and self._heap._n and Py_SIZE(self._getters):
            self._getters.popleft().release()
        return 0

    @cython.final
    cdef inline int _hand_on_and_release(self) except -1:
        # how every get ends: the lead handed on, then the lock released (whatever happens)
        try:
            self._hand_on()
        finally:
            self._release()
        return 0

    @cython.final
    cdef object _take(self):
        cdef Heap heap = self._heap
        if DQ_FREE_THREADED:
            with cython.critical_section(heap):
                item = heap._pop_head()
        else:
            item = heap._pop_head()
        if Py_SIZE(self._putters):
            self._putters.popleft().release()
        if self.is_shutdown and not heap._n:
            notify_all(self._getters)  # they raise ShutDown now
        return item

    def get_many(self, max_items=None):
        """Remove and return every item due now (at most ``max_items``), earliest first.  O(k log n).

        Never blocks.  Once shut down and empty, raises ``ShutDown``.
        """
        cdef Heap heap = self._heap
        cdef Py_ssize_t limit = NO_LIMIT
        cdef double now
        cdef list out = []
        if max_items is not None:
            limit = min(to_count(max_items, "max_items"), NO_LIMIT)
        self._acquire()
        try:
            if self.is_shutdown and not heap._n:
                raise ShutDown(SHUTDOWN_GET)
            now = self._read()
            with cython.critical_section(heap):
                while heap._n and len(out) < limit and heap._hkey[heap._off] <= now:
                    out.append(self._take())
            return out
        finally:
            self._release()

    # -- handles ----------------------------------------------------------------

    def cancel(self, handle):
        """Remove the item behind ``handle``; True if it was still held.  O(log n)."""
        cdef Heap heap = self._heap
        cdef object dropped
        self._acquire()
        try:
            dropped = self._by_handle(handle, True, 0.0)
            if dropped is _STALE:
                return False
            if Py_SIZE(self._putters):
                self._putters.popleft().release()
            if self.is_shutdown and not heap._n:
                notify_all(self._getters)
            return True
        finally:
            self._release()
        # the item dies on return, after the lock: its finaliser may use the queue

    def reschedule(self, handle, delay):
        """Make the item behind ``handle`` due ``delay`` seconds from now.  O(log n).

        Returns False if the handle is stale.  The item goes behind others
        with the same deadline.
        """
        cdef double deadline = _real(delay, "delay")
        deadline += self._read()
        self._acquire()
        try:
            return self._by_handle(handle, False, deadline) is not _STALE
        finally:
            self._release()

    @cython.final
    cdef object _by_handle(self, handle, bint remove, double deadline):
        # With the lock held: take the item behind handle out (and return it)
        # or make it due at deadline (and return None); _STALE if the handle
        # is stale.  The leader hears of it when the head changed.
        cdef Heap heap = self._heap
        cdef double head
        cdef bint moved
        cdef object item = None
        with cython.critical_section(heap):
            head = heap._hkey[heap._off]
            try:
                if remove:
                    item = heap._remove_handle(handle)
                else:
                    heap._update_key(handle, deadline)
            except KeyError:
                return _STALE
            moved = not heap._n or heap._hkey[heap._off] != head
        if moved:
            self._head_changed()
        return item

    def _check(self):
        """Assert the invariants: heap order, and no lock or leader left behind when idle."""
        if not owned_try(&self._mutex):
            raise AssertionError("the lock is held")
        try:
            self._heap._check()
            if not self._getters:
                assert self._leader is None, "a leader without waiting getters"
            else:
                assert self._leader is None or self._leader in self._getters
        finally:
            owned_release(&self._mutex)
