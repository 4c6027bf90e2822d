# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""The table and the hot paths of WheelTTLDict (twin of ``_wheelttlcore_py``).

Every entry (key, value, hash, deadline and its links) sits in one C slab,
found by an open-addressing index, kept from least to most recently used
by a linked list (the pure twin's OrderedDict) and on a hashed timing
wheel of slot lists at its deadline (src/include/dq_wheelttl.h): 48 bytes
an entry and a few of index and wheel, with no object of its own.  Reads
compare the deadline with the clock (time.monotonic read in C), so an
expired value is never returned, whether a purge has taken the entry yet
or not.  ``dq_core._wheelttldict.WheelTTLDict`` makes this a
MutableMapping.

User code (a key's ``__hash__``/``__eq__``, the clock, ``on_expire``, a
finaliser) may try to change the mapping while one of its changes is under
way; that re-entry is refused with ``RuntimeError``; reads are allowed.  A
look-up that ran a key's ``__eq__`` starts again if the table changed
meanwhile, as a dict look-up does, and every object read across a call
that can run Python code is held by a reference of our own, the table
included (``clear`` replaces it).  What a change removes is released, and
shown to ``on_expire``, once the change is complete.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from cpython.object cimport (
    PyObject, PyObject_Hash, PyTypeObject,
)
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.math cimport INFINITY, floor
from libc.stdint cimport int32_t, int64_t, uint64_t

from _clock cimport clock_reading, dq_monotonic
from _number cimport _real

import time
import types

from dq_core._ringstate import reentered, ttl_of
from dq_core._ttldictstate import on_expire_of, tell_each

__all__ = ["WheelTTLCore", "own_getitem"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes: none of its own.
SHORTCUTS = types.MappingProxyType({})

cdef extern from "Python.h":
    bint PyObject_IS_GC(object o)
    void PyObject_GC_UnTrack(object o)
    ctypedef struct PyMethodDef
    object PyDescr_NewMethod(PyTypeObject* cls, PyMethodDef* meth)
    void PyType_Modified(PyTypeObject* cls)

cdef extern from *:
    """
    /* WheelTTLCore's mp_subscript also as a METH_O method, as dict's
       __getitem__ is (METH_COEXIST): ``d.__getitem__`` bound and called
       (``map(d.__getitem__, keys)``) passes its key without the argument
       tuple that the slot wrapper's call builds.  ``d[key]`` still takes
       the slot. */
    static binaryfunc dq_wt_subscript = NULL;
    static PyObject *dq_wt_getitem(PyObject *self, PyObject *key) {
        return dq_wt_subscript(self, key);
    }
    static PyMethodDef dq_wt_getitem_def = {
        "__getitem__", (PyCFunction)dq_wt_getitem, METH_O | METH_COEXIST,
        "__getitem__($self, key, /)\\n--\\n\\nReturn self[key]."};
    static void dq_wt_subscript_of(PyTypeObject *core) {
        dq_wt_subscript = core->tp_as_mapping->mp_subscript;
    }
    #define dq_wt_dict_of(cls) ((cls)->tp_dict)
    #define DQ_WT_GETITEM_DEF (&dq_wt_getitem_def)
    """
    PyMethodDef* DQ_WT_GETITEM_DEF
    void dq_wt_subscript_of(PyTypeObject* core) noexcept
    PyObject* dq_wt_dict_of(PyTypeObject* cls) noexcept

cdef extern from "dq_wheelttl.h":
    ctypedef struct dq_wt_entry:
        PyObject* key
        PyObject* value
        Py_hash_t hash
        double deadline
        int32_t lprev, lnext, wprev, wnext
    ctypedef struct dq_wt_table:
        dq_wt_entry* ents
        int32_t* ix
        int32_t* wheel
        Py_ssize_t cap, made, used, isize, ifill, nslots
        int32_t free_, lfirst, llast
        uint64_t version
        double tick
        int64_t cursor
    ctypedef struct dq_wt_gone:
        PyObject* key
        PyObject* value
        double deadline
    ctypedef struct dq_wt_out:
        dq_wt_gone* items
        Py_ssize_t n, cap
    int32_t DQ_WT_EMPTY, DQ_WT_OFF
    int64_t dq_wt_tick_of(dq_wt_table* t, double deadline) noexcept
    void dq_wt_use(dq_wt_table* t, int32_t pos) noexcept
    void dq_wt_lunlink(dq_wt_table* t, int32_t pos) noexcept
    void dq_wt_llink(dq_wt_table* t, int32_t pos) noexcept
    size_t dq_wt_slot_of(dq_wt_table* t, Py_hash_t h, int32_t pos) noexcept
    int dq_wt_reserve(dq_wt_table* t) except -1
    int32_t dq_wt_append(dq_wt_table* t, PyObject* key, PyObject* value, Py_hash_t h,
                         double deadline) noexcept
    void dq_wt_redate(dq_wt_table* t, int32_t pos, double deadline) noexcept
    void dq_wt_take(dq_wt_table* t, int32_t pos, size_t islot, PyObject** key,
                    PyObject** value) noexcept
    int dq_wt_traverse(dq_wt_table* t, void* visit, void* arg) noexcept
    void dq_wt_clear(dq_wt_table* t) noexcept
    int dq_wt_out_reserve(dq_wt_out* o) except -1
    void dq_wt_out_release(dq_wt_out* o, Py_ssize_t start) noexcept
    int dq_wt_purge(dq_wt_table* t, double now, dq_wt_out* out) except -1
    int dq_wt_sweep(dq_wt_table* t, double now, dq_wt_out* out, int ordered) except -1

cdef extern from *:
    """
    #include "dq_tables.h"
    #define DQ_WT_IX(t, i) ((t)->ix[i])
    DQ_TABLE_FIND(dq_wt_find, dq_wt_table, int32_t, DQ_WT_IX, DQ_WT_EMPTY)
    DQ_TABLE_GC(dq_wt_table, dq_wt_table, dq_wt_traverse, dq_wt_clear)
    """
    int32_t dq_wt_find(dq_wt_table* t, object key, Py_hash_t h, size_t* islot) except -2
    void dq_wt_table_gc_hook(PyTypeObject* tp, Py_ssize_t offset) noexcept

cdef object MONOTONIC = time.monotonic
cdef double INF = INFINITY
cdef object _MISSING = object()  # the default __contains__ reads with: absent or expired


@cython.final
@cython.auto_pickle(False)
cdef class _Table:
    # The slab, index and wheel of dq_wheelttl.h.  A mapping replaced whole
    # (clear, _setup) gets a new _Table, and a look-up holding the old one
    # goes on in it, unchanged, as one holding a replaced dict does.
    cdef dq_wt_table t
    # An object field, so that Cython gives the type the garbage collector's
    # support; its traverse and clear are extended to the entries below.
    cdef object _gc

    def __dealloc__(self):
        dq_wt_clear(&self.t)


cdef Py_ssize_t _table_offset():
    # where a _Table holds its table
    cdef _Table tab = _new_table(0.01, 0.0)
    return <char*>&tab.t - <char*><PyObject*>tab


dq_wt_table_gc_hook(<PyTypeObject*>_Table, _table_offset())  # its traverse and clear reach the entries


cdef _Table _new_table(double tick, double start):
    # an empty table whose wheel starts at ``start``
    cdef _Table tab = _Table()
    cdef double q = floor(start / tick)
    tab.t.tick = tick
    tab.t.free_ = tab.t.lfirst = tab.t.llast = -1
    tab.t.cursor = <int64_t>q if -4e18 < q < 4e18 else 0
    return tab


cdef inline int32_t _find(_Table tab, object key, Py_hash_t h, size_t* islot) except -2:
    # The slab slot of key's entry in tab (its index slot in *islot), or -1.
    # A stored key of the same hash is compared with key by its __eq__: if
    # that changed tab, the search starts again (dq_tables.h).
    return dq_wt_find(&tab.t, key, h, islot)


cdef object _absent(object key, PyObject* default):
    # what a read of an absent or expired key returns: default, or KeyError if NULL
    if default == NULL:
        raise KeyError(key)
    return <object>default


cdef list _pairs(dq_wt_out* out):
    # the (key, value) pairs of out, as a list: their references move to it
    cdef list removed = [None] * out.n
    cdef Py_ssize_t k
    cdef object pair
    for k in range(out.n):
        pair = PyTuple_New(2)
        PyTuple_SET_ITEM(pair, 0, <object>out.items[k].key)  # steals the reference
        PyTuple_SET_ITEM(pair, 1, <object>out.items[k].value)
        if not PyObject_IS_GC(<object>out.items[k].key) and not PyObject_IS_GC(<object>out.items[k].value):
            PyObject_GC_UnTrack(pair)  # as the collector would on its first pass: no cycle through it
        out.items[k].key = out.items[k].value = NULL
        removed[k] = pair
    return removed


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

    cdef _Table _tab
    cdef readonly double _ttl
    cdef readonly object _maxsize
    cdef Py_ssize_t _max            # maxsize, or -1 for none
    cdef readonly object _clock
    cdef object _on_expire
    cdef readonly double _tick
    cdef double _purge_at           # a set purges once the clock reaches this
    cdef bint _busy

    def __cinit__(self):
        self._tab = _new_table(0.01, 0.0)
        self._max = -1
        self._clock = MONOTONIC
        self._tick = 0.01
        self._purge_at = -INF

    def _setup(self, life, size, clock, on_expire, wheel):
        """Start empty with the checked ``life`` (inf: none), ``size``, ``clock``, ``on_expire`` and ``wheel``."""
        cdef double t = life
        cdef double tk = wheel.tick
        tab = _new_table(tk, wheel.wheel_time)  # only the wheel's tick and time: its slots are ours
        self._enter()
        old = (self._tab, self._clock, self._on_expire)  # released after the change
        self._ttl = t
        self._maxsize = size
        self._max = -1 if size is None else size
        self._clock = clock
        self._on_expire = on_expire
        self._tick = tk
        self._tab = tab
        self._purge_at = -INF
        self._busy = False

    @property
    def on_expire(self):
        """Called as ``on_expire(key, value)`` for every expired or evicted entry, or None."""
        return self._on_expire

    @on_expire.setter
    def on_expire(self, value):
        self._on_expire = on_expire_of(value)

    cdef inline int _enter(self) except -1:
        if self._busy:
            raise reentered("WheelTTLDict")
        self._busy = True
        return 0

    def _held(self):
        """How many entries are held, expired ones not yet purged included."""
        return self._tab.t.used

    def _wheel_time(self):
        """The time the wheel's purges have reached (a pickled state keeps it)."""
        return self._tab.t.cursor * self._tick

    # -- reads --------------------------------------------------------------------

    cdef inline double _now(self) except? -1.0:
        clock = self._clock  # held: the call may replace it
        return clock_reading(clock, MONOTONIC)

    cdef inline object _read(self, object key, bint use, PyObject* default):
        # key's value if it is held and live, else default (borrowed; NULL:
        # raise KeyError); ``use``: a hit makes it the most recently used (if
        # the clock left it where it was)
        cdef Py_hash_t h = PyObject_Hash(key)
        cdef dq_wt_table* t = &self._tab.t  # read after the hash's user code
        cdef dq_wt_entry* e
        cdef int32_t pos
        cdef double now
        if t.isize:  # the key itself in its first index slot, on time.monotonic: no user code
            pos = t.ix[<size_t>h & <size_t>(t.isize - 1)]
            if pos >= 0:
                e = &t.ents[pos]
                # dq_monotonic returns 0 or raises: its `== 0` only puts the
                # clock's reading before the comparison that uses it
                if e.key == <PyObject*>key and (
                    e.deadline == INF
                    or (self._clock is MONOTONIC and dq_monotonic(&now) == 0 and e.deadline > now)
                ):
                    if use and self._max >= 0:
                        dq_wt_use(t, pos)
                    return <object>e.value
        return self._read_held(key, h, use, default)

    cdef object _read_held(self, object key, Py_hash_t h, bint use, PyObject* default):
        # _read where user code may run: the table and the value held, the table re-checked
        cdef _Table tab = self._tab
        cdef dq_wt_table* t = &tab.t
        cdef size_t islot
        cdef int32_t pos = _find(tab, key, h, &islot)
        cdef double d
        cdef uint64_t version
        if pos < 0:
            return _absent(key, default)
        value = <object>t.ents[pos].value
        d = t.ents[pos].deadline
        if d != INF:
            version = t.version
            if d <= self._now():
                return _absent(key, default)
            if t.version != version:
                return value
        if use and self._max >= 0:
            dq_wt_use(t, pos)
        return value

    def __getitem__(self, key):
        return self._read(key, True, NULL)

    def get(self, key, default=None):
        """The value of ``key`` if it is live, else ``default`` (a hit refreshes it).  O(1)."""
        return self._read(key, True, <PyObject*>default)

    def _peek(self, key, default):
        """The value of ``key`` if it is live, else ``default``; recency unchanged."""
        return self._read(key, False, <PyObject*>default)

    def __contains__(self, key):
        return self._read(key, False, <PyObject*>_MISSING) is not _MISSING

    def deadline(self, key):
        """When ``key`` expires on the clock (``math.inf``: never); KeyError if absent.  O(1)."""
        cdef _Table tab = self._tab
        cdef size_t islot
        cdef int32_t pos = _find(tab, key, PyObject_Hash(key), &islot)
        cdef double d
        if pos < 0:
            raise KeyError(key)
        d = tab.t.ents[pos].deadline
        if d != INF and d <= self._now():
            raise KeyError(key)
        return d

    def __len__(self):
        self.expire()
        return self._tab.t.used

    def __iter__(self):
        self.expire()
        # the keys live now, copied: a purge while they are walked changes nothing here
        return iter(self._walk(True))

    def _entries(self):
        """The ``(key, value, deadline)`` of every entry held, least recently used first."""
        return self._walk(False)

    cdef list _walk(self, bint keys):
        # the keys (else the entries) held, least recently used first
        cdef _Table tab = self._tab
        cdef dq_wt_entry* e
        cdef Py_ssize_t n = tab.t.used, k = 0
        cdef int32_t pos = tab.t.lfirst
        cdef list out = [None] * n
        while pos >= 0 and k < n:  # no user code runs along the links
            e = &tab.t.ents[pos]
            out[k] = <object>e.key if keys else (<object>e.key, <object>e.value, e.deadline)
            k += 1
            pos = e.lnext
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
        cdef _Table tab
        cdef dq_wt_table* t
        cdef dq_wt_entry* e
        cdef dq_wt_out out
        cdef PyObject* old_key = NULL
        cdef PyObject* old_value = NULL
        cdef Py_hash_t h
        cdef size_t islot
        cdef int32_t pos
        cdef list told = None
        out.items = NULL
        out.n = out.cap = 0
        self._enter()
        try:
            tab = self._tab
            t = &tab.t
            h = PyObject_Hash(key)
            pos = _find(tab, key, h, &islot)
            if pos >= 0:  # set again: in place, the new key and value, a new deadline
                e = &t.ents[pos]
                if e.deadline <= now:  # expired, never purged: on_expire sees it now
                    dq_wt_out_reserve(&out)
                    Py_INCREF(key)
                    out.items[0].key = <PyObject*>key
                    out.items[0].value = e.value
                    out.items[0].deadline = e.deadline
                    out.n = 1
                else:
                    old_value = e.value
                old_key = e.key
                Py_INCREF(key)
                Py_INCREF(value)
                e.key = <PyObject*>key
                e.value = <PyObject*>value
                dq_wt_redate(t, pos, deadline)
                if self._max >= 0:
                    dq_wt_use(t, pos)
            else:
                if self._max >= 0 and t.used >= self._max:
                    dq_wt_purge(t, now, &out)  # expired entries go before a live one is evicted
                dq_wt_reserve(t)
                Py_INCREF(key)
                Py_INCREF(value)
                dq_wt_append(t, <PyObject*>key, <PyObject*>value, h, deadline)
                while self._max >= 0 and t.used > self._max:
                    dq_wt_out_reserve(&out)
                    pos = t.lfirst
                    out.items[out.n].deadline = t.ents[pos].deadline
                    dq_wt_take(t, pos, dq_wt_slot_of(t, t.ents[pos].hash, pos),
                               &out.items[out.n].key, &out.items[out.n].value)
                    out.n += 1
            if now >= self._purge_at:
                self._purge_at = now + self._tick
                dq_wt_purge(t, now, &out)
        finally:
            self._busy = False
            # released after the change: finalisers find it complete
            Py_XDECREF(old_value)
            Py_XDECREF(old_key)
            if out.n:
                try:
                    told = _pairs(&out)
                finally:
                    dq_wt_out_release(&out, 0)
        if told:
            self._notify(told)
        return 0

    def _drop(self, key):
        """Remove the live entry of ``key`` and return its value; KeyError if absent or expired."""
        cdef _Table tab = self._tab
        cdef dq_wt_table* t = &tab.t
        cdef size_t islot
        cdef int32_t pos = _find(tab, key, PyObject_Hash(key), &islot)
        cdef double d
        cdef uint64_t version
        cdef PyObject* ok = NULL
        cdef PyObject* ov = NULL
        if pos < 0:
            raise KeyError(key)
        value = <object>t.ents[pos].value  # held: the clock may change the mapping
        d = t.ents[pos].deadline
        version = t.version
        if d != INF and d <= self._now():
            raise KeyError(key)  # left for the purge, which tells on_expire
        self._enter()
        try:
            # removed unless the clock changed the mapping (then it was removed or set again)
            if t.version == version and tab is self._tab:
                dq_wt_take(t, pos, islot, &ok, &ov)
        finally:
            self._busy = False
        Py_XDECREF(ov)  # the table's references, released after the change
        Py_XDECREF(ok)
        return value

    def __delitem__(self, key):
        self._drop(key)

    def popitem(self):
        """Remove and return the least recently used live ``(key, value)``; KeyError if none."""
        cdef dq_wt_table* t
        cdef PyObject* ok
        cdef PyObject* ov
        cdef int32_t pos
        self.expire()
        self._enter()
        try:
            t = &self._tab.t
            pos = t.lfirst
            if pos < 0:
                raise KeyError("popitem(): mapping is empty")
            dq_wt_take(t, pos, dq_wt_slot_of(t, t.ents[pos].hash, pos), &ok, &ov)
            key, value = <object>ok, <object>ov
            Py_DECREF(key)
            Py_DECREF(value)
        finally:
            self._busy = False
        return key, value

    def clear(self):
        """Remove every entry (``on_expire`` is not called).  O(n)."""
        tab = _new_table(self._tick, self._now())
        self._enter()
        old, self._tab = self._tab, tab
        self._busy = False
        del old  # the old entries go here, after the change is complete

    def _load(self, entries):
        """Hold the ``(key, value, deadline)`` triples (from ``_entries``) of an empty mapping."""
        cdef double deadline
        cdef Py_hash_t h
        cdef size_t islot
        cdef int32_t pos
        cdef _Table tab
        garbage = []  # what a repeated key replaces, released after the change
        self._enter()
        try:
            tab = self._tab
            for key, value, d in entries:
                deadline = d
                h = PyObject_Hash(key)
                pos = _find(tab, key, h, &islot)
                if pos >= 0:
                    garbage.append((<object>tab.t.ents[pos].key, <object>tab.t.ents[pos].value))
                    Py_DECREF(<object>tab.t.ents[pos].key)  # the list holds them now
                    Py_DECREF(<object>tab.t.ents[pos].value)
                    Py_INCREF(key)
                    Py_INCREF(value)
                    tab.t.ents[pos].key = <PyObject*>key
                    tab.t.ents[pos].value = <PyObject*>value
                    dq_wt_redate(&tab.t, pos, deadline)
                else:
                    dq_wt_reserve(&tab.t)
                    Py_INCREF(key)
                    Py_INCREF(value)
                    dq_wt_append(&tab.t, <PyObject*>key, <PyObject*>value, h, deadline)
        finally:
            self._busy = False

    # -- expiry -------------------------------------------------------------------

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
        cdef Py_ssize_t count
        removed = self._expire_at(t, True, &count)
        if removed:
            self._notify(removed)
        return removed

    def purge(self, now=None):
        """Remove the expired entries still held and return how many; build nothing.

        ``now`` defaults to ``clock()``.  O(k + s) for k expired entries and
        s occupied wheel slots passed; O(1) when nothing is due.  As
        ``expire()``, without the list: each pair still goes to
        ``on_expire`` (when given), in the same order, before this returns.
        """
        cdef double t = self._now() if now is None else _real(now, "now")
        cdef Py_ssize_t count
        removed = self._expire_at(t, self._on_expire is not None, &count)
        if removed:
            self._notify(removed)
        return count

    cdef list _expire_at(self, double t, bint pairs, Py_ssize_t* count):
        # Removes the entries due at t and sets *count to how many; returns
        # their pairs, earliest first, when ``pairs``, else None: then no
        # tuple and no list is made, the references are only dropped.
        cdef dq_wt_out out
        cdef list removed = None
        out.items = NULL
        out.n = out.cap = 0
        self._enter()
        try:
            self._purge_at = t + self._tick
            dq_wt_sweep(&self._tab.t, t, &out, pairs)
        finally:
            self._busy = False
            count[0] = out.n
            try:
                if pairs:
                    removed = _pairs(&out)
            finally:
                dq_wt_out_release(&out, 0)  # after the change: finalisers find it complete
        return removed

    def next_expiry(self):
        """A time before which no entry expires (a lower bound), or None.  O(levels)."""
        cdef dq_wt_table* t = &self._tab.t
        cdef int64_t c
        cdef int32_t pos
        cdef double low
        if t.nslots == 0 or t.used == 0:
            return None
        for c in range(t.cursor, t.cursor + t.nslots):  # the first slot that holds an entry
            pos = t.wheel[c & (t.nslots - 1)]
            if pos >= 0:
                low = c * self._tick
                while pos >= 0:  # one placed at the cursor may be due earlier
                    if t.ents[pos].deadline < low:
                        low = t.ents[pos].deadline
                    pos = t.ents[pos].wnext
                return low
        return None

    def _check(self):
        """Assert the invariants: each entry with a finite deadline is on the wheel or in soon."""
        cdef dq_wt_table* t = &self._tab.t
        cdef dq_wt_entry* e
        cdef Py_ssize_t k, n = 0, free = 0, on_wheel = 0
        cdef int32_t pos, prev = -1
        pos = t.lfirst
        while pos >= 0:  # the recency list: every entry held, once
            e = &t.ents[pos]
            assert e.key != NULL and e.lprev == prev
            assert t.ix[dq_wt_slot_of(t, e.hash, pos)] == pos
            if e.deadline == INF:
                assert e.wprev == DQ_WT_OFF
            else:
                assert dq_wt_tick_of(t, e.deadline) >= t.cursor
            n += 1
            assert n <= t.used
            prev = pos
            pos = e.lnext
        assert prev == t.llast and n == t.used, (n, t.used)
        pos = t.free_
        while pos >= 0:
            assert t.ents[pos].key == NULL
            free += 1
            pos = t.ents[pos].wnext
        assert free + t.used == t.made <= t.cap
        n = free = 0
        for k in range(t.isize):  # the index: every entry once, EMPTY or DUMMY else
            n += t.ix[k] >= 0
            free += t.ix[k] != DQ_WT_EMPTY
        assert n == t.used and free == t.ifill and (3 * t.ifill <= 2 * t.isize or t.isize == 0)
        for k in range(t.nslots):  # each finite entry in the slot of its tick, linked both ways
            pos = t.wheel[k]
            prev = <int32_t>(-1 - k)
            while pos >= 0:
                e = &t.ents[pos]
                assert e.key != NULL and e.wprev == prev
                assert (dq_wt_tick_of(t, e.deadline) & (t.nslots - 1)) == k
                on_wheel += 1
                prev = pos
                pos = e.wnext
        pos = t.lfirst
        while pos >= 0:
            on_wheel -= t.ents[pos].deadline != INF
            pos = t.ents[pos].lnext
        assert on_wheel == 0



dq_wt_subscript_of(<PyTypeObject*>WheelTTLCore)


def own_getitem(cls):
    """Give ``cls`` (a class extending WheelTTLCore) a ``__getitem__`` method of its own; return it.

    The inherited one is the slot's wrapper, whose bound call
    (``f = d.__getitem__; f(key)``) builds an argument tuple each time; its
    own is a one-argument C method on the same C function, called without
    one.  The class's ``mp_subscript`` slot (``d[key]``) stays the C
    function: the method goes into the class's dict, not through
    ``setattr``, which would make the slot look the method up.  A class
    that defines its own ``__getitem__`` is left alone; the pure twin's is a
    Python function, which needs nothing.
    """
    if not isinstance(cls, type) or not issubclass(cls, WheelTTLCore):
        raise TypeError(f"cls must be a class extending WheelTTLCore, not {cls!r}")
    if getattr(cls, "__getitem__") is not WheelTTLCore.__dict__["__getitem__"]:
        return cls  # its own __getitem__, or one given already
    (<object>dq_wt_dict_of(<PyTypeObject*>cls))["__getitem__"] = PyDescr_NewMethod(<PyTypeObject*>cls, DQ_WT_GETITEM_DEF)
    PyType_Modified(<PyTypeObject*>cls)
    return cls
