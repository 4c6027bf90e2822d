# cython: language_level=3
# The generation-handle slot table shared by the compiled Heap and TimingWheel.
#
# Every item holds a slot of a table; its handle names the container that
# issued it (cid: dq_core._handles.new_cid, one counter for the process, so
# a handle of one container never names an item of another), the slot and
# the slot's generation.  A handle has one of two forms:
#   compact  cid << 44 | gen << 24 | slot   if cid < 2**16, gen < 2**20, slot < 2**24
#   wide     cid << 64 | gen << 32 | slot   otherwise
# A compact handle is below 2**60, an int of 32 bytes (a wide one: 48); the
# two ranges never meet, as no cid is 0.  A table issues the compact form
# whenever it can, and accepts the wide form of a compact handle too (the
# handles of a version 2 state made before compact handles existed).
#
# A slot is 8 bytes: its generation and a link that names the id of its
# latest occupant by an index k (0: this container's own; k >= 1:
# t.cids[k - 1], the ids of items copied from other containers, so that a
# copy keeps the original's handles working): LIVE - k while the slot holds
# the item, k once it has left.  A freed slot goes on a free stack (an array
# of its own); taking it again moves it to the next generation under this
# container's id, so the handles of its earlier occupants go stale; a slot
# whose generation reaches GEN_LIMIT is retired for good, so a handle is
# never issued twice.  When the structure empties, a table of more than
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
    #define DQ_SLOT_BITS 32                       /* wide: handle = cid << 64 | gen << SLOT_BITS | slot */
    #define DQ_GEN_BITS 32                        /* tag = cid << GEN_BITS | gen */
    #define DQ_SLOT_MASK 0xFFFFFFFFULL            /* the slot part of a wide handle */
    #define DQ_GEN_LIMIT 0xFFFFFFFFU              /* a generation that retires its slot */
    #define DQ_MAX_SLOTS 0x7FFFFFFF               /* slot numbers fit a C int */
    #define DQ_MIN_SLOTS 8                        /* room of a fresh table */
    #define DQ_RESET_MIN_SLOTS 64                 /* smaller tables are kept when emptied */
    #define DQ_C_SLOT_BITS 24                     /* compact: cid << 44 | gen << 24 | slot */
    #define DQ_C_GEN_BITS 20
    #define DQ_C_CID_BITS 16
    #define DQ_C_SLOT_MASK 0xFFFFFFULL
    #define DQ_C_GEN_MASK 0xFFFFFULL
    #define DQ_C_LIMIT (1ULL << 60)               /* every compact handle is below this */
    """
    const int SLOT_BITS "DQ_SLOT_BITS"
    const int GEN_BITS "DQ_GEN_BITS"
    const unsigned long long SLOT_MASK "DQ_SLOT_MASK"
    const unsigned int GEN_LIMIT "DQ_GEN_LIMIT"
    const Py_ssize_t MAX_SLOTS "DQ_MAX_SLOTS"
    const Py_ssize_t MIN_SLOTS "DQ_MIN_SLOTS"
    const Py_ssize_t RESET_MIN_SLOTS "DQ_RESET_MIN_SLOTS"
    const int C_SLOT_BITS "DQ_C_SLOT_BITS"
    const int C_GEN_BITS "DQ_C_GEN_BITS"
    const int C_CID_BITS "DQ_C_CID_BITS"
    const unsigned long long C_SLOT_MASK "DQ_C_SLOT_MASK"
    const unsigned long long C_GEN_MASK "DQ_C_GEN_MASK"
    const unsigned long long C_LIMIT "DQ_C_LIMIT"

cdef extern from "dq_shortcuts.h":
    # list.append, 0 or -1 with an exception set (handles_put then undoes its slot)
    int _list_append "dq_list_append"(object, object) noexcept

cdef enum:
    NIL = -1    # the end of the free stack; "no slot"
    LIVE = -2   # the link of a slot that holds an item of this container's id (LIVE - k: of t.cids[k - 1])


ctypedef struct Slot:
    unsigned int gen        # generation of the slot's latest occupant
    int link                # LIVE - k while it holds that occupant, k once it left


ctypedef struct Handles:
    Slot* slots
    int* stack              # the free slots, the next to reuse last
    Py_ssize_t n            # slots made
    Py_ssize_t cap          # slots allocated (and room of the stack)
    Py_ssize_t nfree        # free slots
    unsigned int epoch      # generation of slots made afresh
    unsigned long long cid  # this container's id (dq_core._handles.new_cid)
    unsigned long long* cids  # the ids of copied items (LIVE - k: cids[k - 1]), or NULL
    Py_ssize_t ncids


cdef inline dict handle_constants():
    # For the test that both halves agree.
    return {
        "SLOT_BITS": SLOT_BITS, "SLOT_MASK": SLOT_MASK, "GEN_BITS": GEN_BITS,
        "GEN_LIMIT": GEN_LIMIT, "CID_LIMIT": dq_long_from_u128(1, 0),
        "HANDLE_LIMIT": (dq_long_from_u128(1, 0) << GEN_BITS) << SLOT_BITS,
        "MAX_SLOTS": MAX_SLOTS, "MIN_SLOTS": MIN_SLOTS,
        "RESET_MIN_SLOTS": RESET_MIN_SLOTS, "NIL": NIL, "LIVE": LIVE,
        "COMPACT_SLOT_BITS": C_SLOT_BITS, "COMPACT_GEN_BITS": C_GEN_BITS,
        "COMPACT_CID_BITS": C_CID_BITS, "COMPACT_LIMIT": C_LIMIT,
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
    cdef int* stack = <int*>PyMem_Malloc(cap * sizeof(int))
    if slots is NULL or stack is NULL:
        PyMem_Free(slots)
        PyMem_Free(stack)
        raise MemoryError()
    t.slots = slots
    t.stack = stack
    t.n = t.nfree = 0
    t.cap = cap
    t.epoch = epoch
    t.cid = cid
    t.cids = NULL
    t.ncids = 0
    return 0


cdef inline void handles_free(Handles* t) noexcept:
    PyMem_Free(t.slots)
    PyMem_Free(t.stack)
    PyMem_Free(t.cids)
    t.slots = NULL
    t.stack = NULL
    t.cids = NULL
    t.n = t.cap = t.nfree = t.ncids = 0


cdef inline int handles_grow(Handles* t, Py_ssize_t cap) except -1:
    cdef Slot* slots = <Slot*>PyMem_Realloc(t.slots, cap * sizeof(Slot))
    cdef int* stack
    if slots is NULL:
        raise MemoryError()
    t.slots = slots
    stack = <int*>PyMem_Realloc(t.stack, cap * sizeof(int))
    if stack is NULL:
        raise MemoryError()
    t.stack = stack
    t.cap = cap
    return 0


cdef inline int handles_take(Handles* t) noexcept:
    # Hold a slot and return it; NIL if the table must grow first
    # (next_cap, handles_grow and the structure's own arrays, then again).
    # A reused slot moves to the next generation under this container's id
    # (in a copy, the slot of a copied item becomes ours), so handles of its
    # earlier occupants go stale; at GEN_LIMIT it is retired for good.
    cdef Slot* S = t.slots
    cdef int slot
    cdef unsigned int gen
    while t.nfree:
        t.nfree -= 1
        slot = t.stack[t.nfree]
        gen = S[slot].gen + 1
        S[slot].gen = gen
        if gen < GEN_LIMIT:
            S[slot].link = LIVE
            return slot
        S[slot].link = 0  # retired, under our id
    if t.n == t.cap:
        return NIL
    slot = <int>t.n
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
    t.slots[slot].link = LIVE - t.slots[slot].link
    t.stack[t.nfree] = slot
    t.nfree += 1


cdef inline unsigned long long handles_cid(Handles* t, Py_ssize_t slot) noexcept:
    # The id of the slot's latest occupant.
    cdef int k = t.slots[slot].link
    if k < 0:
        k = LIVE - k
    return t.cid if k == 0 else t.cids[k - 1]


cdef inline int handles_top(Handles* t) noexcept:
    # The free slot to reuse next, or NIL.
    return t.stack[t.nfree - 1] if t.nfree else NIL


cdef inline object handles_handle(Handles* t, int slot):
    # The handle of the item in a held slot: compact if it fits.
    cdef unsigned long long cid = handles_cid(t, slot), gen = t.slots[slot].gen
    if (cid >> C_CID_BITS) == 0 and (gen >> C_GEN_BITS) == 0 and (<unsigned int>slot >> C_SLOT_BITS) == 0:
        return dq_long_from_u128(0, (cid << (C_GEN_BITS + C_SLOT_BITS)) | (gen << C_SLOT_BITS) | <unsigned long long>slot)
    return dq_long_from_u128(cid, (gen << SLOT_BITS) | <unsigned long long>slot)


cdef inline bint handles_held(Handles* t, Py_ssize_t slot) noexcept:
    return t.slots[slot].link <= LIVE


cdef inline int handles_find(Handles* t, object handle) except -2:
    # The held slot behind handle, or NIL if it is stale, foreign or unknown;
    # TypeError if it is not an int.  Only C-level checks: nothing here
    # runs user code, even for an int subclass (PyNumber_Index gives an
    # exact int without calling it).
    cdef unsigned long long hi, lo, cid, gen
    cdef Py_ssize_t slot
    cdef Slot* S
    if type(handle) is not int:
        if not isinstance(handle, int):
            raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
        handle = PyNumber_Index(handle)
    if not dq_long_as_u128(handle, &hi, &lo):  # negative, or 2**128 or more
        return NIL
    if hi == 0 and lo < C_LIMIT:  # compact
        slot = <Py_ssize_t>(lo & C_SLOT_MASK)
        cid = lo >> (C_GEN_BITS + C_SLOT_BITS)
        gen = (lo >> C_SLOT_BITS) & C_GEN_MASK
    else:  # wide (no cid is 0: hi == 0 names nothing)
        slot = <Py_ssize_t>(lo & SLOT_MASK)
        cid = hi
        gen = lo >> SLOT_BITS
    if slot >= t.n:
        return NIL
    S = &t.slots[slot]
    if S.link > LIVE or S.gen != gen or handles_cid(t, slot) != cid:
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
    return [(<object>handles_cid(t, s) << GEN_BITS) | t.slots[s].gen for s in range(t.n)]


cdef inline list handles_links(Handles* t):
    # The Python half's links: LIVE for every held slot, the next free slot
    # below for a free one (NIL at the bottom), NIL for a retired one.
    cdef Py_ssize_t i
    out = [LIVE if t.slots[s].link < 0 else NIL for s in range(t.n)]
    for i in range(1, t.nfree):
        out[t.stack[i]] = t.stack[i - 1]
    return out


cdef inline list handles_free_slots(Handles* t):
    # The free stack, the next slot to reuse first.
    return [t.stack[i] for i in range(t.nfree - 1, -1, -1)]


cdef inline int handles_load(Handles* t, list tags, list free, unsigned int epoch,
                             unsigned long long cid, tuple plan) except -1:
    # Fill *t (whose old storage is the caller's) with these tags and free
    # stack (the next slot to reuse first), for container cid; every other
    # slot below GEN_LIMIT is held.  tags and free must have passed the state
    # checks, cid must be above every id in tags, and plan is
    # dq_core._handles.load_plan(tags): the ids in tags, and every slot's
    # link (as if held, but for a retired slot).
    cdef Py_ssize_t n = len(tags), cap = MIN_SLOTS, i
    cdef list ids = plan[0], links = plan[1]
    while cap < n:
        cap = next_cap(cap, "")
    handles_new(t, cap, epoch, cid)
    if ids:
        t.cids = <unsigned long long*>PyMem_Malloc(len(ids) * sizeof(unsigned long long))
        if t.cids is NULL:
            handles_free(t)
            raise MemoryError()
        t.ncids = len(ids)
        for i in range(t.ncids):
            t.cids[i] = ids[i]
    for i in range(n):
        t.slots[i].gen = tags[i] & GEN_LIMIT
        t.slots[i].link = links[i]
    t.n = n
    for i in reversed(range(len(free))):
        handles_release(t, <int>free[i])
    return 0
