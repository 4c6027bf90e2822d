# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""The entries and the hot paths of WheelTTLDict (twin of ``_wheelttlcore_py``).

Each key maps, in a dict, to its entry: a small C struct of an object
(key, value, deadline, wheel handle) that is also an item of the
TimingWheel of the implementation, scheduled at its deadline, and a link
of an intrusive doubly linked list that keeps the entries from least to
most recently used (the pure twin's OrderedDict).  Reads compare the
deadline with the clock (time.monotonic read in C), so an expired value is
never returned, whether the wheel has given the entry back yet or not.
``dq_core._wheelttldict.WheelTTLDict`` makes this a MutableMapping.

The list links are borrowed: the dict holds every entry, and an entry
joins the list only once it is in the dict and leaves the dict before it
leaves the list, so user code run by a dict operation (a key's
``__hash__``/``__eq__``) always finds the list and the dict alike.  A
change made from such user code, or from a finaliser, while a change is
under way is refused with ``RuntimeError``; reads are allowed (a read
moves only entries that are held).  What a change removes is shown to
``on_expire`` once the change is complete.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from cpython.dict cimport PyDict_DelItem, PyDict_GetItemWithError, PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject, inquiry, traverseproc, visitproc
from libc.math cimport INFINITY

cdef extern from "Python.h":
    # the entry held for key, inserting default if none is: one look-up (borrowed)
    PyObject* PyDict_SetDefault(object d, object key, object default) except NULL

from _clock cimport clock_reading
from _number cimport _real

import time
import types

from dq_core._ringstate import reentered, ttl_of
from dq_core._ttldictstate import on_expire_of, tell_each

__all__ = ["WheelTTLCore"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes: none of its own.
SHORTCUTS = types.MappingProxyType({})

cdef object MONOTONIC = time.monotonic
cdef double INF = INFINITY


@cython.final
@cython.no_gc
@cython.freelist(64)
@cython.auto_pickle(False)
cdef class _Entry:
    # Not a container the garbage collector tracks: it would walk and link
    # every entry (a third of a set's cost); the core shows the collector
    # what its entries hold instead (_core_traverse).
    # One key's entry: on the wheel (handle) or in soon, or neither (no deadline)
    cdef object key, value, handle
    cdef double deadline
    cdef PyObject* prev     # the recency list, borrowed (the dict holds the entry)
    cdef PyObject* next
    cdef bint held          # in the dict and the list


def _deadline_of(e):
    return (<_Entry>e).deadline


cdef inline _Entry _entry(object key, object value, double deadline):
    cdef _Entry e = _Entry.__new__(_Entry)
    e.key = key
    e.value = value
    e.handle = None
    e.deadline = deadline
    return e


@cython.no_gc_clear
@cython.auto_pickle(False)
cdef class WheelTTLCore:
    """The entries and the hot paths of WheelTTLDict.

    >>> from dq_core import TimingWheel
    >>> d = WheelTTLCore()
    >>> d._setup(10.0, None, lambda: 0.0, None, TimingWheel(clock=lambda: 0.0))
    >>> d.set("a", 1)
    >>> d.get("a"), "b" in d
    (1, False)
    >>> d.expire(10.0)
    [('a', 1)]
    """

    cdef readonly double _ttl
    cdef readonly object _maxsize
    cdef Py_ssize_t _max            # maxsize, or -1 for none
    cdef readonly object _clock
    cdef object _on_expire
    cdef readonly double _tick
    cdef readonly object _wheel
    cdef object _schedule_at, _cancel, _advance   # the wheel's bound methods
    cdef readonly dict _data
    cdef readonly list _soon        # entries off the wheel, due within two ticks, by deadline
    cdef double _purge_at           # a set purges once the clock reaches this
    cdef PyObject* _first           # the recency list: least recently used first
    cdef PyObject* _last
    cdef bint _busy

    def __cinit__(self):
        self._data = {}
        self._soon = []
        self._max = -1
        self._clock = MONOTONIC
        self._purge_at = -INF

    def _setup(self, life, size, clock, on_expire, wheel):
        """Start empty with the checked ``life`` (inf: none), ``size``, ``clock``, ``on_expire`` and ``wheel``."""
        cdef double t = life
        cdef double tk = wheel.tick
        schedule_at, cancel, advance = wheel.schedule_at, wheel.cancel, wheel.advance
        self._enter()
        old = (self._data, self._soon, self._wheel, self._clock, self._on_expire)  # released after the change
        self._forget()
        self._ttl = t
        self._maxsize = size
        self._max = -1 if size is None else size
        self._clock = clock
        self._on_expire = on_expire
        self._tick = tk
        self._wheel = wheel
        self._schedule_at, self._cancel, self._advance = schedule_at, cancel, advance
        self._data = {}
        self._soon = []
        self._purge_at = -INF
        self._busy = False

    @property
    def on_expire(self):
        """Called as ``on_expire(key, value)`` for every expired or evicted entry, or None."""
        return self._on_expire

    @on_expire.setter
    def on_expire(self, value):
        self._on_expire = on_expire_of(value)

    cdef void _clear_all(self) noexcept:
        # the garbage collector's clear: every entry goes, and the wheel
        old = (self._data, self._soon, self._wheel, self._schedule_at, self._cancel, self._advance)
        self._forget()
        self._data = {}
        self._soon = []
        self._wheel = self._schedule_at = self._cancel = self._advance = None

    cdef inline int _enter(self) except -1:
        if self._busy:
            raise reentered("WheelTTLDict")
        self._busy = True
        return 0

    cdef void _forget(self) noexcept:
        # every entry leaves the list (the mapping is replaced whole)
        cdef PyObject* p = self._first
        cdef _Entry e
        while p != NULL:
            e = <_Entry>p
            p = e.next
            e.held = False
            e.prev = e.next = NULL
        self._first = self._last = NULL

    # -- the recency list ---------------------------------------------------------

    cdef inline void _append(self, _Entry e) noexcept:
        e.prev = self._last
        e.next = NULL
        if self._last != NULL:
            (<_Entry>self._last).next = <PyObject*>e
        else:
            self._first = <PyObject*>e
        self._last = <PyObject*>e
        e.held = True

    cdef inline void _unlink(self, _Entry e) noexcept:
        if e.prev != NULL:
            (<_Entry>e.prev).next = e.next
        else:
            self._first = e.next
        if e.next != NULL:
            (<_Entry>e.next).prev = e.prev
        else:
            self._last = e.prev
        e.prev = e.next = NULL
        e.held = False

    cdef inline void _replace(self, _Entry old, _Entry e) noexcept:
        # e takes old's place in the list
        e.prev, e.next = old.prev, old.next
        if e.prev != NULL:
            (<_Entry>e.prev).next = <PyObject*>e
        else:
            self._first = <PyObject*>e
        if e.next != NULL:
            (<_Entry>e.next).prev = <PyObject*>e
        else:
            self._last = <PyObject*>e
        e.held = True
        old.prev = old.next = NULL
        old.held = False

    cdef inline void _to_end(self, _Entry e) noexcept:
        if e.next == NULL:
            return
        self._unlink(e)
        self._append(e)

    # -- reads --------------------------------------------------------------------

    cdef inline double _now(self) except? -1.0:
        clock = self._clock  # held: the call may replace it
        return clock_reading(clock, MONOTONIC)

    cdef inline _Entry _find(self, object key):
        # key's entry, or None (a raising __hash__/__eq__ propagates)
        cdef PyObject* p = PyDict_GetItemWithError(self._data, key)
        if p == NULL:
            return None
        return <_Entry>p

    cdef inline bint _live(self, _Entry e) except -1:
        # e has not expired (the clock is read only for a finite deadline)
        if e.deadline == INF:
            return True
        return e.deadline > self._now()

    def __getitem__(self, key):
        cdef PyObject* p = PyDict_GetItemWithError(self._data, key)
        cdef _Entry e
        if p == NULL:
            raise KeyError(key)
        e = <_Entry>p  # a reference of our own: the clock may change the mapping
        if e.deadline != INF and e.deadline <= self._now():
            raise KeyError(key)
        if self._max >= 0 and e.held:
            self._to_end(e)
        return e.value

    def get(self, key, default=None):
        """The value of ``key`` if it is live, else ``default`` (a hit refreshes it).  O(1)."""
        cdef PyObject* p = PyDict_GetItemWithError(self._data, key)
        cdef _Entry e
        if p == NULL:
            return default
        e = <_Entry>p
        if e.deadline != INF and e.deadline <= self._now():
            return default
        if self._max >= 0 and e.held:
            self._to_end(e)
        return e.value

    def _peek(self, key, default):
        """The value of ``key`` if it is live, else ``default``; recency unchanged."""
        cdef _Entry e = self._find(key)
        if e is None or not self._live(e):
            return default
        return e.value

    def __contains__(self, key):
        cdef _Entry e = self._find(key)
        return e is not None and self._live(e)

    def deadline(self, key):
        """When ``key`` expires on the clock (``math.inf``: never); KeyError if absent.  O(1)."""
        cdef _Entry e = self._find(key)
        if e is None or not self._live(e):
            raise KeyError(key)
        return e.deadline

    def __len__(self):
        self.expire()
        return len(self._data)

    def __iter__(self):
        self.expire()
        # the keys live now, copied: a purge while they are walked changes nothing here
        return iter(self._keys())

    cdef list _keys(self):
        cdef list out = []
        cdef PyObject* p = self._first
        while p != NULL:
            out.append((<_Entry>p).key)  # may run a finaliser (a collection): the entry is held
            p = (<_Entry>p).next
        return out

    def _entries(self):
        """The ``(key, value, deadline)`` of every entry held, least recently used first."""
        cdef list out = []
        cdef PyObject* p = self._first
        cdef _Entry e
        while p != NULL:
            e = <_Entry>p
            out.append((e.key, e.value, e.deadline))
            p = e.next
        return out

    # -- changes ------------------------------------------------------------------

    def __setitem__(self, key, value):
        self._set(key, value, self._ttl)

    def set(self, key, value, ttl=None):
        """Map ``key`` to ``value`` for ``ttl`` seconds (None: the default ttl).  O(1) amortised.

        A ttl of ``math.inf`` never expires; 0 expires at once.
        """
        cdef double life
        if ttl is None:
            life = self._ttl
        elif type(ttl) is float and <double>ttl >= 0.0:  # the common case, without a call
            life = ttl
        else:
            life = ttl_of(ttl)
        self._set(key, value, life)

    cdef int _set(self, object key, object value, double life) except -1:
        cdef double now = self._now()
        cdef double deadline = now + life
        cdef _Entry old, e, gone
        cdef list told = None
        cdef dict data
        cdef PyObject* p
        cdef bint fresh = False
        self._enter()
        try:
            data = self._data
            if self._max < 0:  # no eviction: a new key takes one look-up
                e = _entry(key, value, deadline)
                p = PyDict_SetDefault(data, key, e)
                if p == <PyObject*>e:
                    if deadline != INF:
                        try:
                            e.handle = self._schedule_at(e, deadline)
                        except BaseException:
                            PyDict_DelItem(data, key)
                            raise
                    self._append(e)
                    fresh = True
                else:
                    old = <_Entry>p
            else:
                old = self._find(key)
            if not fresh:
                if old is not None:
                    if old.handle is not None:
                        self._cancel(old.handle)
                        old.handle = None
                    if old.deadline <= now:  # expired, never handed back: on_expire sees it now
                        told = [(key, old.value)]
                elif self._max >= 0 and len(data) >= self._max:
                    told = self._purge(now, told)  # expired entries go before a live one is evicted
                e = _entry(key, value, deadline)
                if deadline != INF:
                    e.handle = self._schedule_at(e, deadline)
                try:
                    PyDict_SetItem(data, key, e)
                except BaseException:  # a key's __hash__/__eq__ raised: the wheel lets it go
                    if e.handle is not None:
                        self._cancel(e.handle)
                        e.handle = None
                    raise
                if old is not None and old.held:
                    if self._max >= 0:
                        self._unlink(old)
                        self._append(e)
                    else:
                        self._replace(old, e)
                else:
                    self._append(e)
                if self._max >= 0:
                    while len(data) > self._max:
                        gone = <_Entry>self._first
                        self._take(gone)
                        if told is None:
                            told = []
                        told.append((gone.key, gone.value))
            if now >= self._purge_at:
                told = self._purge(now, told)
        finally:
            self._busy = False
        if told:
            self._notify(told)
        return 0

    def _drop(self, key):
        """Remove the live entry of ``key`` and return its value; KeyError if absent or expired."""
        cdef _Entry e = self._find(key)
        if e is None:
            raise KeyError(key)
        if e.deadline != INF and e.deadline <= self._now():
            raise KeyError(key)  # left for the purge, which tells on_expire
        self._enter()
        try:
            if e.held:
                self._take(e)
        finally:
            self._busy = False
        return e.value

    def __delitem__(self, key):
        self._drop(key)

    def popitem(self):
        """Remove and return the least recently used live ``(key, value)``; KeyError if none."""
        cdef _Entry e
        self.expire()
        self._enter()
        try:
            if self._first == NULL:
                raise KeyError("popitem(): mapping is empty")
            e = <_Entry>self._first
            self._take(e)
        finally:
            self._busy = False
        return e.key, e.value

    def clear(self):
        """Remove every entry (``on_expire`` is not called).  O(n)."""
        wheel = type(self._wheel)(tick=self._tick, clock=self._clock)
        schedule_at, cancel, advance = wheel.schedule_at, wheel.cancel, wheel.advance
        self._enter()
        old = (self._data, self._soon, self._wheel)  # released after the change
        self._forget()
        self._data = {}
        self._soon = []
        self._wheel = wheel
        self._schedule_at, self._cancel, self._advance = schedule_at, cancel, advance
        self._busy = False

    def _load(self, entries):
        """Hold the ``(key, value, deadline)`` triples (from ``_entries``) of an empty mapping."""
        cdef _Entry e, old
        cdef double deadline
        self._enter()
        try:
            for key, value, d in entries:
                deadline = d
                e = _entry(key, value, deadline)
                if deadline != INF:
                    e.handle = self._schedule_at(e, deadline)
                old = self._find(key)
                PyDict_SetItem(self._data, key, e)
                if old is not None and old.held:
                    self._replace(old, e)
                else:
                    self._append(e)
        finally:
            self._busy = False

    # -- expiry -------------------------------------------------------------------

    cdef int _take(self, _Entry e) except -1:
        # e leaves the dict, the list and the wheel
        self._remove(e)
        if e.handle is not None:
            self._cancel(e.handle)
            e.handle = None
        return 0

    cdef inline void _remove(self, _Entry e) except *:
        # e leaves the dict, then the list
        PyDict_DelItem(self._data, e.key)
        self._unlink(e)

    cdef list _purge(self, double now, list out):
        # Remove every entry whose deadline is <= now, earliest first; their
        # (key, value) pairs are appended to out (made when None) and it is returned.
        cdef double tick = self._tick
        cdef list soon = self._soon, gone, due, early
        cdef Py_ssize_t i, n
        cdef _Entry e
        self._purge_at = now + tick
        if soon and (<_Entry>soon[0]).deadline <= now:
            i, n = 0, len(soon)
            while i < n and (<_Entry>soon[i]).deadline <= now:
                i += 1
            gone = soon[:i]
            del soon[:i]
            for x in gone:
                e = <_Entry>x
                if e.held:  # not removed or set again since
                    self._remove(e)
                    if out is None:
                        out = []
                    out.append((e.key, e.value))
        if not len(self._wheel):
            return out
        # The wheel gives an item back up to a tick after its deadline: looking
        # two ticks ahead returns all that expired.  The few live ones it gives
        # too wait in ``soon``, sorted, so that calls more frequent than ticks
        # never hand them back and forth.
        due = self._advance(now + 2 * tick)
        n = PyList_GET_SIZE(due)
        early = None
        i = 0
        try:
            if out is None and n:
                out = []
            while i < n:
                e = <_Entry>PyList_GET_ITEM(due, i)
                e.handle = None
                if e.deadline <= now:
                    self._remove(e)
                    out.append((e.key, e.value))
                else:
                    if early is None:
                        early = []
                    early.append(e)
                i += 1
        except BaseException:  # a key's __eq__ raised: the rest wait in soon
            if early is None:
                early = []
            while i < n:
                e = <_Entry>PyList_GET_ITEM(due, i)
                e.handle = None
                if e.held:
                    early.append(e)
                i += 1
            raise
        finally:
            if early:
                soon += early
                soon.sort(key=_deadline_of)
        return out

    cdef int _notify(self, list removed) except -1:
        error = tell_each(self._on_expire, removed)
        if error is not None:
            raise error
        return 0

    def expire(self, now=None):
        """Remove and return the expired ``(key, value)`` pairs still held.

        ``now`` defaults to ``clock()``.  O(k + s) for k expired entries and
        s occupied wheel slots passed; O(1) when nothing is due.  Entries
        come out earliest deadline first (to the ``tick``), and are also
        passed to ``on_expire`` (when given), one call each, before this
        returns.
        """
        cdef double t = self._now() if now is None else _real(now, "now")
        cdef list removed
        self._enter()
        try:
            removed = self._purge(t, None)
        finally:
            self._busy = False
        if removed is None:
            return []
        if removed:
            self._notify(removed)
        return removed

    def next_expiry(self):
        """A time before which no entry expires (a lower bound), or None.  O(levels)."""
        return self._wheel.next_deadline()

    def _check(self):
        """Assert the invariants: each entry with a finite deadline is on the wheel or in soon."""
        cdef PyObject* p = self._first
        cdef PyObject* prev = NULL
        cdef _Entry e
        cdef Py_ssize_t n = 0, on_wheel = 0
        self._wheel._check()
        soon = {id(x) for x in self._soon}
        deadlines = [(<_Entry>x).deadline for x in self._soon]
        assert deadlines == sorted(deadlines)
        while p != NULL:
            e = <_Entry>p
            assert e.prev == prev
            assert e.held
            assert self._data[e.key] is e
            if e.handle is not None:
                on_wheel += 1
                assert e.handle in self._wheel
            else:
                assert e.deadline == INF or id(e) in soon, (e.key, e.deadline)
            n += 1
            prev = p
            p = e.next
        assert prev == self._last
        assert n == len(self._data), (n, len(self._data))
        assert on_wheel == len(self._wheel), (on_wheel, len(self._wheel))


# The garbage collector sees what the entries hold through the core: the
# key and value of each held entry, and of each entry in soon no longer
# held.  Clearing the core (a cycle through a key or value) drops every
# entry at once and leaves it empty, without a wheel.
cdef traverseproc _core_traverse_fields = (<PyTypeObject*>WheelTTLCore).tp_traverse


cdef int _visit_entry(PyObject* p, visitproc visit, void* arg) noexcept:
    cdef int r
    if (<_Entry>p).key is not None:
        r = visit(<PyObject*>(<_Entry>p).key, arg)
        if r:
            return r
    if (<_Entry>p).value is not None:
        r = visit(<PyObject*>(<_Entry>p).value, arg)
        if r:
            return r
    return 0


cdef int _core_traverse(PyObject* o, visitproc visit, void* arg) noexcept:
    cdef PyObject* p = (<WheelTTLCore>o)._first
    cdef Py_ssize_t i
    cdef int r
    while p != NULL:
        r = _visit_entry(p, visit, arg)
        if r:
            return r
        p = (<_Entry>p).next
    soon = (<WheelTTLCore>o)._soon
    if soon is not None:
        for i in range(PyList_GET_SIZE(soon)):
            p = PyList_GET_ITEM(soon, i)
            if not (<_Entry>p).held:
                r = _visit_entry(p, visit, arg)
                if r:
                    return r
    return (<int (*)(PyObject*, visitproc, void*) noexcept>_core_traverse_fields)(o, visit, arg)


cdef int _core_clear(PyObject* o) noexcept:
    (<WheelTTLCore>o)._clear_all()
    return 0


(<PyTypeObject*>WheelTTLCore).tp_traverse = <traverseproc>_core_traverse
(<PyTypeObject*>WheelTTLCore).tp_clear = <inquiry>_core_clear
