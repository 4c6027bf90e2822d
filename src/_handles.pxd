# cython: language_level=3
# The generation-handle slot table shared by the compiled Heap and TimingWheel.
#
# Every item holds a slot of a table; its handle is
# cid << 64 | gen << SLOT_BITS | slot, cid the id of the container that issued
# it (dq_core._handles.new_cid: one counter for the process, so a handle of
# one container never names an item of another).  A slot keeps the cid and
# generation of its latest occupant.  A freed slot goes on a free stack, and
# taking it again moves it to the next generation (and to this container's
# cid, in a copy), so the handles of its earlier occupants go stale; a slot
# whose generation reaches GEN_LIMIT is retired for good, so a handle is never
# issued twice.  When the structure empties, a table of more than
# RESET_MIN_SLOTS slots starts afresh at an epoch above every generation
# issued so far.
#
# This is the C half of dq_core._handles (the Python half, with the rules in
# words): the same constants (tests/test_handles.py checks that they agree)
# and the same rules.  Everything is inline: nothing here costs a call.

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.number cimport PyNumber_Index

from _shortcuts cimport dq_long_as_u128, dq_long_from_u128

cdef extern from *:
    """
    #define DQ_SLOT_BITS 32                       /* handle = cid << 64 | gen << SLOT_BITS | slot */
    #define DQ_GEN_BITS 32                        /* tag = cid << GEN_BITS | gen */
    #define DQ_SLOT_MASK 0xFFFFFFFFULL            /* the slot part of a handle */
    #define DQ_GEN_LIMIT 0xFFFFFFFFU              /* a generation that retires its slot */
    #define DQ_MAX_SLOTS 0x7FFFFFFF               /* slot numbers fit a C int */
    #define DQ_MIN_SLOTS 8                        /* room of a fresh table */
    #define DQ_RESET_MIN_SLOTS 64                 /* smaller tables are kept when emptied */
    """
    const int SLOT_BITS "DQ_SLOT_BITS"
    const int GEN_BITS "DQ_GEN_BITS"
    const unsigned long long SLOT_MASK "DQ_SLOT_MASK"
    const unsigned int GEN_LIMIT "DQ_GEN_LIMIT"
    const Py_ssize_t MAX_SLOTS "DQ_MAX_SLOTS"
    const Py_ssize_t MIN_SLOTS "DQ_MIN_SLOTS"
    const Py_ssize_t RESET_MIN_SLOTS "DQ_RESET_MIN_SLOTS"

cdef extern from "dq_shortcuts.h":
    # list.append, 0 or -1 with an exception set (handles_put then undoes its slot)
    int _list_append "dq_list_append"(object, object) noexcept

cdef enum:
    NIL = -1    # the end of the free stack; "no slot"
    LIVE = -2   # the link of a slot that holds an item


ctypedef struct Slot:
    unsigned long long cid  # container id in the handle of the slot's latest occupant
    unsigned int gen        # generation of the slot's latest occupant
    int link                # LIVE, or the next free slot below (NIL at the bottom)


ctypedef struct Handles:
    Slot* slots
    Py_ssize_t n            # slots made
    Py_ssize_t cap          # slots allocated
    int free                # top of the free stack, or NIL
    unsigned int epoch      # generation of slots made afresh
    unsigned long long cid  # this container's id (dq_core._handles.new_cid)


cdef inline dict handle_constants():
    # For the test that both halves agree.
    return {
        "SLOT_BITS": SLOT_BITS, "SLOT_MASK": SLOT_MASK, "GEN_BITS": GEN_BITS,
        "GEN_LIMIT": GEN_LIMIT, "CID_LIMIT": dq_long_from_u128(1, 0),
        "HANDLE_LIMIT": (dq_long_from_u128(1, 0) << GEN_BITS) << SLOT_BITS,
        "MAX_SLOTS": MAX_SLOTS, "MIN_SLOTS": MIN_SLOTS,
        "RESET_MIN_SLOTS": RESET_MIN_SLOTS, "NIL": NIL, "LIVE": LIVE,
    }


cdef inline Py_ssize_t next_cap(Py_ssize_t cap, str full) except -1:
    # The capacity after cap: doubled, at most MAX_SLOTS; MemoryError(full) past it.
    if cap >= MAX_SLOTS:
        raise MemoryError(full)
    return MAX_SLOTS if cap > MAX_SLOTS // 2 else 2 * cap


cdef inline int handles_new(Handles* t, Py_ssize_t cap, unsigned int epoch,
                            unsigned long long cid) except -1:
    # Fill *t with an empty table of container cid with room for cap slots;
    # *t's old storage is the caller's to free (handles_free).  On
    # MemoryError *t is unchanged.
    cdef Slot* slots = <Slot*>PyMem_Malloc(cap * sizeof(Slot))
    if slots is NULL:
        raise MemoryError()
    t.slots = slots
    t.n = 0
    t.cap = cap
    t.free = NIL
    t.epoch = epoch
    t.cid = cid
    return 0


cdef inline void handles_free(Handles* t) noexcept:
    PyMem_Free(t.slots)
    t.slots = NULL
    t.n = t.cap = 0
    t.free = NIL


cdef inline int handles_grow(Handles* t, Py_ssize_t cap) except -1:
    cdef Slot* slots = <Slot*>PyMem_Realloc(t.slots, cap * sizeof(Slot))
    if slots is NULL:
        raise MemoryError()
    t.slots = slots
    t.cap = cap
    return 0


cdef inline int handles_take(Handles* t) noexcept:
    # Hold a slot and return it; NIL if the table must grow first
    # (next_cap, handles_grow and the structure's own arrays, then again).
    # A reused slot moves to the next generation, so handles of its
    # earlier occupants go stale; at GEN_LIMIT it is retired for good.
    cdef Slot* S = t.slots
    cdef int slot = t.free
    cdef unsigned int gen
    while slot != NIL:
        t.free = S[slot].link
        gen = S[slot].gen + 1
        S[slot].gen = gen
        S[slot].cid = t.cid  # in a copy, the slot of a copied item becomes ours
        if gen < GEN_LIMIT:
            S[slot].link = LIVE
            return slot
        S[slot].link = NIL
        slot = t.free
    if t.n == t.cap:
        return NIL
    slot = <int>t.n
    S[slot].cid = t.cid
    S[slot].gen = t.epoch
    S[slot].link = LIVE
    t.n = slot + 1
    return slot


cdef inline int handles_put(Handles* t, list items, int slot, object item) except -1:
    # Store item as the payload of the slot just taken, in items (the
    # payloads by slot, as long as the slots made).  If a slot made afresh
    # cannot be appended (MemoryError), it is unmade: the table is as it was.
    if slot < len(items):
        items[slot] = item
    elif _list_append(items, item) < 0:
        t.n -= 1
        return -1
    return 0


cdef inline void handles_release(Handles* t, int slot) noexcept:
    # Put a held slot back on the free stack.
    t.slots[slot].link = t.free
    t.free = slot


cdef inline object handles_handle(Handles* t, int slot):
    return dq_long_from_u128(
        t.slots[slot].cid, (<unsigned long long>t.slots[slot].gen << SLOT_BITS) | <unsigned long long>slot)


cdef inline bint handles_held(Handles* t, Py_ssize_t slot) noexcept:
    return t.slots[slot].link == LIVE


cdef inline int handles_find(Handles* t, object handle) except -2:
    # The held slot behind handle, or NIL if it is stale, foreign or unknown;
    # TypeError if it is not an int.  Only C-level checks: nothing here
    # runs user code, even for an int subclass (PyNumber_Index gives an
    # exact int without calling it).
    cdef unsigned long long hi, lo
    cdef Py_ssize_t slot
    cdef Slot* S
    if type(handle) is not int:
        if not isinstance(handle, int):
            raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
        handle = PyNumber_Index(handle)
    if not dq_long_as_u128(handle, &hi, &lo):  # negative, or 2**128 or more
        return NIL
    slot = <Py_ssize_t>(lo & SLOT_MASK)
    if slot >= t.n:
        return NIL
    S = &t.slots[slot]
    if S.link != LIVE or S.gen != (lo >> SLOT_BITS) or S.cid != hi:
        return NIL
    return <int>slot


cdef inline long long handles_spent(Handles* t) noexcept:
    # The epoch to start afresh at once the structure is empty, or NIL:
    # keep the table (it is small, or its generations are too high for a
    # new epoch to stay clear of them).
    cdef Py_ssize_t s
    cdef unsigned int top = 0
    if t.n <= RESET_MIN_SLOTS:
        return NIL
    for s in range(t.n):
        if t.slots[s].gen > top:
            top = t.slots[s].gen
    # Every handle ever issued has a generation below the new epoch, so
    # slots made afresh cannot repeat one.
    if <unsigned long long>top + 1 < <unsigned long long>(GEN_LIMIT // 2):
        return <long long>top + 1
    return NIL


cdef inline list handles_tags(Handles* t):
    # every slot's tag, cid << GEN_BITS | gen (Python ints: up to 96 bits)
    return [(<object>t.slots[s].cid << GEN_BITS) | t.slots[s].gen for s in range(t.n)]


cdef inline list handles_links(Handles* t):
    return [t.slots[s].link for s in range(t.n)]


cdef inline list handles_free_slots(Handles* t):
    # The free stack, the next slot to reuse first.
    cdef list out = []
    cdef int slot = t.free
    while slot != NIL:
        out.append(slot)
        slot = t.slots[slot].link
    return out


cdef inline int handles_load(Handles* t, list tags, list free, unsigned int epoch,
                             unsigned long long cid) except -1:
    # Fill *t (whose old storage is the caller's) with these tags and free
    # stack (the next slot to reuse first), for container cid; every other
    # slot below GEN_LIMIT is held.  tags and free must have passed the state
    # checks, and cid must be above every id in tags.
    cdef Py_ssize_t n = len(tags), cap = MIN_SLOTS, i
    cdef int slot
    while cap < n:
        cap = next_cap(cap, "")
    handles_new(t, cap, epoch, cid)
    for i in range(n):
        tag = tags[i]
        t.slots[i].cid = tag >> GEN_BITS
        t.slots[i].gen = tag & GEN_LIMIT
        t.slots[i].link = NIL if t.slots[i].gen == GEN_LIMIT else LIVE
    t.n = n
    for i in reversed(range(len(free))):
        slot = free[i]
        handles_release(t, slot)
    return 0
