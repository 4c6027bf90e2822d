# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""ItemHeap's compiled core: the compiled twin of ``dq_core._itemheapcore_py``.

``ItemHeap`` runs heapq's algorithm over the items themselves (ordered by
their own ``<``): the heap under ``dq_core.PriorityQueue`` (``_queuecore``)
and ``dq_core.aio.PriorityQueue`` (``_aioqueuecore``), which drive it
through its C interface in ``dq_core/_itemheapcore.pxd``.
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython
from _shortcuts cimport dq_shortcut_switches

import types

from _number cimport fast_key
from _ownedlock cimport DQ_FREE_THREADED

__all__ = ["ItemHeap"]

#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({
    "list_hole": dq_shortcut_switches()["list_hole"],
})


from cpython.object cimport PyObject, PyObject_RichCompareBool, Py_LT
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_GET_ITEM
from cpython.mem cimport PyMem_Realloc, PyMem_Free

from _shortcuts cimport DQ_SC_LIST_HOLE

from _borrowed cimport dq_list_item, dq_list_size

# The heap's list is passed as <PyObject*>self._items (see _borrowed.pxd).
cdef extern from "dq_shortcuts.h":
    PyObject** PySequence_Fast_ITEMS(PyObject* list) noexcept  # a list's item array (public)
    void _list_swap "dq_list_swap"(PyObject* list, Py_ssize_t i, Py_ssize_t j) noexcept
    bint DQ_STR_READY(object s) noexcept

cdef extern from "dq_item_key.h":
    # PyUnicode_Compare(a, b) for two exact strs, which never fails
    int _str_cmp "dq_str_cmp"(object, object) noexcept

# Swaps one sift may make, two entries each: enough for 2**60 items.
cdef enum:
    MAX_MOVES = 256


cdef extern from "dq_item_key.h":
    # ItemKey.s: what orders a tuple's second element (the header says how)
    unsigned long long _str_sub "dq_str_sub"(object) noexcept
    unsigned long long _num_sub "dq_num_sub"(double) noexcept
    const unsigned long long SUB_NONE "DQ_SUB_NONE"
    const unsigned long long SUB_KIND "DQ_SUB_KIND"


cdef inline ItemKey _cached_key(object item) noexcept:
    # The number a tuple starts with, when comparing it exactly as a double
    # is possible; NaN means "compare the items".  Only tuples: a tuple and
    # a bare number do not compare in Python, whatever their keys.  With it,
    # what orders the second elements, when C can tell exactly: two strs of
    # one byte per code point by their first 7, two numbers as doubles (a
    # str and a number, or any other kind, are never ordered here).
    cdef ItemKey key
    cdef double d
    cdef object second
    key.k = NAN_KEY
    key.s = SUB_NONE
    if type(item) is tuple and PyTuple_GET_SIZE(item) > 0:
        if fast_key(<object>PyTuple_GET_ITEM(item, 0), &d):
            key.k = d
            if PyTuple_GET_SIZE(item) > 1:
                second = <object>PyTuple_GET_ITEM(item, 1)
                if type(second) is str:
                    key.s = _str_sub(second)
                elif fast_key(second, &d):
                    key.s = _num_sub(d)
    return key


cdef double NAN_KEY = float("nan")

# _tie_lt's answer when C cannot decide: compare the items themselves.
cdef enum:
    UNDECIDED = -2


cdef inline int _elem_cmp(object a, object b) noexcept:
    # -1, 0 or 1 as Python orders a and b, for the pairs where that runs
    # no Python code and a C comparison is exact: two exact strs (by code
    # point), or two of fast_key's numbers (exact ints within 2**53, floats
    # but NaN: both exact as doubles).  UNDECIDED for any other pair.
    cdef double p, q
    if type(a) is str:
        if type(b) is str:
            return _str_cmp(a, b)
    elif fast_key(a, &p) and fast_key(b, &q):
        return (p > q) - (p < q)
    return UNDECIDED


cdef int _tie_lt(object x, object y) noexcept:
    # x < y for two tuples whose first elements are equal numbers (their
    # cached keys tie): tuple comparison's walk (the first unequal
    # elements decide, else the shorter tuple is the lesser), from the
    # second element on, as long as _elem_cmp decides every pair it meets.
    cdef Py_ssize_t i, nx, ny
    cdef int c
    if type(x) is not tuple or type(y) is not tuple:  # not what the cache saw
        return UNDECIDED
    nx = PyTuple_GET_SIZE(x)
    ny = PyTuple_GET_SIZE(y)
    for i in range(1, nx if nx < ny else ny):
        c = _elem_cmp(<object>PyTuple_GET_ITEM(x, i), <object>PyTuple_GET_ITEM(y, i))
        if c != 0:
            return UNDECIDED if c == UNDECIDED else c < 0
    return nx < ny


cdef inline int _key_lt(ItemKey* ka, PyObject* x, ItemKey* kb, PyObject* y) noexcept:
    # x < y (their keys ka and kb) where C can tell exactly, else UNDECIDED:
    # the items must be compared by their own <.  No Python code runs.
    cdef double a = ka.k, b = kb.k
    if a == a and b == b and a != b:
        return a < b
    if a == b:  # two tuples whose first elements are equal numbers (NaN is never equal)
        if ka.s != kb.s and (ka.s & SUB_KIND) == (kb.s & SUB_KIND) and ka.s & SUB_KIND:
            return ka.s < kb.s  # their second elements differ, and decide
        # borrowed (a reference count taken and dropped is most of a tie's
        # cost on Python 3.12+)
        return _tie_lt(<object>x, <object>y)
    return UNDECIDED


cdef inline void _fill(PyObject** ob, ItemKey* keys, Py_ssize_t hole, Py_ssize_t i,
                       Py_ssize_t* moves, Py_ssize_t* m) noexcept:
    # a hole sift's step: the item at i moves into the hole (i is the new one)
    ob[hole] = ob[i]
    keys[hole] = keys[i]
    _record(moves, m, hole, i)


cdef inline void _record(Py_ssize_t* moves, Py_ssize_t* m, Py_ssize_t i, Py_ssize_t j) noexcept:
    # a sift's move of the items at i and j, for _undo
    moves[m[0]] = i
    moves[m[0] + 1] = j
    m[0] += 2


# no_gc_clear: the collector never sets _items to None under a method (a
# cycle through the heap is broken at its list or at the items instead).
@cython.final
@cython.no_gc_clear
cdef class ItemHeap:
    """ItemHeap()\n--\n\nMin-heap of items ordered by their own ``<``, exactly as heapq orders them.

    It runs heapq's algorithm step for step, so even items that tie, or
    that compare inconsistently, come out in the order ``heapq`` gives.  For
    tuples that start with an int or float that number is cached as a
    double and decides the comparison of two such tuples whenever it
    differs, skipping the rich comparison; when it ties, so is the second
    element when it is an exact int, float or str (its first 7 characters),
    and decides where it differs; past that, the elements are compared in
    C as long as both are exact ints, floats or strs, where the result is
    the tuples' own.  A comparison that raises
    leaves the heap exactly as it was; a comparison that re-enters the heap
    gets ``RuntimeError``.  Not thread-safe: ``QueueCore`` locks around it.
    Misused from several threads at once it still never corrupts memory:
    on a free-threaded build each method runs in a critical section on the
    heap, and a thread that enters while a comparison runs gets
    ``RuntimeError``, as re-entry does.
    """

    # Its fields and cdef methods are declared in dq_core/_itemheapcore.pxd.

    def __cinit__(self):
        self._items = []
        self._kcap = 0
        self._keys = NULL
        self._n = 0
        self._busy = False

    def __dealloc__(self):
        PyMem_Free(self._keys)

    cdef inline int _enter(self) except -1:
        if self._busy:
            raise RuntimeError("the heap was re-entered from a comparison of its items")
        self._busy = True
        if dq_list_size(<PyObject*>self._items) != self._n:
            self._rekey()
        return 0

    cdef int _rekey(self) except -1:
        # Rebuild the key cache for whatever the list now holds.
        cdef Py_ssize_t i, n = dq_list_size(<PyObject*>self._items)
        self._reserve(n)
        for i in range(n):  # no Python code runs here: n cannot change
            self._keys[i] = _cached_key(<object>dq_list_item(<PyObject*>self._items, i))
        self._n = n
        return 0

    cdef int _reserve(self, Py_ssize_t n) except -1:
        cdef Py_ssize_t cap = self._kcap or 8
        cdef ItemKey* p
        while cap < n:
            cap *= 2
        if cap != self._kcap:
            p = <ItemKey*>PyMem_Realloc(self._keys, cap * sizeof(ItemKey))
            if p == NULL:
                raise MemoryError()
            self._keys = p
            self._kcap = cap
        return 0

    cdef inline int _lt(self, Py_ssize_t i, Py_ssize_t j) except -1:
        cdef int r = _key_lt(&self._keys[i], dq_list_item(<PyObject*>self._items, i),
                             &self._keys[j], dq_list_item(<PyObject*>self._items, j))
        if r != UNDECIDED:
            return r
        return self._rich_lt(i, j)

    cdef int _rich_lt(self, Py_ssize_t i, Py_ssize_t j) except -1:
        # items[i] < items[j] by their own <, which may run any Python code
        cdef object x = <object>dq_list_item(<PyObject*>self._items, i)  # owned refs across the call
        cdef object y = <object>dq_list_item(<PyObject*>self._items, j)
        cdef int r = PyObject_RichCompareBool(x, y, Py_LT)
        if dq_list_size(<PyObject*>self._items) != self._n:  # as heapq checks
            raise RuntimeError("the heap changed size during a comparison of its items")
        return r

    cdef inline void _swap(self, Py_ssize_t i, Py_ssize_t j) noexcept:
        # through the list's public macros: the list may have moved its array
        cdef ItemKey k = self._keys[i]
        _list_swap(<PyObject*>self._items, i, j)
        self._keys[i] = self._keys[j]
        self._keys[j] = k

    cdef void _undo(self, Py_ssize_t* moves, Py_ssize_t m) noexcept:
        while m > 0:
            m -= 2
            self._swap(moves[m], moves[m + 1])

    # The sifts move a hole: the item sifted is held aside (and its list slot
    # left stale) while the items it passes move one step each, and it is
    # written once where it stops.  The list is a permutation of its items
    # again before anything that can run Python code: while every
    # comparison is decided by _key_lt nothing runs, and at the first that
    # is not, the item goes back into the hole and the rest of the sift
    # swaps (its moves are the swaps': _undo reverses either).  The hole is
    # a shortcut (DQ_SC_LIST_HOLE in dq_shortcuts.h): on a free-threaded
    # build another thread could reach the list meanwhile (gc.get_referents),
    # and untested CPythons get the public path: there, swaps only.

    cdef int _sift_up(self, Py_ssize_t pos, Py_ssize_t start,
                      Py_ssize_t* moves, Py_ssize_t* m) except -1:
        # Bubble the item at pos up towards the root, no higher than start
        # (heapq's _siftdown).
        cdef PyObject** ob
        cdef ItemKey* keys
        cdef PyObject* x
        cdef ItemKey kx
        cdef Py_ssize_t parent
        cdef int r = 0
        if not DQ_SC_LIST_HOLE or pos <= start:
            return self._sift_up_swaps(pos, start, moves, m)
        ob = PySequence_Fast_ITEMS(<PyObject*>self._items)
        keys = self._keys
        x = ob[pos]
        kx = keys[pos]
        while pos > start:
            parent = (pos - 1) >> 1
            r = _key_lt(&kx, x, &keys[parent], ob[parent])
            if r != 1:  # in place, or undecided
                break
            _fill(ob, keys, pos, parent, moves, m)
            pos = parent
        ob[pos] = x
        keys[pos] = kx
        if r == UNDECIDED:
            return self._sift_up_swaps(pos, start, moves, m)
        return 0

    cdef int _sift_up_swaps(self, Py_ssize_t pos, Py_ssize_t start,
                            Py_ssize_t* moves, Py_ssize_t* m) except -1:
        cdef Py_ssize_t parent
        while pos > start:
            parent = (pos - 1) >> 1
            if not self._lt(pos, parent):
                break
            self._swap(pos, parent)
            _record(moves, m, pos, parent)
            pos = parent
        return 0

    cdef int _sift_down(self, Py_ssize_t pos, Py_ssize_t* moves, Py_ssize_t* m) except -1:
        # Move the smaller child up until pos is a leaf, then sift the
        # displaced item back up (heapq's _siftup).
        cdef Py_ssize_t end = self._n, start = pos, child
        cdef Py_ssize_t limit = end >> 1
        cdef PyObject** ob
        cdef ItemKey* keys
        cdef PyObject* x
        cdef ItemKey kx
        cdef int r = 0
        if not DQ_SC_LIST_HOLE:
            return self._sift_down_swaps(pos, start, moves, m)
        ob = PySequence_Fast_ITEMS(<PyObject*>self._items)
        keys = self._keys
        x = ob[pos]
        kx = keys[pos]
        while pos < limit:
            child = 2 * pos + 1
            if child + 1 < end:
                r = _key_lt(&keys[child], ob[child], &keys[child + 1], ob[child + 1])
                if r == UNDECIDED:
                    break
                if not r:
                    child += 1
            _fill(ob, keys, pos, child, moves, m)
            pos = child
        ob[pos] = x
        keys[pos] = kx
        if r == UNDECIDED:
            return self._sift_down_swaps(pos, start, moves, m)
        return self._sift_up(pos, start, moves, m)

    cdef int _sift_down_swaps(self, Py_ssize_t pos, Py_ssize_t start,
                              Py_ssize_t* moves, Py_ssize_t* m) except -1:
        cdef Py_ssize_t end = self._n, child
        cdef Py_ssize_t limit = end >> 1
        while pos < limit:
            child = 2 * pos + 1
            if child + 1 < end and not self._lt(child, child + 1):
                child += 1
            self._swap(pos, child)
            _record(moves, m, pos, child)
            pos = child
        return self._sift_up_swaps(pos, start, moves, m)

    def push(self, item):
        """Add ``item``.  O(log n) comparisons."""
        self._push(item)

    def pop(self):
        """Remove and return the smallest item.  O(log n) comparisons.

        Raises ``IndexError`` when the heap is empty.
        """
        return self._pop()

    cdef int _push(self, object item) except -1:
        # The critical section (free-threaded builds; nothing with a GIL) is
        # suspended while a comparison runs: a thread entering then meets _busy.
        if DQ_FREE_THREADED:
            with cython.critical_section(self):
                return self._push_item(item)
        return self._push_item(item)

    cdef int _push_item(self, object item) except -1:
        cdef Py_ssize_t moves[MAX_MOVES]
        cdef Py_ssize_t m = 0, n
        cdef bint sifted
        self._enter()
        try:
            n = self._n
            if n >= self._kcap:
                self._reserve(n + 1)
            self._keys[n] = _cached_key(item)
            self._items.append(item)
            self._n = n + 1
            sifted = False
            try:
                self._sift_up(n, 0, moves, &m)
                sifted = True
            finally:  # a flag, not `except`: Cython saves no exception state on entry
                if not sifted:  # a comparison raised (it goes on up)
                    if dq_list_size(<PyObject*>self._items) == n + 1:
                        self._undo(moves, m)
                        del self._items[n]
                        self._n = n
                    else:  # changed under a comparison: keep what is there
                        self._rekey()
        finally:
            self._busy = False
        return 0

    cdef object _pop(self):
        if DQ_FREE_THREADED:
            with cython.critical_section(self):
                return self._pop_item()
        return self._pop_item()

    cdef object _pop_item(self):
        cdef Py_ssize_t moves[MAX_MOVES]
        cdef Py_ssize_t m = 0, n
        cdef ItemKey top_key
        cdef bint sifted
        if dq_list_size(<PyObject*>self._items) == 0:
            raise IndexError("pop from an empty heap")
        self._enter()
        try:
            n = self._n
            last = self._items.pop()
            self._n = n - 1
            if n == 1:
                return last
            top = <object>dq_list_item(<PyObject*>self._items, 0)
            top_key = self._keys[0]
            self._items[0] = last  # top and last are held: no finaliser runs
            self._keys[0] = self._keys[n - 1]
            sifted = False
            try:
                self._sift_down(0, moves, &m)
                sifted = True
            finally:  # as in _push_item
                if not sifted:
                    if dq_list_size(<PyObject*>self._items) == n - 1:
                        self._undo(moves, m)
                        self._items[0] = top
                        self._keys[0] = top_key
                        self._items.append(last)  # its key is still in _keys[n - 1]
                        self._n = n
                    else:  # changed under a comparison: keep what is there
                        self._rekey()
            if n * 4 <= self._kcap and self._kcap > 64:
                self._reserve_shrink()
            return top
        finally:
            self._busy = False

    cdef void _reserve_shrink(self) noexcept:
        cdef ItemKey* p = <ItemKey*>PyMem_Realloc(self._keys, (self._kcap // 2) * sizeof(ItemKey))
        if p != NULL:
            self._keys = p
            self._kcap //= 2

    def peek(self):
        """Return the smallest item without removing it.  O(1).

        Raises ``IndexError`` when the heap is empty.
        """
        with cython.critical_section(self):
            if not self._items:
                raise IndexError("peek at an empty heap")
            return self._items[0]

    def clear(self):
        """Remove every item and return them, in heap order.  O(n)."""
        with cython.critical_section(self):
            self._enter()
            try:
                items = self._items[:]
                del self._items[:]  # the copy holds them: no finaliser runs here
                self._n = 0
                return items
            finally:
                self._busy = False

    def snapshot(self):
        """A list of the items, in heap order.  O(n)."""
        with cython.critical_section(self):
            return list(self._items)

    def __len__(self):
        return dq_list_size(<PyObject*>self._items)

    def __bool__(self):
        return dq_list_size(<PyObject*>self._items) > 0

    def __repr__(self):
        return f"<{type(self).__name__} len={len(self._items)}>"

    def __reduce__(self):
        raise TypeError(f"cannot pickle {type(self).__name__!r} object")

    def _check(self):
        """Assert heap order (by ``<``) and the key cache."""
        cdef Py_ssize_t i, n
        with cython.critical_section(self):
            assert not self._busy
            # Work on a copy: the comparisons below run the items' own code.
            items = list(self._items)
            n = len(items)
            assert n == self._n, "key cache out of step with the list"
            for i in range(n):
                key = _cached_key(items[i])
                assert (key.k != key.k and self._keys[i].k != self._keys[i].k) or key.k == self._keys[i].k
                assert key.s == self._keys[i].s
        for i in range(1, n):
            assert not items[i] < items[(i - 1) >> 1], f"heap order broken at {i}"
