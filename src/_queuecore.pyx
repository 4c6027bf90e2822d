# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""PriorityQueue's compiled core: the compiled twin of ``dq_core._queuecore_py``.

``QueueCore`` holds the C lock (``LockedBase``, from ``_lockcore``), the
heap (an ``ItemHeap``, from ``_itemheapcore``) and the uncontended put/get
paths of ``dq_core.PriorityQueue``; ``QueueView`` is its ``queue``
attribute, a live read-only view of the heap list.
"""

cimport cython
from cpython.list cimport PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject
from _borrowed cimport dq_size
cdef extern from "Python.h":
    const Py_ssize_t PY_SSIZE_T_MAX

import queue as _stdlib_queue
import types
from collections import deque
from collections.abc import Sequence

from dq_core._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT, Empty, Full, ShutDown
from dq_core._itemheapcore cimport ItemHeap
from dq_core._lockcore cimport LockedBase
from dq_core._validate import check_real_maxsize

__all__ = ["QueueCore", "QueueView"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({})


# -- QueueCore: PriorityQueue's lock and uncontended paths --------------------

@cython.no_gc_clear  # as ItemHeap: _heap and the waiter deques are never None
cdef class _LockedCore(LockedBase):
    """_LockedCore(maxsize=0)\n--\n\nThe C half of QueueCore: its lock, heap, counters and fast paths."""

    cdef readonly ItemHeap _heap
    cdef object _maxsize  # read and written in a critical section (the property)
    # maxsize as a C number when it is an exact int that fits (the usual
    # case), so that the room check makes no Python comparison; -1 otherwise
    cdef Py_ssize_t _limit
    cdef public Py_ssize_t unfinished_tasks
    cdef public bint is_shutdown
    # threads parked in get, put and join (see dq_core._waiting); always
    # exact deques, whose length Py_SIZE reads without a call
    cdef readonly object _getters, _putters, _joiners
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)

    def __cinit__(self, *args, **kwargs):
        self._limit = -1
        self._heap = ItemHeap()
        self._getters = deque()
        self._putters = deque()
        self._joiners = deque()

    def __init__(self, maxsize=0):
        self._set_maxsize(maxsize)
        self.unfinished_tasks = 0
        self.is_shutdown = False


    # maxsize is kept as given, as the standard library keeps it (a float
    # works); what cannot be compared with 0 is refused here, not at a put.
    # It is assignable while other threads run: without a GIL, reading the
    # field while another thread replaces it could take a reference to a
    # freed object, so both happen in a critical section (nothing on a GIL
    # build).
    @property
    def maxsize(self):
        """Number of items allowed in the queue (0 or less: no bound)."""
        return self._get_maxsize()

    @maxsize.setter
    def maxsize(self, maxsize):
        self._set_maxsize(maxsize)

    @cython.final
    cdef inline object _get_maxsize(self):
        with cython.critical_section(self):
            return self._maxsize

    @cython.final
    cdef inline int _set_maxsize(self, object maxsize) except -1:
        cdef Py_ssize_t limit = -1
        cdef int overflow = 0
        cdef long long v
        if type(maxsize) is int:
            v = PyLong_AsLongLongAndOverflow(maxsize, &overflow)
            if not overflow and 0 <= v <= PY_SSIZE_T_MAX:
                limit = <Py_ssize_t>v
            elif not overflow and v < 0:
                limit = 0  # never full, as for 0
        else:
            check_real_maxsize(maxsize)
        with cython.critical_section(self):
            old = self._maxsize
            self._maxsize = maxsize
            self._limit = limit
        return 0  # old dies out of the critical section

    @cython.final
    cdef inline bint _full(self) except -1:
        # With the lock held.  _limit is read apart from _maxsize: a setter
        # racing this check gives one value or the other, either a
        # maxsize that was set.
        cdef Py_ssize_t limit = self._limit
        cdef object m
        if limit >= 0:
            return limit > 0 and PyList_GET_SIZE(self._heap._items) >= limit
        m = self._get_maxsize()
        return m > 0 and PyList_GET_SIZE(self._heap._items) >= m

    @cython.final
    cdef inline int _add(self, object item) except -1:
        # With the lock held: queue it, count it, wake one getter.
        self._heap._push(item)
        self.unfinished_tasks += 1
        if dq_size(<PyObject*>self._getters):
            self._getters.popleft().release()
        return 0

    @cython.final
    cdef inline object _take(self):
        # With the lock held: unqueue the lowest item, wake one putter.
        item = self._heap._pop()
        if dq_size(<PyObject*>self._putters):
            self._putters.popleft().release()
        return item

    @property
    def queue(self):
        """A live, read-only view of the heap list: ``queue[0]`` is the head.  O(1)."""
        return QueueView(self)

    def qsize(self):
        """Return the approximate size of the queue (not reliable!).  O(1)."""
        return PyList_GET_SIZE(self._heap._items)

    def empty(self):
        """Return True if the queue is empty (not reliable!).  O(1)."""
        return PyList_GET_SIZE(self._heap._items) == 0

    def full(self):
        """Return True if the queue is full (not reliable!).  O(1)."""
        return 0 < self._get_maxsize() <= PyList_GET_SIZE(self._heap._items)

    def put(self, item, block=True, timeout=None):
        """Put ``item`` into the queue.  O(log n).

        With ``block`` true and ``timeout`` None, wait for a free slot; with a
        non-negative ``timeout``, wait at most that long and raise ``Full``;
        with ``block`` false, raise ``Full`` at once if there is no room.
        Raises ``ShutDown`` once the queue is shut down.
        """
        self._acquire()
        try:
            if self.is_shutdown:
                raise ShutDown(SHUTDOWN_PUT)
            # With room and no timeout to check, the wait is a no-op: skip the call.
            if self._full() or (block and timeout is not None and self._get_maxsize() > 0):
                self._wait_for_room(block, timeout)
            self._add(item)
        finally:
            self._release()

    def put_nowait(self, item):
        """Put ``item`` without blocking; ``Full`` if there is no room.  O(log n)."""
        self._acquire()
        try:
            if self.is_shutdown:
                raise ShutDown(SHUTDOWN_PUT)
            if self._full():
                raise Full
            self._add(item)
        finally:
            self._release()

    def get(self, block=True, timeout=None):
        """Remove and return the lowest item.  O(log n).

        With ``block`` true and ``timeout`` None, wait for an item; with a
        non-negative ``timeout``, wait at most that long and raise ``Empty``;
        with ``block`` false, raise ``Empty`` at once if there is none.
        Once shut down, raises ``ShutDown`` when the queue is empty.
        """
        self._acquire()
        try:
            if PyList_GET_SIZE(self._heap._items) == 0 or (block and timeout is not None):
                self._wait_for_item(block, timeout)
            return self._take()
        finally:
            self._release()

    def get_nowait(self):
        """Remove and return the lowest item without blocking; ``Empty`` if none.  O(log n)."""
        self._acquire()
        try:
            if PyList_GET_SIZE(self._heap._items) == 0:
                if self.is_shutdown:
                    raise ShutDown(SHUTDOWN_GET)
                raise Empty
            return self._take()
        finally:
            self._release()


class QueueCore(_LockedCore, _stdlib_queue.PriorityQueue):
    """The lock, the heap and the uncontended put/get of PriorityQueue.

    A ``queue.PriorityQueue`` by inheritance only: every method of the
    standard library's class is overridden here or in ``dq_core._priorityqueue``,
    and its ``__init__`` never runs (no ``mutex`` or conditions).  Blocking
    waits, ``task_done``/``join`` and ``shutdown`` live in
    ``dq_core._priorityqueue``, shared by both implementations; they call back
    into ``_lock()``/``_unlock()`` and park on the waiter deques.
    """

    __slots__ = ()


# -- QueueView: PriorityQueue.queue --------------------------------------------

cdef object _read_only():
    raise TypeError("the queue's heap list is read-only: use put(), get() or clear()")


@cython.final
cdef class QueueView:
    """QueueView(queue)\n--\n\nA live, read-only view of a PriorityQueue's heap list (``q.queue``).

    Indexing, ``len``, iteration and ``in`` read the heap list in place:
    ``q.queue[0]`` is the head (O(1)) and the other positions are in the
    order heapq gives the standard library's list.  ``clear()`` empties the
    queue as the standard library's ``q.queue.clear()`` does (neither
    ``unfinished_tasks`` nor waiting threads are touched); any other
    mutation raises ``TypeError``.  Reads take no lock: like ``qsize()``,
    they are approximate while other threads use the queue.  Copying or
    pickling it gives a plain list.
    """

    cdef _LockedCore _queue
    cdef ItemHeap _heap

    __class_getitem__ = classmethod(types.GenericAlias)

    def __cinit__(self, queue):
        if not isinstance(queue, _LockedCore):
            raise TypeError(f"queue must be a PriorityQueue, not {type(queue).__name__!r}")
        self._queue = queue
        self._heap = self._queue._heap

    def __len__(self):
        return PyList_GET_SIZE(self._heap._items)

    def __getitem__(self, index):
        return self._heap._items[index]

    def __iter__(self):
        return iter(self._heap._items)

    def __reversed__(self):
        return reversed(self._heap._items)

    def __contains__(self, value):
        return value in self._heap._items

    def __eq__(self, other):
        if isinstance(other, QueueView):
            other = (<QueueView>other)._heap._items
        elif not isinstance(other, list):
            return NotImplemented
        return self._heap._items == other

    def __ne__(self, other):
        if isinstance(other, QueueView):
            other = (<QueueView>other)._heap._items
        elif not isinstance(other, list):
            return NotImplemented
        return self._heap._items != other

    __hash__ = None

    def __repr__(self):
        return repr(self._heap._items)

    def __reduce__(self):
        return (list, (list(self._heap._items),))

    # + and * give new lists, as on the standard library's list
    def __add__(self, other):
        return list(self._heap._items) + other

    def __radd__(self, other):
        return other + list(self._heap._items)

    def __mul__(self, n):
        return list(self._heap._items) * n

    def __rmul__(self, n):
        return n * list(self._heap._items)

    def copy(self):
        """Return a list of the items, in heap order.  O(n)."""
        return list(self._heap._items)

    def index(self, value, *args):
        """Return the first position of ``value`` (``list.index``).  O(n)."""
        return self._heap._items.index(value, *args)

    def count(self, value):
        """Return how many items equal ``value``.  O(n)."""
        return self._heap._items.count(value)

    def clear(self):
        """Remove every item, as ``list.clear()`` on the standard library's queue.  O(n).

        Unlike ``PriorityQueue.clear()``, this leaves ``unfinished_tasks``
        and waiting threads alone, exactly as the standard library does.
        """
        self._queue._acquire()
        try:
            dropped = self._heap.clear()
        finally:
            self._queue._release()
        del dropped  # item finalisers run outside the lock

    def append(self, item):
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def extend(self, items):
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def insert(self, index, item):
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def pop(self, index=-1):
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def remove(self, value):
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def sort(self, *, key=None, reverse=False):
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def reverse(self):
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def __setitem__(self, index, value):
        _read_only()

    def __delitem__(self, index):
        _read_only()

    def __iadd__(self, other):
        _read_only()

    def __imul__(self, other):
        _read_only()


Sequence.register(QueueView)
