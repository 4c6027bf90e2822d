# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""The table and the hot paths of TTLDict (twin of ``_ttldictcore_py``).

Every entry (key, value, hash, created_at) sits in one C array, a FIFO
ring in the order the keys were last set, which with one TTL for all is
expiry order: what is due is at the head, and one comparison tells whether
anything is.  An open-addressing index over the ring finds a key, as
CPython's compact dict keeps its entries apart from its index
(src/include/dq_ttltable.h).  32 bytes an entry in the ring and 8 in the
index, where a dict of (key, value, created_at) tuples on a TTLRing needs
about 150.  ``dq_core._ttldict.TTLDict`` makes this a MutableMapping.

User code (a key's ``__eq__`` or ``__hash__``, the clock, ``on_expire``, a
finaliser run by the garbage collector) may try to change the mapping
while one of its changes is under way; that re-entry is refused with
``RuntimeError``, so no change ever sees a half-made one.  A lookup that ran
a key's ``__eq__`` starts again if the table changed meanwhile, as a dict
lookup does; every object read across a call that can run Python code is
held by a reference of our own, the table included (``clear`` replaces it).
What a change removes is released, and shown to ``on_expire``, once the
change is complete.  With ``lru=True`` the table also links its entries
from the least to the most recently used; a read refreshes that order in
C, with no user code between finding the entry and moving it, and a read
made by user code that a change of this thread runs leaves it as it is.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from cpython.object cimport (
    PyObject, PyObject_Hash, PyTypeObject,
)
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.pythread cimport PyThread_get_thread_ident
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport uint64_t

from _clock cimport clock_reading
from _number cimport _real

import time
import types

from dq_core import _ttldictstate
from dq_core._ringstate import clock_of, reentered, ttl_of
from dq_core._signature import NO_DEFAULT, signature
from dq_core._ttldictstate import (
    attributes_of, check_dict_state, lru_of, maxsize_of, on_expire_of, set_attributes,
)

__all__ = ["TTLDictCore"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes: none.
SHORTCUTS = types.MappingProxyType({})

cdef extern from "dq_ttltable.h":
    ctypedef struct dq_ttl_entry:
        PyObject* key
        PyObject* value
        Py_hash_t hash
        double t
    ctypedef struct dq_ttl_table:
        dq_ttl_entry* ents
        Py_ssize_t cap, head, span, used, isize, ifill
        bint wide
        uint64_t version
        bint lru
        Py_ssize_t* prev
        Py_ssize_t* next
        Py_ssize_t lru_first, lru_last
    ctypedef struct dq_ttl_out:
        PyObject** items
        Py_ssize_t n
    Py_ssize_t DQ_TT_EMPTY, DQ_TT_DUMMY
    Py_ssize_t dq_tt_ix(dq_ttl_table* t, size_t i) noexcept
    size_t dq_tt_slot_of(dq_ttl_table* t, Py_hash_t h, Py_ssize_t pos) noexcept
    void dq_tt_lru_init(dq_ttl_table* t) noexcept
    void dq_tt_lru_use(dq_ttl_table* t, Py_ssize_t pos) noexcept
    void dq_tt_lru_unlink(dq_ttl_table* t, Py_ssize_t pos) noexcept
    void dq_tt_lru_link(dq_ttl_table* t, Py_ssize_t pos) noexcept
    void dq_tt_pop_lru(dq_ttl_table* t, PyObject** key, PyObject** value) noexcept
    int dq_tt_reserve(dq_ttl_table* t) except -1
    int dq_tt_resize(dq_ttl_table* t, Py_ssize_t cap) except -1
    void dq_tt_append(dq_ttl_table* t, PyObject* key, PyObject* value, Py_hash_t h, double t) noexcept
    void dq_tt_remove(dq_ttl_table* t, Py_ssize_t pos, size_t islot, PyObject** key,
                      PyObject** value) noexcept
    void dq_tt_pop_head(dq_ttl_table* t, PyObject** key, PyObject** value) noexcept
    void dq_tt_shrink(dq_ttl_table* t) noexcept
    int dq_tt_traverse(dq_ttl_table* t, void* visit, void* arg) noexcept
    void dq_tt_clear(dq_ttl_table* t) noexcept
    void dq_out_init(dq_ttl_out* o) noexcept
    int dq_out_reserve(dq_ttl_out* o) except -1
    void dq_out_push(dq_ttl_out* o, PyObject* key, PyObject* value) noexcept
    void dq_out_release(dq_ttl_out* o, Py_ssize_t start) noexcept


# The pure twin's constants, as C values
cdef int STATE_VERSION = _ttldictstate.STATE_VERSION
cdef int LRU_STATE_VERSION = _ttldictstate.LRU_STATE_VERSION
cdef Py_ssize_t SWEEP = _ttldictstate.SWEEP
cdef Py_ssize_t BATCH = _ttldictstate.BATCH
cdef extern from *:
    """
    #include "dq_tables.h"
    DQ_TABLE_FIND(dq_tt_find, dq_ttl_table, Py_ssize_t, dq_tt_ix, DQ_TT_EMPTY)
    DQ_TABLE_GC(dq_tt_table, dq_ttl_table, dq_tt_traverse, dq_tt_clear)
    """
    Py_ssize_t dq_tt_find(dq_ttl_table* t, object key, Py_hash_t h, size_t* islot) except -2
    void dq_tt_table_gc_hook(PyTypeObject* tp, Py_ssize_t offset) noexcept

cdef object MONOTONIC = time.monotonic
cdef object _ABSENT = object()  # what _live returns for a key absent or expired


@cython.final
@cython.auto_pickle(False)
cdef class _Table:
    # The ring and index of dq_ttltable.h.  A mapping replaced whole (clear,
    # __init__, __setstate__) gets a new _Table, and a lookup holding the
    # old one goes on in it, unchanged, as one holding a replaced dict does.
    cdef dq_ttl_table t
    # An object field, so that Cython gives the type the garbage collector's
    # support; its traverse and clear are extended to the entries below.
    cdef object _gc

    def __dealloc__(self):
        dq_tt_clear(&self.t)


cdef Py_ssize_t _table_offset():
    # where a _Table holds its table
    cdef _Table tab = _new_table(False)
    return <char*>&tab.t - <char*><PyObject*>tab


dq_tt_table_gc_hook(<PyTypeObject*>_Table, _table_offset())  # its traverse and clear reach the entries


cdef _Table _new_table(bint lru):
    # an empty table, keeping the recency order if lru
    cdef _Table tab = _Table()
    if lru:
        dq_tt_lru_init(&tab.t)
    return tab


cdef inline Py_ssize_t _find(_Table tab, object key, Py_hash_t h, size_t* islot) except -2:
    # The ring slot of key's entry in tab (and its index slot in *islot), or
    # -1.  A stored key of the same hash is compared with key by its
    # __eq__: if that changed tab, the search starts again (dq_tables.h).
    return dq_tt_find(&tab.t, key, h, islot)


@cython.auto_pickle(False)
cdef class TTLDictCore:
    """The table and the hot paths of TTLDict.

    Every entry sits in a FIFO ring in the order its key was last set (with
    one TTL, expiry order: what is due is at the head), and an index over
    the ring finds a key.  Setting a key again moves it to the tail.  With
    ``lru=True`` a recency order (a read or a set makes a key the most
    recently used) decides what ``maxsize`` evicts, ``popitem()`` takes and
    iteration follows; expiry keeps to the ring.  What a change removes is
    released, and shown to ``on_expire``, once the change is complete.

    >>> d = TTLDictCore(10, clock=lambda: 0.0)
    >>> d["a"] = 1
    >>> d["a"], "b" in d
    (1, False)
    >>> d.expire(10.0)
    [('a', 1)]
    """

    cdef _Table _tab
    cdef readonly double _ttl
    cdef object _clk
    cdef object _maxsize, _on_expire
    cdef Py_ssize_t _max         # maxsize, or -1 for none
    cdef bint _lru               # maxsize evicts the least recently used
    cdef bint _busy              # a change is under way
    cdef unsigned long _owner    # ... made by this thread
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)
    __signature__ = signature(("ttl", NO_DEFAULT), ("maxsize", None), ("clock", time.monotonic),
                               ("on_expire", None), ("*", None), ("lru", False))

    def __cinit__(self):
        # a valid empty mapping even before __init__ or __setstate__
        self._tab = _Table()
        self._clk = MONOTONIC
        self._max = -1

    @cython.critical_section
    def __init__(self, ttl, maxsize=None, clock=time.monotonic, on_expire=None, *, lru=False):
        cdef double t = ttl_of(ttl)
        maxsize = maxsize_of(maxsize)
        clock = clock_of(clock)
        on_expire = on_expire_of(on_expire)
        lru = lru_of(lru)
        tab = _new_table(lru)
        self._begin()
        # what a re-initialised mapping held goes after the change is complete
        old = (self._tab, self._clk, self._on_expire)
        self._on_expire = on_expire
        self._maxsize = maxsize
        self._max = -1 if maxsize is None else maxsize
        self._clk = clock
        self._ttl = t
        self._lru = lru
        self._tab = tab
        self._busy = False

    def _get_ttl(self):
        with cython.critical_section(self):
            return self._ttl

    def _set_ttl(self, value):
        cdef double t = ttl_of(value)  # user code (__float__) runs before anything changes
        with cython.critical_section(self):
            self._ttl = t

    ttl = property(_get_ttl, _set_ttl,
                   doc="Seconds every entry lives; a new value applies to all entries at once.")

    @property
    def maxsize(self):
        """Most entries held (an int >= 1), or None for no limit; lowering it evicts at once."""
        with cython.critical_section(self):
            return self._maxsize

    @maxsize.setter
    def maxsize(self, value):
        cdef double now = 0.0
        cdef dq_ttl_out out
        value = maxsize_of(value)
        dq_out_init(&out)
        try:
            with cython.critical_section(self):
                # lowered: the entries over it go at once, expired ones first, as at a set
                if value is not None and self._tab.t.used > value:
                    now = self._now()
                self._begin()
                try:
                    self._maxsize = value
                    self._max = -1 if value is None else value
                    self._evict(now, &out)
                finally:
                    self._busy = False
            self._report(&out, None, True)  # on_expire runs outside the critical section
        finally:
            dq_out_release(&out, 0)

    @property
    def lru(self):
        """Whether ``maxsize`` evicts the least recently used key (else the oldest set); fixed."""
        with cython.critical_section(self):
            return self._lru

    @property
    def on_expire(self):
        """Called as ``on_expire(key, value)`` for every expired or evicted entry, or None."""
        with cython.critical_section(self):
            return self._on_expire

    @on_expire.setter
    def on_expire(self, value):
        value = on_expire_of(value)
        with cython.critical_section(self):
            self._on_expire = value

    @property
    def clock(self):
        """The callable read for every "now"."""
        with cython.critical_section(self):
            return self._clk

    @clock.setter
    def clock(self, value):
        value = clock_of(value)
        with cython.critical_section(self):
            self._clk = value

    cdef int _begin(self) except -1:
        # A change begins.  One from user code that the change under way runs
        # (a key's __hash__/__eq__, a finaliser: this thread) is refused.  One
        # from another thread, possible only while the change under way is
        # suspended in user code that released the GIL (or the critical
        # section), waits until it is complete, as the pure core's lock makes
        # it wait: each change is atomic in both.  Only that misuse polls.
        cdef unsigned long me = PyThread_get_thread_ident()
        while self._busy:
            if self._owner == me:
                raise reentered("TTLDict")
            time.sleep(0.0001)
        self._busy = True
        self._owner = me
        return 0

    cdef inline double _now(self) except? -1.0:
        # one reading of the clock: time.monotonic read in C, another clock called and checked
        clock = self._clk  # held: the call may replace it
        return clock_reading(clock, MONOTONIC)

    cdef inline double _time(self, object now) except? -1.0:
        # ``now`` as a time, the clock's reading when None
        if now is None:
            return self._now()
        return _real(now, "now")

    # -- reads ------------------------------------------------------------------

    cdef inline object _live(self, object key, bint use):
        # key's value if it is held and live, else _ABSENT (the clock is read
        # first, then the hash: the table is read after their user code);
        # ``use``: a hit makes the key the most recently used
        cdef double now = self._now()
        cdef Py_hash_t h = PyObject_Hash(key)
        cdef _Table tab = self._tab
        cdef size_t islot
        cdef Py_ssize_t pos = _find(tab, key, h, &islot)
        if pos < 0 or tab.t.ents[pos].t + self._ttl <= now:
            return _ABSENT
        if use and tab.t.lru:
            # no user code ran since _find: pos is the entry's slot still.  A
            # read made by user code that a change of this thread runs (a
            # key's __eq__, a finaliser) leaves the order as it is: that
            # change may be walking it.
            if not self._busy or self._owner != PyThread_get_thread_ident():
                dq_tt_lru_use(&tab.t, pos)
        return <object>tab.t.ents[pos].value

    @cython.critical_section
    def __getitem__(self, key):
        value = self._live(key, True)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    @cython.critical_section
    def get(self, key, default=None):
        """Return the value of ``key`` if it is held and live, else ``default``.  O(1)."""
        value = self._live(key, True)
        return default if value is _ABSENT else value

    @cython.critical_section
    def _peek(self, key, default=None):
        """As ``get``, leaving the recency order as it is (for the views)."""
        value = self._live(key, False)
        return default if value is _ABSENT else value

    @cython.critical_section
    def __contains__(self, key):
        return self._live(key, False) is not _ABSENT

    def __len__(self):
        self._purge(self._now())
        with cython.critical_section(self):
            return self._tab.t.used

    def __iter__(self):
        self._purge(self._now())
        # The keys live now, copied: a purge while they are walked (time
        # passed, and len() or another read purged) changes nothing here.
        return iter(self._keys())

    @cython.critical_section
    def _keys(self):
        """The keys held, oldest first, or least recently used first with ``lru`` (expired ones included)."""
        cdef dq_ttl_table* t
        cdef dq_ttl_entry* e
        cdef Py_ssize_t k, n
        cdef uint64_t version
        cdef list out
        cdef _Table tab
        while True:
            tab = self._tab
            t = &tab.t
            version, n = t.version, t.used
            out = [None] * n  # may run a finaliser that changes the table: then again
            if t.version == version and self._tab is tab:
                break
        n = 0
        if t.lru:  # no user code runs along the links
            k = t.lru_first
            while k >= 0:
                out[n] = <object>t.ents[k].key
                n += 1
                k = t.next[k]
            return out
        for k in range(t.span):
            e = &t.ents[(t.head + k) & (t.cap - 1)]
            if e.key != NULL:
                out[n] = <object>e.key
                n += 1
        return out

    @cython.critical_section
    def _held(self):
        """How many entries are held (expired ones not yet purged included)."""
        return self._tab.t.used

    @cython.critical_section
    def next_expiry(self):
        """When the oldest entry held expires, or None if none is held.  O(1).

        ``inf`` for an entry that never expires.
        """
        cdef dq_ttl_table* t = &self._tab.t
        cdef double e
        if not t.used:
            return None
        e = t.ents[t.head].t + self._ttl
        return e if e == e else float("inf")

    # -- changes ----------------------------------------------------------------

    def __setitem__(self, key, value):
        cdef double now
        cdef Py_hash_t h
        cdef Py_ssize_t pos
        cdef size_t islot
        cdef PyObject* ok
        cdef PyObject* ov
        cdef _Table tab
        cdef dq_ttl_table* t
        cdef dq_ttl_out out
        cdef bint expired
        replaced = None
        dq_out_init(&out)
        try:
            with cython.critical_section(self):
                now = self._now()
                self._begin()
                try:
                    h = PyObject_Hash(key)  # a raising __hash__/__eq__ leaves everything as it was
                    tab = self._tab
                    t = &tab.t
                    dq_tt_reserve(t)  # room for the entry (a resize moves none of what _find finds)
                    pos = _find(tab, key, h, &islot)
                    Py_INCREF(value)
                    if pos < 0:
                        Py_INCREF(key)
                        dq_tt_append(t, <PyObject*>key, <PyObject*>value, h, now)
                    else:
                        expired = t.ents[pos].t + self._ttl <= now
                        dq_tt_remove(t, pos, islot, &ok, &ov)
                        if expired:
                            # Expired, so absent from every read: this set is an
                            # insert, and the old entry is reported here and only here.
                            dq_out_push(&out, ok, ov)  # the first pair: room inline
                            Py_INCREF(key)
                            ok = <PyObject*>key
                        else:
                            # Live: the key keeps its stored object, as a dict's does,
                            # and moves to the tail; its old value goes after the change.
                            replaced = <object>ov
                            Py_DECREF(replaced)
                        dq_tt_append(t, ok, <PyObject*>value, h, now)
                    self._sweep(now, &out)
                    if 0 <= self._max < t.used:
                        self._evict(now, &out)
                finally:
                    self._busy = False
            replaced = None  # the old value goes now: a finaliser may run
            self._report(&out, None, True)  # on_expire runs outside the critical section
        finally:
            dq_out_release(&out, 0)

    def __delitem__(self, key):
        self._take(key)

    def _take(self, key):
        """Remove ``key`` and return its value; KeyError if absent or expired."""
        cdef double now
        cdef Py_hash_t h
        cdef Py_ssize_t pos
        cdef size_t islot
        cdef PyObject* ok
        cdef PyObject* ov
        cdef _Table tab
        with cython.critical_section(self):
            now = self._now()
            self._begin()
            try:
                h = PyObject_Hash(key)
                tab = self._tab
                pos = _find(tab, key, h, &islot)
                if pos < 0 or tab.t.ents[pos].t + self._ttl <= now:
                    raise KeyError(key)
                dq_tt_remove(&tab.t, pos, islot, &ok, &ov)
                dq_tt_shrink(&tab.t)
                # the references the table held, released after the change
                stored, value = <object>ok, <object>ov
                Py_DECREF(stored)
                Py_DECREF(value)
            finally:
                self._busy = False
        stored = None
        return value

    def popitem(self):
        """Remove and return the oldest live ``(key, value)``; KeyError when there is none.

        With ``lru``, the least recently used one.  O(1), plus O(k) for k
        expired entries purged first.
        """
        cdef double now
        cdef dq_ttl_table* t
        cdef Py_ssize_t k, pos = -1
        cdef PyObject* ok
        cdef PyObject* ov
        self._purge(self._now())
        with cython.critical_section(self):
            now = self._now()
            self._begin()
            try:
                t = &self._tab.t
                if t.lru:  # the least recently used live one
                    pos = t.lru_first
                    while pos >= 0 and t.ents[pos].t + self._ttl <= now:
                        pos = t.next[pos]
                else:
                    for k in range(t.span):  # the first live one: expired ones are left to a purge
                        pos = (t.head + k) & (t.cap - 1)
                        if t.ents[pos].key != NULL and not t.ents[pos].t + self._ttl <= now:
                            break
                        pos = -1
                if pos < 0:
                    raise KeyError("popitem(): dictionary is empty")
                dq_tt_remove(t, pos, dq_tt_slot_of(t, t.ents[pos].hash, pos), &ok, &ov)
                dq_tt_shrink(t)
                key, value = <object>ok, <object>ov
                Py_DECREF(key)
                Py_DECREF(value)
            finally:
                self._busy = False
        return key, value

    @cython.critical_section
    def clear(self):
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        tab = _new_table(self._lru)
        self._begin()
        old, self._tab = self._tab, tab
        self._busy = False
        del old  # the old entries go here, after the change is complete

    def expire(self, now=None):
        """Remove and return the expired ``(key, value)`` pairs still held, oldest first.

        ``now`` defaults to ``clock()``.  ``on_expire`` is called for each.
        O(1) when nothing is due, O(k) for k expired entries.  ``purge()``
        does the same without building the list.
        """
        cdef double t = self._time(now)
        cdef dq_ttl_out out
        cdef Py_ssize_t k
        cdef list removed
        dq_out_init(&out)
        try:
            with cython.critical_section(self):
                if not self._due(t):
                    return []  # nothing is due: one comparison, no change
                self._begin()
                try:
                    self._drop_due(t, -1, &out)
                    dq_tt_shrink(&self._tab.t)
                finally:
                    self._busy = False
            removed = [None] * out.n
            for k in range(out.n):
                removed[k] = (<object>out.items[2 * k], <object>out.items[2 * k + 1])
            self._report(&out, None, True)
        finally:
            dq_out_release(&out, 0)
        return removed

    def purge(self, now=None):
        """Remove the expired entries still held and return how many; build nothing.

        ``now`` defaults to ``clock()``.  ``on_expire`` is called for each.
        O(1) when nothing is due, O(k) for k expired entries.  As
        ``expire()``, without the list.
        """
        return self._purge(self._time(now))

    cdef Py_ssize_t _purge(self, double now) except -1:
        # Drops the entries due at now, BATCH at a time: each batch is
        # released (and reported) once its change is complete.
        cdef dq_ttl_out out
        cdef Py_ssize_t got, count = 0
        with cython.critical_section(self):
            if not self._due(now):
                return 0  # nothing is due: one comparison, no change
        error = None
        dq_out_init(&out)
        try:
            while True:
                with cython.critical_section(self):
                    self._begin()
                    try:
                        self._drop_due(now, BATCH, &out)
                        if out.n < BATCH:  # the last batch: the table may shrink (once)
                            dq_tt_shrink(&self._tab.t)
                    finally:
                        self._busy = False
                got = out.n
                count += got
                error = self._report(&out, error, False)
                dq_out_release(&out, 0)
                if got < BATCH:
                    break
        finally:
            dq_out_release(&out, 0)
        if error is not None:
            raise error
        return count

    cdef inline bint _due(self, double now) noexcept:
        # whether the head entry (the oldest) is due at now
        cdef dq_ttl_table* t = &self._tab.t
        return t.used and t.ents[t.head].t + self._ttl <= now

    # -- inside a change (the caller holds _busy) ----------------------------------

    cdef int _drop_due(self, double now, Py_ssize_t most, dq_ttl_out* out) except -1:
        # Moves up to ``most`` (< 0: every) due head entries into out.
        cdef dq_ttl_table* t = &self._tab.t
        cdef PyObject* ok
        cdef PyObject* ov
        if t.lru:  # a loop of its own: the default one stays as lean as before
            while most and t.used and t.ents[t.head].t + self._ttl <= now:
                dq_out_reserve(out)
                dq_tt_lru_unlink(t, t.head)
                dq_tt_pop_head(t, &ok, &ov)
                dq_out_push(out, ok, ov)
                most -= 1
            return 0
        while most and t.used and t.ents[t.head].t + self._ttl <= now:
            dq_out_reserve(out)
            dq_tt_pop_head(t, &ok, &ov)
            dq_out_push(out, ok, ov)
            most -= 1
        return 0

    cdef inline int _sweep(self, double now, dq_ttl_out* out) except -1:
        # A set's bounded work: up to SWEEP due entries leave (none is due: one comparison)
        if self._due(now):
            self._drop_due(now, SWEEP, out)
            dq_tt_shrink(&self._tab.t)
        return 0

    cdef int _evict(self, double now, dq_ttl_out* out) except -1:
        # Over maxsize: the expired entries go first, then the oldest (with
        # lru, the least recently used).
        cdef dq_ttl_table* t = &self._tab.t
        cdef PyObject* ok
        cdef PyObject* ov
        if self._max < 0 or t.used <= self._max:
            return 0
        self._drop_due(now, -1, out)
        while t.used > self._max:
            dq_out_reserve(out)
            if t.lru:
                dq_tt_pop_lru(t, &ok, &ov)
            else:
                dq_tt_pop_head(t, &ok, &ov)  # not lru: nothing to unlink
            dq_out_push(out, ok, ov)
        dq_tt_shrink(t)
        return 0

    # -- after a change -------------------------------------------------------------

    cdef object _report(self, dq_ttl_out* out, object error, bint raise_it):
        # on_expire(key, value) for each pair of out, oldest first.  An Exception
        # it raises is kept (the first one, or ``error`` if given) while the rest
        # are told; then raised (raise_it) or returned.
        cdef Py_ssize_t k
        with cython.critical_section(self):
            callback = self._on_expire
        if callback is not None:
            for k in range(out.n):
                try:
                    callback(<object>out.items[2 * k], <object>out.items[2 * k + 1])
                except Exception as exc:  # the rest are still told
                    if error is None:
                        error = exc
        if raise_it and error is not None:
            raise error
        return error

    # -- copying, pickling, invariants --------------------------------------

    @cython.critical_section
    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        # a change under way has no whole state yet; none starts while it is read
        # (an allocation here may run a finaliser, and that another thread)
        cdef dq_ttl_table* t
        cdef dq_ttl_entry* e
        cdef Py_ssize_t k, pos, n
        cdef Py_ssize_t* rank
        cdef Py_ssize_t* order
        cdef list recency
        self._begin()
        try:
            t = &self._tab.t
            entries = []
            for k in range(t.span):
                e = &t.ents[(t.head + k) & (t.cap - 1)]
                if e.key != NULL:
                    entries.append((<object>e.key, <object>e.value, e.t))
            if not t.lru:
                return (STATE_VERSION, self._ttl, self._maxsize, self._clk, self._on_expire,
                        attributes_of(self), entries)
            # The entries' indexes in entries, least recently used first, found
            # in C (no user code runs along the links), then made a list.
            rank = <Py_ssize_t*>PyMem_Malloc((t.cap + t.used + 1) * sizeof(Py_ssize_t))
            if rank == NULL:
                raise MemoryError()
            try:
                order = rank + t.cap
                n = 0
                for k in range(t.span):
                    pos = (t.head + k) & (t.cap - 1)
                    if t.ents[pos].key != NULL:
                        rank[pos] = n
                        n += 1
                n = 0
                pos = t.lru_first
                while pos >= 0:
                    order[n] = rank[pos]
                    n += 1
                    pos = t.next[pos]
                recency = [order[k] for k in range(n)]
            finally:
                PyMem_Free(rank)
            return (LRU_STATE_VERSION, self._ttl, self._maxsize, self._clk, self._on_expire,
                    attributes_of(self), entries, recency)
        finally:
            self._busy = False

    def __setstate__(self, state):
        cdef double ttl
        cdef _Table tab = _Table()
        cdef Py_hash_t h
        cdef Py_ssize_t i
        ttl_, maxsize, clock, on_expire, entries, attrs, recency = check_dict_state(state, self)
        ttl = ttl_
        if recency is not None:
            dq_tt_lru_init(&tab.t)
        for key, value, created_at in entries:  # keys' __hash__ runs before anything changes
            h = PyObject_Hash(key)
            dq_tt_reserve(&tab.t)
            Py_INCREF(key)
            Py_INCREF(value)
            dq_tt_append(&tab.t, <PyObject*>key, <PyObject*>value, h, created_at)
        if recency is not None:
            # a fresh table holds entry i at ring slot i: each in turn goes last
            for i in recency:
                dq_tt_lru_use(&tab.t, i)
        with cython.critical_section(self):
            self._begin()
            old = (self._tab, self._clk, self._on_expire)  # released after the change
            self._ttl, self._maxsize, self._clk, self._on_expire = ttl, maxsize, clock, on_expire
            self._lru = recency is not None
            self._max = -1 if maxsize is None else maxsize
            self._tab = tab
            self._busy = False
        del old  # released after the change
        set_attributes(self, attrs)

    def _check(self):
        """Assert the table's bookkeeping: ring, index, hole-free head, probe order."""
        cdef dq_ttl_table* t
        cdef dq_ttl_entry* e
        cdef Py_ssize_t k, pos
        with cython.critical_section(self):
            self._begin()  # nothing changes while it is read
            try:
                t = &self._tab.t
                cap, head, span, used = t.cap, t.head, t.span, t.used
                isize, ifill, wide = t.isize, t.ifill, t.wide
                ring = []  # (ring slot, key or None, hash, created_at), oldest first
                for k in range(t.span):
                    pos = (t.head + k) & (t.cap - 1)
                    e = &t.ents[pos]
                    ring.append((pos, None if e.key == NULL else <object>e.key, e.hash, e.t))
                index = [dq_tt_ix(t, k) for k in range(t.isize)]
                lru = t.lru
                forward, backward = [], []  # the recency order along next, and along prev
                if t.lru:
                    pos = t.lru_first
                    while pos >= 0 and len(forward) <= t.cap:
                        forward.append(pos)
                        pos = t.next[pos]
                    pos = t.lru_last
                    while pos >= 0 and len(backward) <= t.cap:
                        backward.append(pos)
                        pos = t.prev[pos]
                same = lru == self._lru
            finally:
                self._busy = False
        assert same, "the table's lru flag differs from the mapping's"
        _check_table(cap, head, span, used, isize, ifill, wide, ring, index)
        if lru:
            assert forward == backward[::-1], (forward, backward)
            assert sorted(forward) == sorted(pos for pos, key, h, t in ring if key is not None)


def _check_table(cap, head, span, used, isize, ifill, wide, ring, index):
    # the invariants of dq_ttltable.h, on a snapshot (TTLDictCore._check)
    assert cap == 0 or (cap >= 8 and cap & (cap - 1) == 0), cap
    assert isize == 2 * cap and bool(wide) == (cap > 2**31)
    assert 0 <= used <= span <= cap and 0 <= head < max(cap, 1)
    held = [(pos, h) for pos, key, h, t in ring if key is not None]
    assert len(held) == used
    assert ring[0][1] is not None if span else head == 0  # the head is held
    assert all(ix in (DQ_TT_EMPTY, DQ_TT_DUMMY) or 0 <= ix < cap for ix in index)
    assert sum(ix != DQ_TT_EMPTY for ix in index) == ifill and 3 * ifill <= 2 * isize
    assert sorted(ix for ix in index if ix >= 0) == sorted(pos for pos, h in held)
    # Along a key's probe sequence the keys of its hash met first are the ones
    # set before it, in ring order (the order of the pure twin's buckets).
    hash_of = dict(held)
    mask = isize - 1
    for rank, (pos, h) in enumerate(held):
        perturb = h % 2**64
        i = perturb & mask
        met = []
        while index[i] != pos:
            assert index[i] != DQ_TT_EMPTY, "a held entry missing from the index"
            if index[i] >= 0 and hash_of[index[i]] == h:
                met.append(index[i])
            perturb >>= 5
            i = (i * 5 + perturb + 1) & mask
        assert met == [p for p, g in held[:rank] if g == h], (pos, met)
