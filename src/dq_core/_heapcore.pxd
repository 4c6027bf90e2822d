# cython: language_level=3
# The C interface of dq_core._heapcore, cimported by _delaycore (DelayCore drives its
# Heap through these fields and cdef methods, without Python calls).  This
# file's path names the module, dq_core._heapcore (see dq_core/_ringcore.pxd).

cimport cython

from _handles cimport Handles

ctypedef unsigned long long u64

# an entry of the heap: its key, and seq << SLOT_SHIFT | slot
ctypedef struct Entry:
    double key
    u64 ss

# a held slot's live entry: its key (for priority) and sequence number (an
# entry in the heap arrays is live while its seq is its slot's)
ctypedef struct SlotEntry:
    double key
    u64 seq


cdef class Heap:
    # by array index: the entries, live and dead, at [_off, _off + _m) of
    # the buffer _e: a d-ary heap from the root (_off is _root) or, while
    # _sorted, in pop order (see dq_core._heapcore); the entry at _off is
    # live whenever _n > 0.  _hkey views their keys (for the delay queues'
    # cores: the head's key is _hkey[_off]); _buf owns the buffer.
    cdef Entry* _e
    cdef double[:] _hkey
    cdef object _buf
    cdef Py_ssize_t _root
    # by slot: the handle table, each held slot's live entry (as long as the
    # table's room), and the payload (None in a free slot; as long as the
    # slots made)
    cdef Handles _t
    cdef SlotEntry* _slive
    cdef list _items
    cdef Py_ssize_t _n, _m, _hcap, _off   # _n live items, _m entries (live and dead)
    cdef bint _sorted             # the entries are in pop order: a sorted run
    cdef u64 _seq
    cdef bint _busy               # an operation is changing the heap
    cdef object __weakref__

    @cython.final
    cdef inline int _enter(self) except -1
    @cython.final
    cdef inline int _idle(self) except -1
    @cython.final
    cdef int _alloc_heap(self, Py_ssize_t cap) except -1
    @cython.final
    cdef int _alloc_slots(self, Py_ssize_t cap) except -1
    @cython.final
    cdef int _reset_slots(self, unsigned int epoch) except -1
    @cython.final
    cdef inline int _shrink_heap(self) except -1
    @cython.final
    cdef inline long long _take_slot(self, object item) except -1
    @cython.final
    cdef int _on_empty(self) except -1
    @cython.final
    cdef void _move_down(self) noexcept
    @cython.final
    cdef void _unsort(self) noexcept
    @cython.final
    cdef bint _in_order(self, const double* K, Py_ssize_t k) noexcept
    @cython.final
    cdef void _sift_up(self, Py_ssize_t pos, Py_ssize_t start) noexcept
    @cython.final
    cdef void _sift_down(self, Py_ssize_t pos) noexcept
    @cython.final
    cdef void _heapify(self) noexcept
    @cython.final
    cdef inline bint _live_at(self, Py_ssize_t pos) noexcept
    @cython.final
    cdef inline Py_ssize_t _live_entry(self, Entry x) noexcept
    @cython.final
    cdef int _renumber(self) except -1
    @cython.final
    cdef list _live_in_order(self)
    @cython.final
    cdef inline long long _insert(self, double key, object item) except -1
    @cython.final
    cdef int _append_entry(self, double key, long long slot) except -1
    @cython.final
    cdef int _make_room(self) except -1
    @cython.final
    cdef int _reserve(self, Py_ssize_t extra) except -1
    @cython.final
    cdef void _drop_top(self) noexcept
    @cython.final
    cdef void _clean_top(self) noexcept
    @cython.final
    cdef int _purge(self) except -1
    @cython.final
    cdef inline int _after_kill(self) except -1
    @cython.final
    cdef object _kill(self, long long slot)
    @cython.final
    cdef object _pop_top(self)
    @cython.final
    cdef inline long long _slot_of(self, object handle) except -2
    @cython.final
    cdef inline object _handle(self, long long slot)
    @cython.final
    cdef tuple _state(self)
    @cython.final
    cdef int _load_live(self, list live, SlotEntry* e, Py_ssize_t slots, Entry* out,
                        list items) except -1
    @cython.final
    cdef _check_tables(self)

    # What push, pop, remove and update do once the priority is a double:
    # DelayCore's operations on its heap.
    @cython.final
    cdef object _push_key(self, double key, object item)
    @cython.final
    cdef object _pop_head(self)
    @cython.final
    cdef object _remove_handle(self, object handle)
    @cython.final
    cdef int _update_key(self, object handle, double key) except -1
