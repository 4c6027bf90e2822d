"""The generation-handle slot table shared by Heap and TimingWheel (pure Python).

Every item of a Heap or a TimingWheel holds a slot of a table; its handle
names the id ``cid`` of the container that issued it, the slot and the
slot's generation ``gen``, in one of two forms:

- compact, ``cid << 44 | gen << 24 | slot``, when ``cid < 2**16``,
  ``gen < 2**20`` and ``slot < 2**24``: below ``2**60``, an int of 32 bytes;
- wide, ``cid << 64 | gen << 32 | slot``, otherwise: ``2**64`` or more (no
  container id is 0), an int of 48 bytes.

A table issues the compact form whenever it fits, and also accepts the wide
form of a compact handle (the handles of a version 2 state made before
compact handles existed).  A freed slot goes on a free stack, and taking it
again moves it to the next generation, so the handles of its earlier
occupants go stale; a slot whose generation reaches ``GEN_LIMIT`` is retired
for good.  When the structure empties, a table of more than
``RESET_MIN_SLOTS`` slots starts afresh at an epoch above every generation
issued so far.  So a container never issues a handle twice.

Container ids come from one counter for the whole process (:func:`new_cid`),
shared by every structure of both implementations, and are never given
twice: a handle of one container cannot name an item of another, whatever
their slots and generations.  This is exact, not a matter of chance: a
table keeps, for each held slot, the ``tag`` (``cid << 32 | gen``) of its
item, and a handle names an item only if its container id, generation and
slot are the item's.  A copy (``copy``, ``pickle``) keeps the tags of the
items it copied, so their handles stay valid in it, and issues its own under
a new id.  Ids are unique within a process: a state loaded from another
process moves the counter past the ids it holds, so containers made after
the load never repeat them (one made before, in this process, may have
issued the same handle).

This module is the Python half; ``src/_handles.pxd`` is the C half, with the
same constants (``tests/test_handles.py`` checks that they agree) and the
same rules.  Neither is a twin of a structure: both cores use their own half.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Sequence

__all__ = [
    "SLOT_BITS",
    "SLOT_MASK",
    "GEN_BITS",
    "GEN_MASK",
    "GEN_LIMIT",
    "CID_LIMIT",
    "TAG_LIMIT",
    "HANDLE_LIMIT",
    "MAX_SLOTS",
    "MIN_SLOTS",
    "RESET_MIN_SLOTS",
    "NIL",
    "LIVE",
    "COMPACT_SLOT_BITS",
    "COMPACT_GEN_BITS",
    "COMPACT_CID_BITS",
    "COMPACT_LIMIT",
    "CONSTANTS",
    "Handles",
    "handle_of",
    "parts",
    "new_cid",
    "next_cap",
    "is_tag",
    "load_plan",
    "tags_valid",
    "top_cid",
    "claim",
    "all_claimed",
    "check_table",
    "stale_message",
    "unsupported_version",
]

#: A wide handle is ``tag << SLOT_BITS | slot``; a slot's tag is ``cid << GEN_BITS | gen``.
SLOT_BITS = 32
#: The slot part of a wide handle.
SLOT_MASK = (1 << SLOT_BITS) - 1
#: The generation part of a tag.
GEN_BITS = 32
GEN_MASK = (1 << GEN_BITS) - 1
#: A slot whose generation reaches this is retired, so handles never repeat.
GEN_LIMIT = (1 << 32) - 1
#: Container ids are below this (64-bit unsigned integers), and above 0.
CID_LIMIT = 1 << 64
#: Every tag is below this.
TAG_LIMIT = CID_LIMIT << GEN_BITS
#: Every handle is below this (a 128-bit unsigned integer).
HANDLE_LIMIT = TAG_LIMIT << SLOT_BITS
#: A compact handle is ``cid << 44 | gen << 24 | slot``, each part below its limit.
COMPACT_SLOT_BITS = 24
COMPACT_GEN_BITS = 20
COMPACT_CID_BITS = 16
#: Every compact handle is below this (an int of two 30-bit digits); every wide one is 2**64 or more.
COMPACT_LIMIT = 1 << (COMPACT_CID_BITS + COMPACT_GEN_BITS + COMPACT_SLOT_BITS)
_C_CID_SHIFT = COMPACT_GEN_BITS + COMPACT_SLOT_BITS
_C_GEN_MASK = (1 << COMPACT_GEN_BITS) - 1
_C_SLOT_MASK = (1 << COMPACT_SLOT_BITS) - 1
#: The most slots a table holds: slot numbers fit a C int.
MAX_SLOTS = (1 << 31) - 1
#: Slots a fresh table has room for.
MIN_SLOTS = 8
#: Below this many slots an emptied structure keeps its slot table.
RESET_MIN_SLOTS = 64
#: The end of the free stack.
NIL = -1
#: The link of a slot that holds an item.
LIVE = -2

#: The constants the C half must agree with.
CONSTANTS = {
    "SLOT_BITS": SLOT_BITS,
    "SLOT_MASK": SLOT_MASK,
    "GEN_BITS": GEN_BITS,
    "GEN_LIMIT": GEN_LIMIT,
    "CID_LIMIT": CID_LIMIT,
    "HANDLE_LIMIT": HANDLE_LIMIT,
    "MAX_SLOTS": MAX_SLOTS,
    "MIN_SLOTS": MIN_SLOTS,
    "RESET_MIN_SLOTS": RESET_MIN_SLOTS,
    "NIL": NIL,
    "LIVE": LIVE,
    "COMPACT_SLOT_BITS": COMPACT_SLOT_BITS,
    "COMPACT_GEN_BITS": COMPACT_GEN_BITS,
    "COMPACT_CID_BITS": COMPACT_CID_BITS,
    "COMPACT_LIMIT": COMPACT_LIMIT,
}


_cid_lock = threading.Lock()
_last_cid = 0


def new_cid(above: int = 0) -> int:
    """A container id that this process never gave before, above ``above`` if it can be.

    One counter for every structure of both implementations (the compiled
    cores call this too), under a lock: ids are unique across threads.  A
    loaded state passes the highest id it holds as ``above``, so that ids
    given later never repeat one of its ids; an id so high that the counter
    would run out (only a made-up state holds one) does not move it.
    """
    global _last_cid
    with _cid_lock:
        cid = max(_last_cid, above) + 1
        if cid >= CID_LIMIT:
            cid = _last_cid + 1
            if cid >= CID_LIMIT:
                raise OverflowError("container ids are exhausted")
        _last_cid = cid
    return cid


def stale_message(handle: object, container: str) -> str:
    """The message of the ``KeyError`` for a handle that names no item."""
    return (
        f"stale or foreign handle {handle!r}: its item has left this {container}, "
        f"or another container issued it"
    )


def unsupported_version(kind: str, version: object) -> str:
    """The message of the ``ValueError`` for a state of a version not loaded."""
    if version == 1 and type(version) is int:
        return (
            f"unsupported {kind} state version 1: its handles, made before handles named "
            f"their container, could name items of another container; rebuild the {kind} "
            f"from its items with the dq_core that pickled it"
        )
    return f"unsupported {kind} state version {version!r}"


def next_cap(cap: int, full: str) -> int:
    """The slot capacity after ``cap``: doubled, at most ``MAX_SLOTS``.

    Raises ``MemoryError(full)`` when ``cap`` is already ``MAX_SLOTS``.
    """
    if cap >= MAX_SLOTS:
        raise MemoryError(full)
    return min(2 * cap, MAX_SLOTS)


class Handles:
    """A slot table: each slot's latest handle, links (LIVE or the free stack), epoch.

    The Python half keeps each slot's whole latest handle rather than its
    tag: issuing and checking a handle then cost one list read, no
    arithmetic on these wide ints.
    """

    __slots__ = ("handles", "links", "free", "epoch", "cap", "cid", "low", "high", "step", "base", "fresh")

    handles: list[int]  # handle of the slot's latest occupant
    links: list[int]  # LIVE, or the next free slot below (NIL at the bottom)
    free: int  # top of the free stack, or NIL
    epoch: int  # generation of slots made afresh
    cap: int  # slots made before the next growth check
    cid: int  # the id of the container, in the handles it issues
    low: int  # the container's first handle of its form: cid << 44 (compact) or cid << 64
    high: int  # a handle of ours in [low, high) can take the next generation in its form
    step: int  # one generation, in a handle of that form
    base: int  # the handle of slot 0 made afresh
    fresh: int  # slots made afresh below this have the handle base | slot

    def __init__(self, cid: int, epoch: int = 0) -> None:
        self.handles = []
        self.links = []
        self.free = NIL
        self.epoch = epoch
        self.cap = MIN_SLOTS
        self.cid = cid
        if cid < 1 << COMPACT_CID_BITS:
            self.low = cid << _C_CID_SHIFT
            self.step = 1 << COMPACT_SLOT_BITS
            self.high = self.low | _C_GEN_MASK << COMPACT_SLOT_BITS
        else:
            self.low = cid << (GEN_BITS + SLOT_BITS)
            self.step = 1 << SLOT_BITS
            self.high = self.low | (GEN_LIMIT - 1) << SLOT_BITS
        self.base = handle_of(cid, epoch, 0)
        self.fresh = 1 << (COMPACT_SLOT_BITS if self.base < COMPACT_LIMIT else SLOT_BITS)

    @property
    def tags(self) -> list[int]:
        """The tag (``cid << GEN_BITS | gen``) of every slot."""
        return [cid << GEN_BITS | gen for cid, gen, _ in map(parts, self.handles)]

    @property
    def gens(self) -> list[int]:
        """The generation of every slot."""
        return [parts(h)[1] for h in self.handles]

    def take(self, full: str) -> int:
        """Hold a slot and return it; ``MemoryError(full)`` past MAX_SLOTS."""
        # A reused slot moves to the next generation, so handles of its
        # earlier occupants go stale; at GEN_LIMIT it is retired for good.
        handles, links = self.handles, self.links
        slot = self.free
        while slot != NIL:
            self.free = links[slot]
            h = handles[slot]
            if self.low <= h < self.high:  # ours, and the next generation keeps its form
                handles[slot] = h + self.step
                links[slot] = LIVE
                return slot
            # the other form, or the handle of an item copied from another
            # container: ours from now on
            gen = parts(h)[1] + 1
            handles[slot] = handle_of(self.cid, gen, slot)
            if gen < GEN_LIMIT:
                links[slot] = LIVE
                return slot
            links[slot] = NIL
            slot = self.free
        slot = len(handles)
        if slot == self.cap:
            self.cap = next_cap(slot, full)
        handles.append(self.base | slot if slot < self.fresh else handle_of(self.cid, self.epoch, slot))
        links.append(LIVE)
        return slot

    def release(self, slot: int) -> None:
        """Put a held slot back on the free stack."""
        self.links[slot] = self.free
        self.free = slot

    def handle(self, slot: int) -> int:
        """The handle of the item in ``slot``."""
        return self.handles[slot]

    def find(self, handle: object) -> int:
        """The held slot behind ``handle``, or NIL if it is stale, foreign or unknown.

        Raises ``TypeError`` if ``handle`` is not an int.  Runs no user code,
        even for an int subclass.  The wide form of a compact handle names
        its item too (the handles of a state made before compact handles).
        """
        if type(handle) is not int:
            # issubclass(type(...)) and int.__index__ run no user code on an
            # int subclass (nor __class__), as the compiled half's C checks.
            if not issubclass(type(handle), int):
                raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
            handle = int.__index__(handle)  # type: ignore[arg-type]
        # The slot of a compact handle, and of a wide one below 2**24 (the
        # literal: no global looked up); anything else goes the slow way.
        slot = handle & 0xFFFFFF
        handles = self.handles
        if slot < len(handles) and handles[slot] == handle and self.links[slot] == LIVE:
            return slot
        return self._find_wide(handle)

    def _find_wide(self, handle: int) -> int:
        # A wide handle of a slot from 2**24 on, or the wide form of a
        # compact handle; no range check needed: a negative handle, or one
        # of 2**128 or more, is no slot's.
        if handle < CID_LIMIT:  # compact, or in no form
            return NIL
        slot = handle & SLOT_MASK
        handles = self.handles
        if slot < len(handles) and self.links[slot] == LIVE and parts(handles[slot]) == parts(handle):
            return slot
        return NIL

    def spent(self) -> int:
        """The epoch to start afresh at once the structure is empty, or NIL.

        NIL: keep the table (it is small, or its generations are too high
        for a new epoch to stay clear of them).
        """
        handles = self.handles
        if len(handles) > RESET_MIN_SLOTS:
            top = max(handles)
            if min(handles) >= self.low and top < self.high + self.step:
                # Every slot's handle is this container's, in one form (the
                # usual case): the highest handle has the highest
                # generation, found without a wide int made per slot.
                epoch = (top - self.low) // self.step + 1
            else:
                epoch = max(self.gens) + 1
            # Every handle ever issued has a generation below the new epoch,
            # so slots made afresh cannot repeat one.
            if epoch < GEN_LIMIT // 2:
                return epoch
        return NIL

    def free_slots(self) -> list[int]:
        """The free stack, the next slot to reuse first."""
        out = []
        links = self.links
        slot = self.free
        while slot != NIL:
            out.append(slot)
            slot = links[slot]
        return out

    @classmethod
    def load(cls, tags: Sequence[int], free: Iterable[int], epoch: int, cid: int) -> Handles:
        """A table with these tags and free stack (next to reuse first), for container ``cid``.

        Every other slot below GEN_LIMIT is held.  The arguments must have
        passed the state checks below, and ``cid`` must be new
        (``new_cid(top_cid(tags))``).
        """
        t = cls(cid, epoch)
        t.handles = [handle_of(tag >> GEN_BITS, tag & GEN_MASK, slot) for slot, tag in enumerate(tags)]
        t.links = [NIL if tag & GEN_MASK == GEN_LIMIT else LIVE for tag in tags]
        while t.cap < len(t.handles):
            t.cap = next_cap(t.cap, "")
        for slot in reversed(list(free)):
            t.release(slot)
        return t


def handle_of(cid: int, gen: int, slot: int) -> int:
    """The handle of container ``cid``'s item in ``slot`` at generation ``gen``: compact if it fits."""
    if cid < 1 << COMPACT_CID_BITS and gen < 1 << COMPACT_GEN_BITS and slot < 1 << COMPACT_SLOT_BITS:
        return cid << _C_CID_SHIFT | gen << COMPACT_SLOT_BITS | slot
    return cid << (GEN_BITS + SLOT_BITS) | gen << SLOT_BITS | slot


def parts(handle: int) -> tuple[int, int, int]:
    """``(cid, gen, slot)`` of a handle in either form (of a non-negative int)."""
    if handle < COMPACT_LIMIT:
        return handle >> _C_CID_SHIFT, handle >> COMPACT_SLOT_BITS & _C_GEN_MASK, handle & _C_SLOT_MASK
    return handle >> (GEN_BITS + SLOT_BITS), handle >> SLOT_BITS & GEN_MASK, handle & SLOT_MASK


def load_plan(tags: Sequence[int]) -> tuple[list[int], list[int]]:
    """For the compiled half's load: the ids in ``tags``, and every slot's link.

    A slot's link is ``LIVE - k`` (a retired slot's: ``k``), its latest
    occupant's id ``ids[k - 1]`` (``k`` is 0 for the loading container's own
    id, which no loaded slot has); the free slots are released afterwards.
    """
    index: dict[int, int] = {}
    links = []
    for tag in tags:
        k = index.setdefault(tag >> GEN_BITS, len(index) + 1)
        links.append(k if tag & GEN_MASK == GEN_LIMIT else LIVE - k)
    return list(index), links


# -- state checks (both implementations load through these) ----------------


def is_tag(value: object, epoch: int) -> bool:
    """True for a plain int below TAG_LIMIT, of a container id above 0, whose generation is in ``[epoch, GEN_LIMIT]``."""
    return (
        type(value) is int and 1 << GEN_BITS <= value < TAG_LIMIT and epoch <= value & GEN_MASK <= GEN_LIMIT
    )


def tags_valid(tags: Sequence[object], epoch: int) -> bool:
    """True if there are at most MAX_SLOTS tags, each one valid (:func:`is_tag`)."""
    return len(tags) <= MAX_SLOTS and all(is_tag(t, epoch) for t in tags)


def top_cid(tags: Sequence[int]) -> int:
    """The highest container id in ``tags`` (0 if none)."""
    return max(tags, default=0) >> GEN_BITS


def claim(owner: bytearray, tags: Sequence[int], slot: object) -> bool:
    """Mark ``slot`` as free or live; False if it is no slot, retired or taken."""
    if type(slot) is not int or not 0 <= slot < len(tags):
        return False
    if tags[slot] & GEN_MASK == GEN_LIMIT or owner[slot]:
        return False
    owner[slot] = 1
    return True


def all_claimed(owner: bytearray, tags: Sequence[int]) -> bool:
    """True if every slot below GEN_LIMIT is free or live (once, by ``claim``)."""
    retired = sum(1 for t in tags if t & GEN_MASK == GEN_LIMIT)
    return sum(owner) == len(tags) - retired


def check_table(
    tags: Sequence[int], links: Sequence[int], free: int, epoch: int, held: Any, cid: int
) -> None:
    """Assert the invariants of a slot table; ``held``: the slots holding items."""
    n = len(tags)
    assert len(links) == n and 0 <= epoch < GEN_LIMIT and 0 < cid < CID_LIMIT
    seen = set()
    slot = free
    while slot != NIL:
        assert 0 <= slot < n and slot not in seen and tags[slot] & GEN_MASK < GEN_LIMIT
        seen.add(slot)
        slot = links[slot]
    for s in range(n):
        gen = tags[s] & GEN_MASK
        assert 0 <= tags[s] < TAG_LIMIT and epoch <= gen <= GEN_LIMIT
        assert (links[s] == LIVE) == (s in held)
        assert (s in held) + (s in seen) == (gen < GEN_LIMIT), s
