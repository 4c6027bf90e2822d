# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""The dict, the ring and the hot paths of TTLDict (twin of ``_ttldictcore_py``).

Every set pushes its entry ``(key, value, created_at)`` on a TTLRing (the
compiled one, driven through its C interface in dq_core/_ringcore.pxd) and maps
the key to it in a dict; the ring gives the expiry order, the dict the
current entry of each key.  ``dq_core._ttldict.TTLDict`` makes this a
MutableMapping.

User code (a key's ``__eq__`` or ``__hash__``, a finaliser run by the
garbage collector) may try to change the mapping while one of its changes
is under way; that re-entry is refused with ``RuntimeError``, so no change
ever sees a half-made one.  Every object read across a call that can run
Python code is held by a reference of our own.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from cpython.dict cimport PyDict_SetItem, PyDict_DelItem
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.pythread cimport PyThread_get_thread_ident
from cpython.tuple cimport PyTuple_GET_ITEM

from dq_core._ringcore cimport TTLRing, _reading

import time
import types

from dq_core import _ttldictstate
from dq_core._ringstate import clock_of, reentered, ttl_of
from dq_core._signature import NO_DEFAULT, signature
from dq_core._ttldictstate import (
    attributes_of, check_dict_state, maxsize_of, on_expire_of, set_attributes,
)

__all__ = ["TTLDictCore"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes: none.
SHORTCUTS = types.MappingProxyType({})

cdef extern from "dq_dict.h":
    # d[k] (None if absent) and d.setdefault(k, v), as new references
    object _dict_get "dq_dict_get"(dict, object)
    object _dict_setdefault "dq_dict_setdefault"(dict, object, object)


# The pure twin's constant, as a C value
cdef int STATE_VERSION = _ttldictstate.STATE_VERSION


cdef inline bint _due(object entry, double ttl, double now) noexcept:
    # entry is one of ours: (key, value, created_at) with a float created_at
    return PyFloat_AS_DOUBLE(<object>PyTuple_GET_ITEM(entry, 2)) + ttl <= now


@cython.auto_pickle(False)
cdef class TTLDictCore:
    """The dict, the ring and the hot paths of TTLDict.

    Every set pushes its entry ``(key, value, created_at)`` on the ring; the
    dict maps each key to its latest entry, so a ring entry whose key was
    set again since is recognised as stale by identity and skipped.  Every
    entry the dict holds is on the ring, at every point where user code
    (a key's ``__hash__`` or ``__eq__``, the clock) can run.

    >>> d = TTLDictCore(10, clock=lambda: 0.0)
    >>> d["a"] = 1
    >>> d["a"], "b" in d
    (1, False)
    >>> d._purge(10.0)
    [('a', 1)]
    """

    # the shared layer (dq_core._ttldict) reads them as _ring, _data, _clock
    cdef TTLRing _rng
    cdef dict _map
    cdef readonly double _ttl
    cdef object _clk
    cdef object _maxsize, _on_expire
    cdef bint _busy              # a change is under way
    cdef unsigned long _owner    # ... made by this thread
    cdef object __weakref__

    __class_getitem__ = classmethod(types.GenericAlias)
    __signature__ = signature(("ttl", NO_DEFAULT), ("maxsize", None), ("clock", time.monotonic),
                               ("on_expire", None))

    def __cinit__(self):
        # a valid empty mapping even before __init__ or __setstate__
        self._rng = TTLRing(0)
        self._map = {}
        self._clk = time.monotonic

    @cython.critical_section
    def __init__(self, ttl, maxsize=None, clock=time.monotonic, on_expire=None):
        ring = TTLRing(ttl, clock=clock)
        maxsize = maxsize_of(maxsize)
        on_expire = on_expire_of(on_expire)
        self._begin()
        # what a re-initialised mapping held goes after the change is complete
        old = (self._rng, self._map, self._clk, self._on_expire)
        self._on_expire = on_expire
        self._maxsize = maxsize
        self._clk = clock
        self._ttl = ring._ttl
        self._rng = ring
        self._map = {}
        self._busy = False

    def _get_ttl(self):
        with cython.critical_section(self):
            return self._ttl

    def _set_ttl(self, value):
        cdef double t = ttl_of(value)  # user code (__float__) runs before anything changes
        with cython.critical_section(self):
            self._rng._ttl = t
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
        cdef list removed = None
        value = maxsize_of(value)
        with cython.critical_section(self):
            # lowered: the entries over it go at once, expired ones first, as at a set
            if value is not None and len(self._map) > value:
                now = self._now()
            self._begin()
            try:
                self._maxsize = value
                if value is not None and len(self._map) > value:
                    removed = self._shrink(now, [])
            finally:
                self._busy = False
        if removed:  # on_expire runs outside the critical section
            self._notify(removed)

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

    @property
    def _ring(self):
        with cython.critical_section(self):
            return self._rng

    @property
    def _data(self):
        with cython.critical_section(self):
            return self._map

    @property
    def _clock(self):
        with cython.critical_section(self):
            return self._clk

    @cython.critical_section
    def _next_expiry(self):
        """When the oldest entry held expires, or None (a stale one may answer early)."""
        return self._rng._next_expiry()

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
        clock = self._clk
        return _reading(clock)

    cdef inline object _lookup(self, object key):
        # The current entry of key, or None.  The dict is held by a reference
        # of our own while key's __hash__/__eq__ run (they may clear() it),
        # and the entry is owned before anything else can run.
        cdef dict data = self._map
        return _dict_get(data, key)

    @cython.critical_section
    def __getitem__(self, key):
        entry = self._lookup(key)
        if entry is None:
            raise KeyError(key)
        cdef double now = self._now()
        if _due(entry, self._ttl, now):
            raise KeyError(key)
        return <object>PyTuple_GET_ITEM(entry, 1)

    @cython.critical_section
    def __contains__(self, key):
        entry = self._lookup(key)
        if entry is None:
            return False
        cdef double now = self._now()
        return not _due(entry, self._ttl, now)

    def __setitem__(self, key, value):
        cdef double now
        cdef list removed = None
        with cython.critical_section(self):
            now = self._now()
            self._begin()
            try:
                data = self._map
                entry = (key, value, now)
                ring = self._rng
                # a raising __hash__/__eq__ leaves everything as it was
                old = _dict_setdefault(data, key, entry)
                if old is not entry:
                    PyDict_SetItem(data, key, entry)
                (<TTLRing>ring)._push(entry, now)
                if old is not entry and _due(old, self._ttl, now):
                    # Expired, so absent from every read: this set is an insert.
                    # The old entry, stale on the ring from now on (expire skips
                    # it), is reported here and only here.
                    removed = [(<object>PyTuple_GET_ITEM(old, 0), <object>PyTuple_GET_ITEM(old, 1))]
                maxsize = self._maxsize
                if maxsize is not None and len(data) > maxsize:
                    removed = self._shrink(now, [] if removed is None else removed)
            finally:
                self._busy = False
        if removed:  # on_expire runs outside the critical section
            self._notify(removed)

    def __delitem__(self, key):
        self._take(key)

    @cython.critical_section
    def _take(self, key):
        """Remove ``key`` and return its value; KeyError if absent or expired."""
        cdef double now = self._now()
        self._begin()
        try:
            data = self._map
            entry = data[key]
            if _due(entry, self._ttl, now):
                raise KeyError(key)
            del data[key]  # its ring entry is stale from now on
        finally:
            self._busy = False
        return <object>PyTuple_GET_ITEM(entry, 1)

    @cython.critical_section
    def _popfirst(self):
        """Remove and return the first live ``(key, value)`` in insertion order."""
        cdef double now = self._now()
        cdef double ttl
        self._begin()
        try:
            data = self._map
            ttl = self._ttl
            for key, entry in data.items():
                if not _due(entry, ttl, now):
                    break
            else:
                raise KeyError("popitem(): dictionary is empty")
            del data[key]
        finally:
            self._busy = False
        return key, <object>PyTuple_GET_ITEM(entry, 1)

    @cython.critical_section
    def clear(self):
        """Remove every entry, without calling ``on_expire``.  O(n)."""
        self._begin()
        try:
            ring, data = self._rng, self._map
            self._rng = TTLRing(self._ttl, clock=self._clk)
            self._map = {}
        finally:
            self._busy = False
        del ring, data  # the old entries go here, after the change is complete

    @cython.critical_section
    def _purge(self, double now):
        """Drop the expired entries still held; return them as (key, value)."""
        self._begin()
        try:
            return self._drop_due(now, [])
        finally:
            self._busy = False

    cdef list _shrink(self, double now, list out):
        # maxsize is exceeded: expired entries go first, then the oldest, into out
        self._drop_due(now, out)
        data, maxsize = self._map, self._maxsize
        while len(data) > maxsize and self._rng._len:
            self._drop_head(out)
        return out

    cdef list _drop_due(self, double now, list out):
        # Each head entry leaves the dict before it leaves the ring, so a
        # key's __hash__/__eq__ raising here leaves every held entry on the ring.
        # Appended to out.
        cdef TTLRing ring = self._rng
        while ring._len:
            if not _due(ring._peek(), self._ttl, now):
                break
            self._drop_head(out)
        return out

    cdef int _drop_head(self, list out) except -1:
        # drop the ring's head entry, and from the dict if it is current there
        cdef TTLRing ring = self._rng
        entry = ring._peek()
        key = <object>PyTuple_GET_ITEM(entry, 0)
        data = self._map
        if self._lookup(key) is entry:
            PyDict_DelItem(data, key)
            out.append((key, <object>PyTuple_GET_ITEM(entry, 1)))
        ring._expire(0.0, 1, False)
        return 0

    # -- copying, pickling, invariants --------------------------------------

    @cython.critical_section
    def __getstate__(self):
        """The state both implementations pickle to and load from."""
        # a change under way has no whole state yet; none starts while it is read
        # (an allocation here may run a finaliser, and that another thread)
        self._begin()
        try:
            held = {id(e) for e in self._map.values()}
            entries = [e for e, _ in self._rng._entries() if id(e) in held]
            return (STATE_VERSION, self._ttl, self._maxsize, self._clk, self._on_expire,
                    attributes_of(self), entries)
        finally:
            self._busy = False

    def __setstate__(self, state):
        ttl, maxsize, clock, on_expire, entries, data, attrs = check_dict_state(state, self)
        cdef TTLRing ring = TTLRing(ttl, clock=clock)
        for e in entries:
            ring.push(e, e[2])
        with cython.critical_section(self):
            self._begin()
            old = (self._rng, self._map, self._clk, self._on_expire)  # released after the change
            self._ttl, self._maxsize, self._clk, self._on_expire = ttl, maxsize, clock, on_expire
            self._rng, self._map = ring, data
            self._busy = False
        del old  # released after the change
        set_attributes(self, attrs)

    def _check(self):
        """Assert every held entry is on the ring, and the bookkeeping around it."""
        with cython.critical_section(self):
            self._begin()  # nothing changes while it is read
            try:
                ring, data, ttl = self._rng, self._map, self._ttl
                entries = ring._entries()
                values = list(data.values())
                ring._check()
            finally:
                self._busy = False
        assert ring.ttl == ttl
        on_ring = {id(e) for e, _ in entries}
        for e in values:
            assert type(e) is tuple and len(e) == 3 and type(e[2]) is float, e
            assert id(e) in on_ring, e
