# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""dq_core.aio's cores: the compiled twin of ``dq_core._aioqueuecore_py``.

``AioQueueCore`` holds aio.PriorityQueue's heap (an ``ItemHeap``), its
waiter deques and counters, and every path that never waits: ``put_nowait``,
``get_nowait``, ``qsize``/``empty``/``full`` and ``task_done``.
``AioDelayCore`` does the same for aio.DelayQueue (a keyed ``Heap`` of
deadlines on the loop's clock) and owns its one loop timer.  ``put`` and
``get`` return the C coroutine of ``src/_await.pxd``: the fast path runs
here at its first send, and a call that must wait hands over to the
faces' waiting coroutines (``_wait_put``, ``_wait_get``; ``join`` and the
rare paths are there too), in ``dq_core.aio._priorityqueue`` and
``dq_core.aio._delayqueue``, shared by both implementations; they park futures
on the deques held here.

Waking follows ``asyncio/queues.py``: the first waiter not done yet gets
``set_result(None)`` and re-checks when its task runs.

Other threads reach a queue through its ``_Inbox``: ``put_threadsafe``
appends to a list under a lock, and the loop takes what is there into the
heap when it next looks (a get, or a wake-up).  The loop is woken (one
``call_soon_threadsafe``) only when a getter waits: a getter about to park
looks at the inbox under the same lock and, finding it empty, asks for a
wake-up there (``_Inbox.listen``), so a put either lands before that look
(and the getter takes it instead of parking) or sees the request (and wakes
the loop): no wake-up is ever lost.  The loop holds the lock only to swap
the inbox's list for an empty one (``_Inbox.swap``) and compares the items
after, counting them meanwhile as in transit: a thread never waits for a
comparison.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from libc.math cimport INFINITY
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from _borrowed cimport dq_size
from cpython.pyport cimport PY_SSIZE_T_MAX

from _shortcuts cimport (
    DQ_SC_RUNNING_LOOP_ENTRY, dq_shortcut_switches, dq_type_lookup,
)
from _await cimport dq_await_new, dq_await_ready, dq_await_start, dq_mark_coroutine_function
from _clock cimport dq_monotonic
from _ownedlock cimport DQ_FREE_THREADED, count_load, count_store

from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF

import asyncio
import collections.abc
import os
import types
from math import ceil as _ceil
import time as _time
from asyncio import QueueEmpty, QueueFull
from collections import deque

from dq_core._heapcore cimport Heap
from dq_core._convert import to_real
from dq_core._itemheapcore cimport ItemHeap
from dq_core._lockcore cimport LockedBase
from dq_core._validate import check_maxsize, check_real_maxsize
from dq_core._aiowaiting import (
    LOOP_CLOSED, MAX_ARM, WANT_ITEM, WANT_ROOM, QueueShutDown, report_unqueued, unstarted,
)
from dq_core._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT

cdef extern from *:
    """
    static void* dq_getattro(PyTypeObject* tp) { return (void*)tp->tp_getattro; }
    """
    void* _getattro "dq_getattro"(PyTypeObject* tp) noexcept

cdef extern from "dq_shortcuts.h":
    # 1 if obj's own __dict__ may hold name, 0 if it surely does not
    bint _instance_may_hold "dq_instance_may_hold"(object obj, object name) noexcept

cdef extern from "Python.h":
    PyObject* PyObject_GenericGetAttr(PyObject*, PyObject*)
    PyObject* PyThreadState_GetDict()
    PyObject* PyDict_GetItemWithError(object, object)  # borrowed; NULL: absent, or an error set
    void PyErr_Clear()


# Dict reads that never run Python code for str keys in str-keyed dicts, and
# skip PyDict_GetItem's saving and restoring of the error state (most of its
# cost, three times in a DelayQueue put or get).  An error (a key of the dict's
# own with an __eq__ that raises) is cleared and read as "not sure".

cdef inline PyObject* _value(object d, object key) noexcept:
    # d[key], borrowed (compared at once, never kept across a call), or NULL
    cdef PyObject* v = PyDict_GetItemWithError(d, key)
    if v == NULL:
        PyErr_Clear()
    return v


__all__ = ["AioDelayCore", "AioQueueCore", "MAX_ARM"]

cdef object _get_running_loop = asyncio.get_running_loop
cdef object _py_running_loop = asyncio._get_running_loop  # the running loop, or None

cdef enum:  # dq_core._aiowaiting's WANT_ITEM and WANT_ROOM, for C
    _WANT_ITEM = 1
    _WANT_ROOM = 2
assert (WANT_ITEM, WANT_ROOM) == (_WANT_ITEM, _WANT_ROOM)

# What a take-in called from a comparison of the heap's items raises (the
# items stay in the inbox)
cdef str _HEAP_BUSY = "the heap was re-entered from a comparison of its items"

# asyncio.get_running_loop(), through its C function where the shortcut
# DQ_SC_RUNNING_LOOP_CFUNC allows (src/include/dq_running_loop.h)
cdef extern from "dq_running_loop.h":
    bint dq_grl_setup(object f)
    object _running_loop "dq_running_loop"(object f)
    PyObject* _running_loop_or_null "dq_running_loop"(object f)  # new reference, or NULL: an error

cdef bint _grl_direct = dq_grl_setup(_get_running_loop)


# -- the running loop and its clock, as asyncio.get_running_loop() and loop.time() ----

# Before Python 3.12, asyncio's C get_running_loop() asks the OS for the process
# id on every call (a system call, costlier than the rest of a put or a get).  It
# finds the loop in an entry of the thread state's dict, a new object each time
# a loop starts or stops running in the thread.  A DelayCore remembers the entry
# it saw when get_running_loop() last returned its own loop: while the entry is
# that object (its strong reference keeps the object from being reused) and no
# fork happened since (asyncio's process id check), its loop is still the one
# running.  Python 3.12+ keeps no such entry: there, always the call (as where
# the shortcut, DQ_SC_RUNNING_LOOP_ENTRY, is off).
cdef str _HOLDER_KEY = "__asyncio_running_event_loop__"
cdef Py_ssize_t _forks = 0


def _count_fork():
    """After a fork, in the child: no remembered running loop holds any more."""
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_count_fork)


cdef inline PyObject* _holder() noexcept:
    cdef PyObject* d
    if not DQ_SC_RUNNING_LOOP_ENTRY:
        return NULL
    d = PyThreadState_GetDict()
    if d == NULL:
        return NULL
    return _value(<object>d, _HOLDER_KEY)


# asyncio's own loops read time.monotonic() in a Python method: for them (the
# method neither overridden nor replaced on the loop, time.monotonic not
# replaced), the same clock is read in C.
cdef object _base_time = asyncio.BaseEventLoop.time
cdef void* _core_getattro = NULL  # the compiled classes' generic tp_getattro, set below
cdef object _monotonic = _time.monotonic
cdef dict _time_dict = vars(_time)

# Whether time.monotonic may have been replaced since the last check: a dict
# watcher on the time module's dict where there are such (src/include/dq_time_watch.h)
cdef extern from "dq_time_watch.h":
    bint DQ_TIME_WATCH
    bint dq_time_seen
    int dq_time_watcher
    void dq_time_watch(object time_dict)

dq_time_watch(_time_dict)


cdef inline bint _monotonic_is_original() noexcept:
    # time.monotonic is still the function read at import
    global dq_time_seen
    if DQ_TIME_WATCH and dq_time_seen:
        return True
    if _value(_time_dict, "monotonic") != <PyObject*>_monotonic:
        return False
    if DQ_TIME_WATCH and dq_time_watcher >= 0:
        dq_time_seen = True
    return True


cdef inline bint _own_on_type(PyTypeObject* tp, str name, object method) noexcept:
    # type(obj).<name> is ``method`` (or, for a C method, the public class's
    # copy of it: dq_core._heapcore.adopt_methods) and attribute lookup is the
    # generic one
    if _getattro(tp) != <void*>PyObject_GenericGetAttr and _getattro(tp) != _core_getattro:
        return False
    cdef PyObject* found = dq_type_lookup(tp, name)  # a new reference, or NULL
    cdef bint same = dq_same_method(found, <PyObject*>method)
    Py_XDECREF(found)
    return same


cdef inline bint _not_on_instance(object obj, str name) noexcept:
    # obj's own dict (if any) surely has no <name>
    # (a lookup that runs a key's __eq__ changes nothing held here)
    return Py_TYPE(obj).tp_dictoffset == 0 or not _instance_may_hold(obj, name)


cdef extern from "dq_method_cache.h":
    bint dq_same_method(PyObject* found, PyObject* method) noexcept


# A type last found to have the method a C path stands in for (asyncio's own
# loop time(), the core's own put_nowait, empty, get_nowait), one record per
# call site, where the shortcut DQ_SC_TYPE_TAG_CACHE is on: while the type
# keeps the version tag it had then, the finding holds (CPython gives a type a
# new tag whenever it or a base changes, a __getattribute__ set on it
# included; from 3.11 a tag is never reused), and the type lookup is skipped.
# The address is only compared, never followed.  DQ_TYPE_TAG is 0 where the
# shortcut is off, or the type has no valid tag: nothing is remembered then.
cdef extern from "dq_method_cache.h":
    ctypedef struct dq_own_seen_t:
        pass
    dq_own_seen_t dq_own_time, dq_own_put_nowait, dq_own_empty, dq_own_get_nowait, dq_own_due
    bint dq_own_seen(dq_own_seen_t* c, PyTypeObject* tp) noexcept
    void dq_own_see(dq_own_seen_t* c, PyTypeObject* tp) noexcept


cdef inline bint _own_at(dq_own_seen_t* seen, object obj, str name, object method) noexcept:
    # True if obj.<name> is sure to be ``method``, the class's own function
    # (neither a subclass nor the instance overrides it, no __getattribute__):
    # a caller may then run what it does in C, as obj.<name>(...) would.
    # False when unsure: the caller does obj.<name>(...) itself.  What the
    # type holds is looked up once per type version and remembered in seen.
    cdef PyTypeObject* tp = Py_TYPE(obj)
    if not dq_own_seen(seen, tp):
        if not _own_on_type(tp, name, method):
            return False
        dq_own_see(seen, tp)  # the lookup gave tp a valid tag, if it can have one
    return _not_on_instance(obj, name)


# Any other loop (uvloop's, a user's): loop.time() is called, but the lookup
# CPython's method call makes (the type's attribute, its kind, the instance's
# dict) is cached for the loop type last seen, as long as the type keeps its
# version tag (GIL builds only): while the type's ``time`` is a function or a
# method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR: calling it with the loop as
# first argument is what loop.time() does, as CPython's own method calls
# assume) and the instance's dict has no ``time``, it is called so.  uvloop's
# Loop.time reads libuv's monotonic clock: marked, for the DelayQueue.
cdef extern from "dq_method_cache.h":
    PyObject* dq_meth_seen(PyTypeObject* tp, int* mono) noexcept
    unsigned int dq_type_tag(PyTypeObject* tp) noexcept
    int dq_meth_see(PyTypeObject* tp, unsigned int tag, object meth, int mono) noexcept
    bint dq_is_method_like(object meth) noexcept
    object dq_call_with(object meth, object self)


cdef inline bint _own_time(object loop) noexcept:
    # _own_at(&dq_own_time, loop, "time", BaseEventLoop.time), asking first
    # what the other loop types' cache below knows
    cdef PyTypeObject* tp = Py_TYPE(loop)
    cdef int mono
    cdef PyObject* m
    if not dq_own_seen(&dq_own_time, tp):
        m = dq_meth_seen(tp, &mono)  # another loop type's time, seen before
        if m != NULL and m != <PyObject*>_base_time:
            return False
        if not _own_on_type(tp, "time", _base_time):
            return False
        dq_own_see(&dq_own_time, tp)
    return _not_on_instance(loop, "time")


cdef inline bint _c_time(object loop, double* t) except -1:
    # loop.time() read into t where that is the clock it reads (True); False:
    # the caller calls loop.time() itself.  No float object is made.
    if _own_time(loop) and _monotonic_is_original():
        dq_monotonic(t)
        return True
    return False


cdef bint _is_uvloop_time(object meth) noexcept:
    # meth is uvloop's Loop.time (compiled, module uvloop.loop)
    try:
        return (type(meth).__name__ == "cython_function_or_method"
                and meth.__module__ == "uvloop.loop" and meth.__qualname__ == "Loop.time")
    except Exception:
        return False


cdef object _type_time(object loop, int* mono):
    # What loop's type holds as ``time`` when calling it with the loop is loop.time(), else None
    cdef PyTypeObject* tp = Py_TYPE(loop)
    cdef PyObject* m
    cdef unsigned int tag
    if DQ_FREE_THREADED:
        return None
    m = dq_meth_seen(tp, mono)
    if m != NULL:
        return <object>m  # a strong reference from here on: a call cannot free it
    if _getattro(tp) != <void*>PyObject_GenericGetAttr and _getattro(tp) != _core_getattro:
        return None
    m = dq_type_lookup(tp, "time")  # a new reference, or NULL
    if m == NULL:
        return None
    meth = <object>m
    Py_XDECREF(m)  # meth holds it now
    if not dq_is_method_like(meth):
        return None
    tag = dq_type_tag(tp)  # what the lookup saw: _is_uvloop_time runs Python code
    mono[0] = _is_uvloop_time(meth)
    dq_meth_see(tp, tag, meth, mono[0])
    return meth


cdef object _call_time(object loop, int* mono):
    # loop.time(); *mono true if the clock read is one known to be monotonic
    meth = _type_time(loop, mono)
    if meth is not None and _not_on_instance(loop, "time"):
        return dq_call_with(meth, loop)
    mono[0] = False
    return loop.time()


cdef object _loop_time(object loop):
    """loop.time()."""
    cdef double t
    cdef int mono
    if _c_time(loop, &t):
        return t
    return _call_time(loop, &mono)

cdef double _MAX_ARM = MAX_ARM  # dq_core._aiowaiting's


cdef bint _wakeup_next(object waiters) except -1:
    # The first waiter not done yet gets set_result(None): dq_core._aiowaiting.wakeup_next.
    while waiters:
        waiter = waiters.popleft()  # held: set_result may run a loop's own code
        if not waiter.done():
            waiter.set_result(None)
            return True
    return False


cdef int _wakeup_all(object waiters) except -1:
    while waiters:
        waiter = waiters.popleft()
        if not waiter.done():
            waiter.set_result(None)
    return 0


cdef Py_ssize_t _cap_of(object maxsize) except -1:
    # The size that makes the queue full (asyncio's full(): qsize() >= maxsize
    # > 0, so a float's ceiling), or 0 when none can (NaN, infinity, <= 0).
    if not maxsize > 0 or maxsize > PY_SSIZE_T_MAX:
        return 0
    return maxsize if type(maxsize) is int else _ceil(maxsize)


cdef inline bint _le(double a, object b) except -1:
    # a <= b as Python compares a float with the loop's time (a float, unless a
    # custom loop says otherwise)
    if type(b) is float:
        return a <= PyFloat_AS_DOUBLE(b)
    return a <= b


# -- the inbox of other threads -------------------------------------------------------

# Thread safety, with or without the GIL: ``items`` and ``want`` change only
# under the lock of LockedBase (the C lock of the threaded queues: an atomic
# add to take and one to release, RuntimeError instead of a deadlock on re-entry).  The
# loop reads the list's size without it, as a hint only (a relaxed atomic
# read on a free-threaded build): whether a getter parks is decided under
# the lock (listen), and whether a put wakes the loop too.  ``swap`` trades
# ``items`` for ``spare`` under the lock; both lists live as long as the
# inbox, so a reader never holds a list another thread frees.  ``transit``
# (aio.PriorityQueue's items taken out of ``items`` and not in the heap yet)
# is written by the loop's thread only, with a store-release after the push
# it follows, and read first, with a load-acquire, by whoever counts.

@cython.final
@cython.no_gc_clear
@cython.auto_pickle(False)
cdef class _Inbox(LockedBase):
    """_Inbox()\n--\n\nWhat other threads hand a queue's loop: a list under a lock, and a wake-up wish."""

    cdef readonly list items, spare         # spare: the loop's batch (its thread only)
    cdef public int want                    # WANT_ITEM, WANT_ROOM: who waits
    cdef public long transit
    # the DelayQueue's, in its loop's thread: carrying calls out, the next call
    # of spare to carry out, a take-in scheduled; the last put's call time
    cdef public bint taking, soon
    cdef public Py_ssize_t pos
    cdef public double floor

    def __cinit__(self):
        self.items = []
        self.spare = []
        self.floor = -INFINITY

    def listen(self, wants=1):  # WANT_ITEM (a literal: the signature shows it)
        """A waiter is about to park: True, and the next call it wants wakes the loop; False if items came."""
        return self._listen(wants)

    cdef bint _listen(self, int wants) except -1:
        self._acquire()
        if PyList_GET_SIZE(self.items):
            self._release()
            return False
        self.want |= wants
        self._release()
        return True

    def swap(self):
        """What threads handed over so far becomes ``spare`` (which must be empty), returned.  O(1)."""
        return self._swap()

    cdef list _swap(self):
        cdef list batch
        self._acquire()
        batch = self.items
        self.items = self.spare
        self.spare = batch
        self._release()
        return batch

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle or copy '_Inbox' object: it belongs to a queue")


cdef bint _unlisted(list items, object item) except -1:
    # take item (this very object) out of items, looking from the end; False if not there
    cdef Py_ssize_t i = PyList_GET_SIZE(items) - 1
    while i >= 0:
        if <PyObject*>PyList_GET_ITEM(items, i) == <PyObject*>item:
            del items[i]  # the caller holds item: no finaliser runs
            return True
        i -= 1
    return False


# -- AioQueueCore: aio.PriorityQueue -----------------------------------------------

# no_gc_clear: the collector never sets the heap or the deques to None under a
# method (a cycle through the queue is broken at a future, a task or a dict).
@cython.no_gc_clear
@cython.auto_pickle(False)
cdef class _AioQueueCore:
    """_AioQueueCore(maxsize=0)\n--\n\nThe non-waiting half of aio.PriorityQueue: heap, waiters, counters."""

    cdef readonly ItemHeap _heap
    cdef readonly object _getters, _putters, _joiners
    cdef readonly object _maxsize
    cdef Py_ssize_t _cap                    # maxsize when it can be reached, else 0
    cdef public Py_ssize_t _unfinished_tasks
    cdef public bint _is_shutdown
    cdef public object _loop
    cdef readonly _Inbox _inbox             # what other threads put (put_threadsafe)
    cdef object __weakref__

    def __cinit__(self, *args, **kwargs):
        self._heap = ItemHeap()
        self._getters = deque()
        self._putters = deque()
        self._joiners = deque()
        self._maxsize = 0
        self._loop = None
        self._inbox = _Inbox()

    def __init__(self, maxsize=0):
        m = check_real_maxsize(maxsize)
        self._maxsize = m
        self._cap = _cap_of(m)
        self._unfinished_tasks = 0
        self._is_shutdown = False

    # The heap's size is its list's (ItemHeap.__len__); a deque's length is its
    # Py_SIZE (the deques are the core's own, readonly).  Sizes count the items
    # other threads put that the loop has not taken in yet, and those it is
    # taking in (in transit).  The count of those in transit is read first:
    # the loop pushes an item, then uncounts it, so a thread reading
    # meanwhile counts it twice at worst, never not at all.
    cdef inline Py_ssize_t _size(self) noexcept:
        cdef _Inbox inbox = self._inbox
        cdef Py_ssize_t moving = count_load(&inbox.transit)
        return moving + PyList_GET_SIZE(self._heap._items) + PyList_GET_SIZE(inbox.items)

    cdef inline bint _full(self) noexcept:
        return self._cap > 0 and self._size() >= self._cap

    def qsize(self):
        """Number of items in the queue.  O(1)."""
        return self._size()

    def empty(self):
        """Return True if the queue is empty, False otherwise.  O(1)."""
        return self._size() == 0

    def full(self):
        """Return True if there are ``maxsize`` items in the queue.  O(1).

        With ``maxsize`` 0 (the default) or less, never true.
        """
        return self._full()

    def _has_room(self):
        """True unless ``maxsize`` items are held (what a woken putter waits for)."""
        return not self._full()

    def put_nowait(self, item):
        """Put ``item`` into the queue without waiting.  O(log n).

        Raises ``QueueFull`` if there is no free slot, ``QueueShutDown`` if
        the queue has been shut down.
        """
        self._c_put_nowait(item)

    def get_nowait(self):
        """Remove and return the lowest item if there is one, else raise ``QueueEmpty``.  O(log n).

        O(k log n) with k items put from threads since the last look: they
        are taken in first.  Raises ``QueueShutDown`` if the queue has been
        shut down and is empty, or shut down immediately.
        """
        return self._c_get_nowait()

    cdef int _c_put_nowait(self, object item) except -1:
        if self._is_shutdown:
            raise QueueShutDown(SHUTDOWN_PUT)
        if self._cap > 0:
            self._c_push_bounded(item, None)
        else:
            self._heap._push(item)
        self._unfinished_tasks += 1
        if dq_size(<PyObject*>self._getters):
            _wakeup_next(self._getters)
        return 0

    def _push_bounded(self, item, full=None):
        """Push ``item`` if there is room (``QueueFull`` if not), counted against thread-side puts.

        ``full``: a subclass's ``full``, asked instead of counting.  The room
        is taken under the inbox's lock and the item compared after it.
        """
        self._c_push_bounded(item, full)

    cdef int _c_push_bounded(self, object item, object full) except -1:
        cdef _Inbox inbox = self._inbox
        inbox._acquire()
        try:
            if full() if full is not None else self._size() >= self._cap:
                raise QueueFull
            # its room, taken: a put_threadsafe counts it from here
            count_store(&inbox.transit, inbox.transit + 1)
        finally:
            inbox._release()
        try:
            self._heap._push(item)
        finally:
            count_store(&inbox.transit, inbox.transit - 1)  # in the heap now, or not put
        return 0

    def put_threadsafe(self, item):
        """Put ``item`` into the queue from any thread, without waiting.  O(1).

        The item is in the queue at once (``qsize()`` counts it); the loop
        takes it into the heap when a coroutine next gets, and is woken for
        it only if a ``get`` is waiting.  It never waits for the loop: the
        loop holds the inbox's lock only to swap its list, never while it
        compares.  Raises ``QueueFull`` if there is no free slot,
        ``QueueShutDown`` once the queue has been shut down, and
        ``RuntimeError`` once the event loop the queue is bound to is closed
        (nothing is put then).  The queue binds to its loop when a coroutine
        first waits on it or first takes in items put from threads; before
        that it takes items, which wait for a loop to take them.  The items
        are compared in the loop: one whose comparison raises there goes to
        the loop's exception handler instead of the queue.
        """
        self._c_thread_put(item, None)

    def _thread_put(self, item, full):
        """``put_threadsafe``; ``full``: a subclass's ``full``, asked under the inbox's lock."""
        self._c_thread_put(item, full)

    cdef int _c_thread_put(self, object item, object full) except -1:
        cdef _Inbox inbox = self._inbox
        loop = self._loop
        if loop is not None and loop.is_closed():
            raise RuntimeError(LOOP_CLOSED)
        inbox._acquire()
        try:
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_PUT)
            if full() if full is not None else self._full():
                raise QueueFull
            inbox.items.append(item)
            if not inbox.want:
                return 0
            inbox.want = 0
            loop = self._loop  # bound before a getter could ask for a wake-up
        finally:
            inbox._release()
        try:
            loop.call_soon_threadsafe(self._on_put_threadsafe)
        except BaseException as exc:
            if self._unput(item):
                if loop.is_closed():  # closed since the look above: the same words
                    raise RuntimeError(LOOP_CLOSED) from exc
                raise
            # the loop took it in meanwhile: it is put, and the loop runs
        return 0

    cdef bint _unput(self, object item) except -1:
        # the wake-up failed (the loop closed meanwhile): take item back; False if taken in
        cdef _Inbox inbox = self._inbox
        cdef bint found
        inbox._acquire()
        try:
            inbox.want |= _WANT_ITEM  # the getter may still wait
            found = _unlisted(inbox.items, item)
        finally:
            inbox._release()
        return found

    def _on_put_threadsafe(self):
        """In the loop, woken by a thread's put: take the items in and wake the getters."""
        self._c_take_in()
        if self._getters and not self._inbox._listen(_WANT_ITEM):
            # more came meanwhile: taken in on the loop's next round, after what is ready
            self._loop.call_soon(self._on_put_threadsafe)

    def _take_in(self):
        """Move what other threads put into the heap, waking a getter per item.  O(k log n).

        Takes what is there when it starts, never what comes meanwhile.  Binds
        the queue to the running loop if it is bound to none.
        """
        self._c_take_in()

    cdef int _c_take_in(self) except -1:
        cdef _Inbox inbox = self._inbox
        cdef ItemHeap heap = self._heap
        cdef list batch
        cdef list failed = None
        cdef Py_ssize_t n, done = 0, taken = 0, nfailed
        cdef PyObject* running
        cdef bint ok = False
        if heap._busy:  # from a comparison of the heap's items: they stay in the inbox
            raise RuntimeError(_HEAP_BUSY)
        if self._loop is None:  # the loop that takes thread puts in owns the queue
            running = _running_loop_or_null(_get_running_loop)
            if running == NULL:
                PyErr_Clear()  # no loop runs here: none to bind
            else:
                self._loop = <object>running
                Py_DECREF(<object>running)  # the call's reference: _loop holds its own
        elif self._loop.is_closed() and _py_running_loop() is not None:
            self._get_loop()  # the face's: binds to the running loop (or raises)
        loop = self._loop
        inbox._acquire()
        batch = inbox.items
        inbox.items = inbox.spare
        inbox.spare = batch
        n = PyList_GET_SIZE(batch)
        count_store(&inbox.transit, inbox.transit + n)
        inbox._release()
        try:
            # re-read: only gc.get_referents could change it, but never trust a size
            while done < n and done < PyList_GET_SIZE(batch):
                item = <object>PyList_GET_ITEM(batch, done)  # held: item is a reference
                try:
                    heap._push(item)
                except Exception as exc:  # it goes to the loop's exception handler
                    if failed is None:
                        failed = []
                    failed.append((item, exc))
                else:
                    taken += 1
                    count_store(&inbox.transit, inbox.transit - 1)  # after the push: see _size
                done += 1
            ok = True
        finally:  # a flag, not `except`: Cython saves no exception state on entry
            nfailed = 0 if failed is None else len(failed)
            if not ok:  # interrupted: the item under way, the rest and the failed go back
                self._c_requeue(batch, done, n, failed)
            elif done < n:  # the batch shrank under us: those are gone
                count_store(&inbox.transit, inbox.transit - (n - done))
            del batch[:]
            self._unfinished_tasks += taken
            getters = self._getters
            while taken and dq_size(<PyObject*>getters):
                if not _wakeup_next(getters):
                    break
                taken -= 1
        count_store(&inbox.transit, inbox.transit - nfailed)
        if not self._unfinished_tasks and dq_size(<PyObject*>self._joiners) \
                and not PyList_GET_SIZE(inbox.items):
            _wakeup_all(self._joiners)  # the last items put failed: nothing is left to do
        if failed is not None:
            report_unqueued(self, loop, failed)
        return 0

    cdef int _c_requeue(self, list batch, Py_ssize_t done, Py_ssize_t n, list failed) except -1:
        # a take-in interrupted: what it did not push goes back to the front of
        # the inbox, uncounted from transit in the same step
        cdef _Inbox inbox = self._inbox
        rest = [] if failed is None else [pair[0] for pair in failed]
        moved = len(rest) + n - done
        rest += batch[done:]
        inbox._acquire()
        inbox.items[:0] = rest  # no Python code runs: a list of the same objects
        count_store(&inbox.transit, inbox.transit - moved)
        inbox._release()
        return 0

    cdef object _c_get_nowait(self):
        if PyList_GET_SIZE(self._inbox.items):
            self._c_take_in()
        if PyList_GET_SIZE(self._heap._items) == 0:
            if self._is_shutdown:
                raise QueueShutDown(SHUTDOWN_GET)
            raise QueueEmpty
        item = self._heap._pop()
        if dq_size(<PyObject*>self._putters):
            _wakeup_next(self._putters)
        return item

    # put and get return a coroutine of _await.pxd's (a coroutine function to
    # inspect, as the pure twin's): _pq_put_start and _pq_get_start below run
    # at its first send.  From Python 3.12 the faces' get is a Python
    # coroutine instead (dq_core._aiowaiting.queue_get says why).
    @cython.binding(True)
    def put(self, item):
        """Put ``item`` into the queue, waiting for a free slot if it is full.  O(log n).

        Raises ``QueueShutDown`` if the queue has been shut down.
        """
        return dq_await_new(self, _PQ_PUT, <PyObject*>item)

    @cython.binding(True)
    def get(self):
        """Remove and return the lowest item, waiting until there is one.  O(log n).

        Raises ``QueueShutDown`` if the queue has been shut down and is
        empty, or shut down immediately.
        """
        return dq_await_new(self, _PQ_GET, NULL)

    def task_done(self):
        """Indicate that an item taken by ``get`` has been processed.  O(1).

        When every item put has been marked done, ``join`` returns.  Raises
        ``ValueError`` if called more times than there were items put.
        """
        if self._unfinished_tasks <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished_tasks -= 1
        if self._unfinished_tasks == 0:
            inbox = self._inbox
            if inbox.transit or PyList_GET_SIZE(inbox.items):  # put from threads, not done either
                return
            _wakeup_all(self._joiners)


# what put and get look for on self before taking the C paths (see _own_at)
_core_getattro = _getattro(<PyTypeObject*>_AioQueueCore)
cdef object _put_nowait = _AioQueueCore.__dict__["put_nowait"]
cdef object _get_nowait = _AioQueueCore.__dict__["get_nowait"]
cdef object _empty = _AioQueueCore.__dict__["empty"]


cdef object _wait_in(object coro, PyObject** inner):
    # a start function's "it must wait": the slow coroutine goes on from here
    Py_INCREF(coro)
    inner[0] = <PyObject*>coro
    return None


cdef object _pq_put_start(object queue, object item, PyObject** inner):
    # the first send of put(item): the async def it replaces, up to its wait
    cdef _AioQueueCore q = <_AioQueueCore>queue
    if q._full():
        return _wait_in(q._wait_put(item), inner)  # the face's: waits on the loop
    if _own_at(&dq_own_put_nowait, q, "put_nowait", _put_nowait):
        q._c_put_nowait(item)
        return None
    return q.put_nowait(item)


cdef object _pq_get_start(object queue, object unused, PyObject** inner):
    # dq_core._aiowaiting.queue_get: ``if self.empty(): return await
    # self._wait_get()``, then ``return self.get_nowait()``
    cdef _AioQueueCore q = <_AioQueueCore>queue
    if (q._size() == 0 if _own_at(&dq_own_empty, q, "empty", _empty) else q.empty()):
        return _wait_in(q._wait_get(), inner)  # the face's: waits on the loop
    if _own_at(&dq_own_get_nowait, q, "get_nowait", _get_nowait):
        return q._c_get_nowait()
    return q.get_nowait()


class AioQueueCore(_AioQueueCore, asyncio.PriorityQueue):
    """The heap, the waiters and the non-waiting paths of aio.PriorityQueue.

    An ``asyncio.PriorityQueue`` by inheritance only: every method of the
    standard library's class is overridden here or in ``dq_core.aio._priorityqueue``
    (the waiting coroutines, ``shutdown``), and its ``__init__`` never runs.
    """

    __slots__ = ()


# -- AioDelayCore: aio.DelayQueue ---------------------------------------------------

@cython.no_gc_clear  # as above: _heap is typed, never None under a method
@cython.auto_pickle(False)
cdef class AioDelayCore:
    """AioDelayCore(maxsize=0)\n--\n\nThe non-waiting half of aio.DelayQueue: heap, waiters, the one timer."""

    cdef readonly Heap _heap
    cdef readonly object _maxsize
    cdef Py_ssize_t _cap                    # maxsize when it can be reached, else 0
    cdef public bint _is_shutdown
    cdef readonly object _getters, _putters
    cdef public Py_ssize_t _pending         # getters woken that have not run yet
    cdef readonly object _timer
    cdef readonly double _timer_when
    cdef object _bound                      # the loop it is bound to (LoopBound's _loop)
    cdef object _seen_holder                # see _holder(): None, or the entry for _bound
    cdef Py_ssize_t _seen_forks
    cdef double _seen                       # uvloop's last reading (see _call_now)
    cdef bint _seen_ok                      # _seen holds one
    cdef readonly _Inbox _inbox             # the calls of other threads (the face's *_threadsafe)
    cdef object __weakref__

    def __cinit__(self, *args, **kwargs):
        self._heap = Heap()
        self._getters = deque()
        self._putters = deque()
        self._maxsize = 0
        self._bound = None
        self._seen_holder = None
        self._inbox = _Inbox()

    @property
    def _loop(self):
        return self._bound

    @_loop.setter
    def _loop(self, loop):
        self._bound = loop
        self._seen_holder = None
        self._seen_ok = False

    def __init__(self, maxsize=0):
        m = check_maxsize(maxsize)
        self._maxsize = m
        self._cap = _cap_of(m)
        self._is_shutdown = False
        self._pending = 0
        self._timer = None
        self._timer_when = 0.0

    # -- sizes ----------------------------------------------------------------
    #
    # Read in the queue's loop, they first carry out the calls other threads
    # queued (the face's _catch_up): a thread's put counts once it returned.

    def qsize(self):
        """Number of items held, due or not.  O(1); O(k log n) with k calls of threads waiting.

        In the queue's loop, the calls other threads queued are carried out
        first: the answer counts every call made before it.
        """
        if PyList_GET_SIZE(self._inbox.items):
            self._catch_up()
        return self._heap._n

    def __len__(self):
        if PyList_GET_SIZE(self._inbox.items):
            self._catch_up()
        return self._heap._n

    def empty(self):
        """Return True if no item is held, due or not.  O(1); O(k log n) with k calls of threads waiting.

        In the queue's loop, the calls other threads queued are carried out first.
        """
        if PyList_GET_SIZE(self._inbox.items):
            self._catch_up()
        return self._heap._n == 0

    cdef inline bint _full(self) noexcept:
        return self._cap > 0 and self._heap._n >= self._cap

    def full(self):
        """Return True if ``maxsize`` items are held.  O(1); O(k log n) with k calls of threads waiting.

        In the queue's loop, the calls other threads queued are carried out first.
        """
        if PyList_GET_SIZE(self._inbox.items):
            self._catch_up()
        return self._full()

    def _has_room(self):
        """True unless ``maxsize`` items are held (what a woken putter waits for)."""
        return not self._full()

    def next_deadline(self):
        """The earliest deadline held (on ``loop.time()``), or None if empty.  O(1).

        O(k log n) with k calls of threads waiting: in the queue's loop, the
        calls other threads queued are carried out first.
        """
        if PyList_GET_SIZE(self._inbox.items):
            self._catch_up()
        heap = self._heap
        return heap._hkey[heap._off] if heap._n else None

    # -- put and get ------------------------------------------------------------

    cdef inline object _bound_loop(self):
        # asyncio.get_running_loop(), checked against (or bound as) the queue's loop
        cdef PyObject* h = _holder()
        if h != NULL and h == <PyObject*>self._seen_holder and self._seen_forks == _forks:
            return self._bound
        cdef PyObject* p = _running_loop_or_null(_get_running_loop)
        if p == NULL:  # no loop runs here: the face's error names the *_threadsafe methods
            PyErr_Clear()
            return self._get_loop()
        loop = <object>p
        Py_DECREF(loop)  # the call's reference: loop holds its own
        if loop is not self._bound:
            self._get_loop()  # LoopBound's, in the face: binds, or raises
        h = _holder()
        if h != NULL and loop is self._bound:
            self._seen_holder = <object>h
            self._seen_forks = _forks
        return loop

    def put_nowait(self, item, delay=0.0):
        """Add ``item``, due ``delay`` seconds from now; return its handle.  O(log n).

        A ``delay`` <= 0 makes it due at once, ``inf`` never (until
        rescheduled).  Raises ``QueueFull`` if ``maxsize`` items are held,
        ``QueueShutDown`` once the queue is shut down.
        """
        cdef double now, deadline
        if type(delay) is not float or PyFloat_AS_DOUBLE(delay) != PyFloat_AS_DOUBLE(delay):
            delay = to_real(delay, "delay")  # a number made a float, or the error (NaN too)
        loop = self._bound_loop()
        if _c_time(loop, &now):
            deadline = now + PyFloat_AS_DOUBLE(delay)  # the float sum loop.time() + delay makes
        else:
            t = self._call_now(loop)
            if type(t) is float:
                deadline = PyFloat_AS_DOUBLE(t) + PyFloat_AS_DOUBLE(delay)
            else:
                deadline = t + delay
        if self._is_shutdown or self._cap > 0 or self._getters or deadline != deadline:
            return self._c_add(item, deadline)
        return self._heap._push_key(deadline, item)

    def _add(self, item, double deadline):
        """Admit ``item`` due at ``deadline`` (shutdown, room), push it, re-arm for a new head."""
        return self._c_add(item, deadline)

    cdef object _c_add(self, object item, double deadline):
        heap = self._heap
        if deadline != deadline:  # inf + -inf: a loop clock at inf and a delay of -inf
            raise ValueError("deadline must not be NaN (loop.time() + delay)")
        if self._is_shutdown:
            raise QueueShutDown(SHUTDOWN_PUT)
        if self._full():
            raise QueueFull
        if self._getters and (not heap._n or deadline < heap._hkey[heap._off]):
            handle = heap._push_key(deadline, item)
            self._c_schedule()  # a new head
            return handle
        return heap._push_key(deadline, item)

    def get_nowait(self):
        """Remove and return the earliest-due item if it is due, else raise ``QueueEmpty``.  O(log n).

        O(k log n) with k calls of threads waiting: the calls other threads
        queued since the last look are carried out first.  Raises
        ``QueueShutDown`` once the queue is shut down and holds no item.
        """
        item = self._c_get_due()
        if item is _NOT_DUE:
            raise QueueEmpty
        return item

    cdef object _c_get_due(self):
        # get_nowait, returning _NOT_DUE where it raises QueueEmpty
        cdef double now
        loop = self._bound_loop()
        if PyList_GET_SIZE(self._inbox.items):
            self._take_calls()  # the face's: other threads' puts, in order
        heap = self._heap
        if heap._n:
            if _c_time(loop, &now):
                if not heap._hkey[heap._off] <= now:
                    return _NOT_DUE
            elif not self._seen_due(loop):
                t = self._call_now(loop)  # may run a loop's code: the heap is read after
                if heap._n and not _le(heap._hkey[heap._off], t):
                    return _NOT_DUE
        if heap._n:
            item = heap._pop_head()
            if dq_size(<PyObject*>self._putters) or dq_size(<PyObject*>self._getters):
                self._c_taken()
            return item
        if self._is_shutdown:
            raise QueueShutDown(SHUTDOWN_GET)
        return _NOT_DUE

    # -- the clock ----------------------------------------------------------------
    #
    # Where loop.time() is a call (uvloop), a reading of a clock known to be
    # monotonic (uvloop's Loop.time) is remembered.  A head due by then is due
    # now, as long as the loop still reads that clock: get need not call it
    # again.  A remembered reading only ever says "due", never "not due yet"
    # (that is always asked of the clock).  asyncio's own clock is read in C,
    # as cheaply as it would be checked.

    @cython.final
    cdef object _call_now(self, object loop):
        # loop.time() where it is a call; a monotonic reading is remembered
        cdef int mono
        t = _call_time(loop, &mono)
        if mono and type(t) is float:
            self._seen = PyFloat_AS_DOUBLE(t)
            self._seen_ok = True
        return t

    @cython.final
    cdef inline bint _seen_due(self, object loop) except -1:
        # the head is due by the remembered reading, and the loop still reads its clock
        if not self._seen_ok or not self._heap._hkey[self._heap._off] <= self._seen:
            return False
        return self._still_seen(loop)

    @cython.final
    cdef bint _still_seen(self, object loop) except -1:
        cdef int mono
        same = _type_time(loop, &mono) is not None and mono and _not_on_instance(loop, "time")
        # the checks may run a loop's code (a dict key's __eq__): read the heap again
        heap = self._heap
        return same and heap._n > 0 and heap._hkey[heap._off] <= self._seen

    cdef object _get_or_not_due(self):
        # self.get_nowait() (a subclass's or the instance's), _NOT_DUE for QueueEmpty
        try:
            return self.get_nowait()
        except QueueEmpty:
            return _NOT_DUE

    @cython.binding(True)
    def get(self):
        """Remove and return the earliest-due item, waiting until one is due.  O(log n).

        Raises ``QueueShutDown`` once the queue is shut down and holds no
        item, or at once after an immediate shutdown.
        """
        return dq_await_new(self, _DQ_GET, NULL)  # _dq_get_start runs at its first send

    def _taken(self):
        """The head was taken: wake a putter, and the next getter or the timer."""
        self._c_taken()

    cdef int _c_taken(self) except -1:
        if self._putters:
            _wakeup_next(self._putters)
        if self._getters:
            if self._is_shutdown and not self._heap._n:
                self._c_wake_all()  # they raise QueueShutDown now
            else:
                self._c_schedule()
        return 0

    # -- the one timer ------------------------------------------------------------

    def _schedule(self):
        """Make sure a waiting getter will learn that the head is due: wake one or arm the timer."""
        self._c_schedule()

    cdef int _c_schedule(self) except -1:
        cdef double deadline
        heap = self._heap
        if not self._getters or not heap._n or self._pending:
            # nobody to wake, nothing to wait for, or a woken getter will call again
            self._c_disarm()
            return 0
        deadline = heap._hkey[heap._off]
        loop = self._loop
        assert loop is not None
        now = _loop_time(loop)
        if _le(deadline, now):
            self._c_disarm()
            if _wakeup_next(self._getters):
                self._pending += 1
            return 0
        limit = now + _MAX_ARM
        when = limit if limit < deadline else deadline  # min(deadline, limit)
        timer = self._timer
        if timer is not None:
            if self._timer_when == when:
                return 0
            timer.cancel()
        self._timer = loop.call_at(when, self._on_timer)
        self._timer_when = when
        return 0

    def _on_timer(self):
        """The timer fired: re-read the clock (never wake early) and wake or re-arm."""
        self._timer = None
        self._c_schedule()

    def _disarm(self):
        """Cancel the timer, if armed."""
        self._c_disarm()

    cdef int _c_disarm(self) except -1:
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()
        return 0

    def _wake_all(self):
        """Wake every getter (shutdown: each re-checks and raises QueueShutDown)."""
        self._c_wake_all()

    cdef int _c_wake_all(self) except -1:
        self._c_disarm()
        getters = self._getters
        while getters:
            getter = getters.popleft()
            if not getter.done():
                getter.set_result(None)
                self._pending += 1
        return 0


cdef object _NOT_DUE = object()  # _c_get_due's "nothing due" (never an item: private)
cdef object _dq_get_nowait = AioDelayCore.__dict__["get_nowait"]  # see _own_at


cdef object _dq_get_start(object queue, object unused, PyObject** inner):
    # ``try: return self.get_nowait() except QueueEmpty: pass``, then the wait
    cdef AioDelayCore q = <AioDelayCore>queue
    if _own_at(&dq_own_due, q, "get_nowait", _dq_get_nowait):
        item = q._c_get_due()  # QueueShutDown once shut down and empty
    else:
        item = q._get_or_not_due()
    if item is not _NOT_DUE:
        return item
    return _wait_in(q._wait_get(), inner)  # the face's: waits on the loop


# -- the coroutines of put and get (src/_await.pxd) ------------------------------------

cdef enum:
    _PQ_GET = 0
    _PQ_PUT = 1
    _DQ_GET = 2

cdef dq_await_start _starts[4]
cdef const char* _qualnames[4]
_starts[_PQ_GET] = _pq_get_start
_starts[_PQ_PUT] = _pq_put_start
_starts[_DQ_GET] = _dq_get_start
_starts[3] = NULL
_qualnames[_PQ_GET] = "_AioQueueCore.get"
_qualnames[_PQ_PUT] = "_AioQueueCore.put"
_qualnames[_DQ_GET] = "AioDelayCore.get"
_qualnames[3] = NULL
collections.abc.Coroutine.register(
    dq_await_ready("dq_core._aioqueuecore.coroutine", unstarted, _starts, _qualnames))
for _f in (_AioQueueCore.__dict__["get"], _AioQueueCore.__dict__["put"],
           AioDelayCore.__dict__["get"]):
    dq_mark_coroutine_function(_f)
del _f

_switches = dq_shortcut_switches()
#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({
    "await_freelist": _switches["await_freelist"],
    "code_flags": _switches["code_flags"],
    "type_tag_cache": _switches["type_tag_cache"],
    "type_lookup": _switches["type_lookup"],
    "instance_dict_ptr": _switches["instance_dict_ptr"],
    "method_descr": _switches["method_descr"],
    "running_loop_cfunc": _switches["running_loop_cfunc"] and _grl_direct,
    "running_loop_entry": _switches["running_loop_entry"],
    "monotonic_clock_gettime": _switches["monotonic_clock_gettime"],
})
del _switches
