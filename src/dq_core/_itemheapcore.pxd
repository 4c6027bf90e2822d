# cython: language_level=3
# The C interface of dq_core._itemheapcore: ItemHeap, cimported by _queuecore
# and _aioqueuecore (the queues' cores push and pop through these cdef
# methods, without a Python call).  This file's path names the module,
# dq_core._itemheapcore (see dq_core/_ringcore.pxd).

cimport cython


# What ItemHeap caches of an item (a tuple starting with a number) to order
# it without a rich comparison: k, that number as a double (NaN: nothing
# cached, compare the items); when the second elements decide a tie on k,
# s, an unsigned number in their order with their kind in its low byte
# (see _itemheapcore.pyx).  16 bytes: the sifts move keys, so their size counts.
ctypedef struct ItemKey:
    double k
    unsigned long long s


@cython.final
@cython.no_gc_clear
cdef class ItemHeap:
    # The one list for the heap's lifetime (clear() empties it in place):
    # readers such as QueueCore.qsize() and QueueView take no lock.
    cdef list _items
    cdef ItemKey* _keys
    cdef Py_ssize_t _kcap
    # How many items the key cache covers.  Only the heap's own methods
    # change the list, so this is len(_items) unless something reached the
    # list itself (gc.get_referents): then the cache is rebuilt, and a
    # comparison that sees the size change raises RuntimeError.
    cdef Py_ssize_t _n
    cdef bint _busy

    cdef inline int _enter(self) except -1
    cdef int _rekey(self) except -1
    cdef int _reserve(self, Py_ssize_t n) except -1
    cdef inline int _lt(self, Py_ssize_t i, Py_ssize_t j) except -1
    cdef int _rich_lt(self, Py_ssize_t i, Py_ssize_t j) except -1
    cdef inline void _swap(self, Py_ssize_t i, Py_ssize_t j) noexcept
    cdef void _undo(self, Py_ssize_t* moves, Py_ssize_t m) noexcept
    cdef int _sift_up(self, Py_ssize_t pos, Py_ssize_t start,
                      Py_ssize_t* moves, Py_ssize_t* m) except -1
    cdef int _sift_up_swaps(self, Py_ssize_t pos, Py_ssize_t start,
                            Py_ssize_t* moves, Py_ssize_t* m) except -1
    cdef int _sift_down(self, Py_ssize_t pos, Py_ssize_t* moves, Py_ssize_t* m) except -1
    cdef int _sift_down_swaps(self, Py_ssize_t pos, Py_ssize_t start,
                              Py_ssize_t* moves, Py_ssize_t* m) except -1
    # push and pop, as the Python methods (RuntimeError on re-entry, a
    # raising comparison leaves the heap as it was)
    cdef int _push(self, object item) except -1
    cdef int _push_item(self, object item) except -1
    cdef object _pop(self)
    cdef object _pop_item(self)
    cdef void _reserve_shrink(self) noexcept
