# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""PriorityQueue's compiled core: the compiled twin of ``dq_core._pqueue_py``.

``ItemHeap`` runs heapq's algorithm over the items themselves (ordered by
their own ``<``); ``QueueCore`` holds the C lock and the uncontended
put/get paths of ``dq_core.PriorityQueue``.
"""

cimport cython

import types

from _number cimport fast_key

__all__ = ["ItemHeap", "QueueCore"]


# -- ItemHeap: the object-compared heap under PriorityQueue ------------------

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject, PyObject_RichCompareBool, Py_LT
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_GET_ITEM
from cpython.mem cimport PyMem_Realloc, PyMem_Free

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item

# Swaps one sift may make, two entries each: enough for 2**60 items.
cdef enum:
    MAX_MOVES = 256


cdef inline double _cached_key(object item) noexcept:
    # The number a tuple starts with, when comparing it exactly as a double
    # is possible; NaN means "compare the items".  Only tuples: a tuple and
    # a bare number do not compare in Python, whatever their keys.
    cdef double d
    if type(item) is tuple and PyTuple_GET_SIZE(item) > 0:
        if fast_key(<object>PyTuple_GET_ITEM(item, 0), &d):
            return d
    return NAN_KEY


cdef double NAN_KEY = float("nan")


@cython.final
cdef class ItemHeap:
    """Min-heap of items ordered by their own ``<``, exactly as heapq orders them.

    It runs heapq's algorithm step for step, so even items that tie, or
    that compare inconsistently, come out in the order ``heapq`` gives.  For
    tuples that start with an int or float that number is cached as a
    double and decides the comparison of two such tuples whenever it
    differs, skipping the rich comparison.  A comparison that raises leaves
    the heap exactly as it was; a comparison that re-enters the heap gets
    ``RuntimeError``.
    """

    cdef list _items
    cdef double* _keys
    cdef Py_ssize_t _kcap
    cdef bint _busy

    def __cinit__(self):
        self._items = []
        self._kcap = 0
        self._keys = NULL
        self._busy = False

    def __dealloc__(self):
        PyMem_Free(self._keys)

    cdef int _enter(self) except -1:
        if self._busy:
            raise RuntimeError("the heap was re-entered from a comparison of its items")
        self._busy = True
        return 0

    cdef int _reserve(self, Py_ssize_t n) except -1:
        cdef Py_ssize_t cap = self._kcap or 8
        cdef double* p
        while cap < n:
            cap *= 2
        if cap != self._kcap:
            p = <double*>PyMem_Realloc(self._keys, cap * sizeof(double))
            if p == NULL:
                raise MemoryError()
            self._keys = p
            self._kcap = cap
        return 0

    cdef inline int _lt(self, Py_ssize_t i, Py_ssize_t j) except -1:
        cdef double a = self._keys[i], b = self._keys[j]
        cdef object x, y
        if a == a and b == b and a != b:
            return a < b
        x = <object>PyList_GET_ITEM(self._items, i)  # owned refs across the call
        y = <object>PyList_GET_ITEM(self._items, j)
        return PyObject_RichCompareBool(x, y, Py_LT)

    cdef inline void _swap(self, Py_ssize_t i, Py_ssize_t j) noexcept:
        cdef PyObject** ob = (<PyListObject*>self._items).ob_item
        cdef PyObject* t = ob[i]
        cdef double k = self._keys[i]
        ob[i] = ob[j]
        ob[j] = t
        self._keys[i] = self._keys[j]
        self._keys[j] = k

    cdef void _undo(self, Py_ssize_t* moves, Py_ssize_t m) noexcept:
        while m > 0:
            m -= 2
            self._swap(moves[m], moves[m + 1])

    cdef int _siftdown(self, Py_ssize_t start, Py_ssize_t pos,
                       Py_ssize_t* moves, Py_ssize_t* m) except -1:
        # heapq._siftdown: bubble the item at pos up towards start.
        cdef Py_ssize_t parent
        while pos > start:
            parent = (pos - 1) >> 1
            if not self._lt(pos, parent):
                break
            self._swap(pos, parent)
            moves[m[0]] = pos
            moves[m[0] + 1] = parent
            m[0] += 2
            pos = parent
        return 0

    cdef int _siftup(self, Py_ssize_t pos, Py_ssize_t* moves, Py_ssize_t* m) except -1:
        # heapq._siftup: move the smaller child up until a leaf, then sift
        # the displaced item back up.
        cdef Py_ssize_t end = PyList_GET_SIZE(self._items), start = pos, child
        cdef Py_ssize_t limit = end >> 1
        while pos < limit:
            child = 2 * pos + 1
            if child + 1 < end and not self._lt(child, child + 1):
                child += 1
            self._swap(pos, child)
            moves[m[0]] = pos
            moves[m[0] + 1] = child
            m[0] += 2
            pos = child
        return self._siftdown(start, pos, moves, m)

    def push(self, item):
        """Add ``item``.  O(log n) comparisons."""
        self._push(item)

    def pop(self):
        """Remove and return the smallest item.  O(log n) comparisons.

        Raises ``IndexError`` when the heap is empty.
        """
        return self._pop()

    cdef int _push(self, object item) except -1:
        cdef Py_ssize_t moves[MAX_MOVES]
        cdef Py_ssize_t m = 0, n = PyList_GET_SIZE(self._items)
        self._enter()
        try:
            self._reserve(n + 1)
            self._keys[n] = _cached_key(item)
            self._items.append(item)
            try:
                self._siftdown(0, n, moves, &m)
            except BaseException:
                self._undo(moves, m)
                del self._items[n]
                raise
        finally:
            self._busy = False
        return 0

    cdef object _pop(self):
        cdef Py_ssize_t moves[MAX_MOVES]
        cdef Py_ssize_t m = 0, n = PyList_GET_SIZE(self._items)
        cdef double top_key
        if n == 0:
            raise IndexError("pop from an empty heap")
        self._enter()
        try:
            last = self._items.pop()
            if n == 1:
                return last
            top = <object>PyList_GET_ITEM(self._items, 0)
            top_key = self._keys[0]
            self._items[0] = last
            self._keys[0] = self._keys[n - 1]
            try:
                self._siftup(0, moves, &m)
            except BaseException:
                self._undo(moves, m)
                self._items[0] = top
                self._keys[0] = top_key
                self._items.append(last)  # its key is still in _keys[n - 1]
                raise
            if n * 4 <= self._kcap and self._kcap > 64:
                self._reserve_shrink()
            return top
        finally:
            self._busy = False

    cdef void _reserve_shrink(self) noexcept:
        cdef double* p = <double*>PyMem_Realloc(self._keys, (self._kcap // 2) * sizeof(double))
        if p != NULL:
            self._keys = p
            self._kcap //= 2

    def peek(self):
        """Return the smallest item without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        if not self._items:
            raise IndexError("peek at an empty heap")
        return self._items[0]

    def clear(self):
        """Remove every item and return them, in heap order.  O(n)."""
        self._enter()
        try:
            items = self._items
            self._items = []
            return items
        finally:
            self._busy = False

    def snapshot(self):
        """A list of the items, in heap order.  O(n)."""
        return list(self._items)

    def __len__(self):
        return PyList_GET_SIZE(self._items)

    def __bool__(self):
        return PyList_GET_SIZE(self._items) > 0

    def __repr__(self):
        return f"<{type(self).__name__} len={len(self._items)}>"

    def _check(self):
        """Assert heap order (by ``<``) and the key cache."""
        cdef Py_ssize_t i, n = len(self._items)
        assert not self._busy
        for i in range(n):
            k = _cached_key(self._items[i])
            assert (k != k and self._keys[i] != self._keys[i]) or k == self._keys[i]
        for i in range(1, n):
            assert not self._items[i] < self._items[(i - 1) >> 1], f"heap order broken at {i}"


# -- QueueCore: PriorityQueue's lock and uncontended paths --------------------

from cpython.pythread cimport (
    NOWAIT_LOCK, WAIT_LOCK, PyThread_acquire_lock, PyThread_allocate_lock,
    PyThread_free_lock, PyThread_get_thread_ident, PyThread_release_lock,
    PyThread_type_lock,
)
from collections import deque

from dq_core._exceptions import Empty, Full, ShutDown


cdef class QueueCore:
    """The lock, the heap and the uncontended put/get of PriorityQueue.

    Blocking waits, ``task_done``/``join`` and ``shutdown`` live in
    ``dq_core._queues``, shared by both implementations; they call back
    into ``_lock()``/``_unlock()`` and park on the waiter deques.
    """

    cdef readonly ItemHeap _heap
    cdef PyThread_type_lock _mutex
    cdef unsigned long _owner
    cdef public object maxsize
    cdef public Py_ssize_t unfinished_tasks
    cdef public bint is_shutdown
    # threads parked in get, put and join (see dq_core._waiting)
    cdef readonly object _getters, _putters, _joiners
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)

    def __cinit__(self, *args, **kwargs):
        self._mutex = PyThread_allocate_lock()
        if self._mutex == NULL:
            raise MemoryError()
        self._heap = ItemHeap()
        self._getters = deque()
        self._putters = deque()
        self._joiners = deque()

    def __init__(self, maxsize=0):
        self.maxsize = maxsize
        self.unfinished_tasks = 0
        self.is_shutdown = False

    def __dealloc__(self):
        if self._mutex != NULL:
            PyThread_free_lock(self._mutex)

    cdef inline int _acquire(self) except -1:
        cdef unsigned long me = PyThread_get_thread_ident()
        if not PyThread_acquire_lock(self._mutex, NOWAIT_LOCK):
            if self._owner == me:
                raise RuntimeError(
                    "the queue was re-entered while this thread holds its lock "
                    "(from a comparison of its items?)")
            with nogil:
                PyThread_acquire_lock(self._mutex, WAIT_LOCK)
        self._owner = me
        return 0

    cdef inline void _release(self) noexcept:
        self._owner = 0
        PyThread_release_lock(self._mutex)

    def _lock(self):
        """Take the queue's lock (not re-entrant: re-entry raises RuntimeError)."""
        self._acquire()

    def _unlock(self):
        """Release the queue's lock."""
        self._release()

    cdef inline bint _full(self) except -1:
        cdef object m = self.maxsize
        return m > 0 and PyList_GET_SIZE(self._heap._items) >= m

    cdef inline int _add(self, object item) except -1:
        # With the lock held: queue it, count it, wake one getter.
        self._heap._push(item)
        self.unfinished_tasks += 1
        if self._getters:
            self._getters.popleft().release()
        return 0

    cdef inline object _take(self):
        # With the lock held: unqueue the lowest item, wake one putter.
        item = self._heap._pop()
        if self._putters:
            self._putters.popleft().release()
        return item

    def qsize(self):
        """Return the approximate size of the queue (not reliable!).  O(1)."""
        return PyList_GET_SIZE(self._heap._items)

    def empty(self):
        """Return True if the queue is empty (not reliable!).  O(1)."""
        return PyList_GET_SIZE(self._heap._items) == 0

    def full(self):
        """Return True if the queue is full (not reliable!).  O(1)."""
        return 0 < self.maxsize <= PyList_GET_SIZE(self._heap._items)

    def __len__(self):
        return PyList_GET_SIZE(self._heap._items)

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
                raise ShutDown
            if self.maxsize > 0:
                self._wait_for_room(block, timeout)
            self._add(item)
        finally:
            self._release()

    def put_nowait(self, item):
        """Put ``item`` without blocking; ``Full`` if there is no room.  O(log n)."""
        self._acquire()
        try:
            if self.is_shutdown:
                raise ShutDown
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
                    raise ShutDown
                raise Empty
            return self._take()
        finally:
            self._release()
