"""The generation-handle slot table shared by Heap and TimingWheel (pure Python).

Every item of a Heap or a TimingWheel holds a slot of a table; its handle is
``gen << SLOT_BITS | slot``.  A freed slot goes on a free stack, and taking it
again moves it to the next generation, so the handles of its earlier
occupants go stale; a slot whose generation reaches ``GEN_LIMIT`` is retired
for good, so a handle is never issued twice.  When the structure empties, a
table of more than ``RESET_MIN_SLOTS`` slots starts afresh at an epoch above
every generation issued so far.

This module is the Python half; ``src/_handles.pxd`` is the C half, with the
same constants (``tests/test_handles.py`` checks that they agree) and the
same rules.  Neither is a twin of a structure: both cores use their own half.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

__all__ = [
    "SLOT_BITS", "SLOT_MASK", "GEN_LIMIT", "HANDLE_LIMIT", "MAX_SLOTS", "MIN_SLOTS",
    "RESET_MIN_SLOTS", "NIL", "LIVE", "CONSTANTS", "Handles", "next_cap",
    "is_generation", "gens_valid", "claim", "all_claimed", "check_table",
]

#: A handle is ``gen << SLOT_BITS | slot``.
SLOT_BITS = 32
#: The slot part of a handle.
SLOT_MASK = (1 << SLOT_BITS) - 1
#: A slot whose generation reaches this is retired, so handles never repeat.
GEN_LIMIT = (1 << 32) - 1
#: Every handle is below this (a 64-bit unsigned integer).
HANDLE_LIMIT = 1 << 64
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
    "SLOT_BITS": SLOT_BITS, "SLOT_MASK": SLOT_MASK, "GEN_LIMIT": GEN_LIMIT,
    "HANDLE_LIMIT": HANDLE_LIMIT, "MAX_SLOTS": MAX_SLOTS, "MIN_SLOTS": MIN_SLOTS,
    "RESET_MIN_SLOTS": RESET_MIN_SLOTS, "NIL": NIL, "LIVE": LIVE,
}


def next_cap(cap: int, full: str) -> int:
    """The slot capacity after ``cap``: doubled, at most ``MAX_SLOTS``.

    Raises ``MemoryError(full)`` when ``cap`` is already ``MAX_SLOTS``.
    """
    if cap >= MAX_SLOTS:
        raise MemoryError(full)
    return min(2 * cap, MAX_SLOTS)


class Handles:
    """A slot table: generations, links (LIVE or the free stack), epoch."""

    __slots__ = ("gens", "links", "free", "epoch", "cap")

    gens: list[int]  # generation of the slot's latest occupant
    links: list[int]  # LIVE, or the next free slot below (NIL at the bottom)
    free: int  # top of the free stack, or NIL
    epoch: int  # generation of slots made afresh
    cap: int  # slots made before the next growth check

    def __init__(self, epoch: int = 0) -> None:
        self.gens = []
        self.links = []
        self.free = NIL
        self.epoch = epoch
        self.cap = MIN_SLOTS

    def take(self, full: str) -> int:
        """Hold a slot and return it; ``MemoryError(full)`` past MAX_SLOTS."""
        # A reused slot moves to the next generation, so handles of its
        # earlier occupants go stale; at GEN_LIMIT it is retired for good.
        gens, links = self.gens, self.links
        slot = self.free
        while slot != NIL:
            self.free = links[slot]
            gen = gens[slot] + 1
            gens[slot] = gen
            if gen < GEN_LIMIT:
                links[slot] = LIVE
                return slot
            links[slot] = NIL
            slot = self.free
        slot = len(gens)
        if slot == self.cap:
            self.cap = next_cap(slot, full)
        gens.append(self.epoch)
        links.append(LIVE)
        return slot

    def release(self, slot: int) -> None:
        """Put a held slot back on the free stack."""
        self.links[slot] = self.free
        self.free = slot

    def handle(self, slot: int) -> int:
        """The handle of the item in ``slot``."""
        return (self.gens[slot] << SLOT_BITS) | slot

    def find(self, handle: object) -> int:
        """The held slot behind ``handle``, or NIL if it is stale or unknown.

        Raises ``TypeError`` if ``handle`` is not an int.  Runs no user code,
        even for an int subclass.
        """
        if type(handle) is not int:
            # issubclass(type(...)) and int.__index__ run no user code on an
            # int subclass (nor __class__), as the compiled half's C checks.
            if not issubclass(type(handle), int):
                raise TypeError(f"handle must be an int, not {type(handle).__name__!r}")
            handle = int.__index__(handle)  # type: ignore[arg-type]
        if handle < 0 or handle >= HANDLE_LIMIT:
            return NIL
        slot = handle & SLOT_MASK
        if (slot >= len(self.gens) or self.links[slot] != LIVE
                or self.gens[slot] != handle >> SLOT_BITS):
            return NIL
        return slot

    def spent(self) -> int:
        """The epoch to start afresh at once the structure is empty, or NIL.

        NIL: keep the table (it is small, or its generations are too high
        for a new epoch to stay clear of them).
        """
        gens = self.gens
        if len(gens) > RESET_MIN_SLOTS:
            epoch = max(gens) + 1
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
    def load(cls, gens: Sequence[int], free: Iterable[int], epoch: int) -> Handles:
        """A table with these generations and free stack (next to reuse first).

        Every other slot below GEN_LIMIT is held.  The arguments must have
        passed the state checks below.
        """
        t = cls(epoch)
        t.gens = list(gens)
        t.links = [NIL if g == GEN_LIMIT else LIVE for g in t.gens]
        while t.cap < len(t.gens):
            t.cap = next_cap(t.cap, "")
        for slot in reversed(list(free)):
            t.release(slot)
        return t


# -- state checks (both implementations load through these) ----------------


def is_generation(value: object, epoch: int) -> bool:
    """True for a plain int in ``[epoch, GEN_LIMIT]``."""
    return type(value) is int and epoch <= value <= GEN_LIMIT


def gens_valid(gens: Sequence[object], epoch: int) -> bool:
    """True if there are at most MAX_SLOTS generations, each in ``[epoch, GEN_LIMIT]``."""
    return len(gens) <= MAX_SLOTS and all(is_generation(g, epoch) for g in gens)


def claim(owner: bytearray, gens: Sequence[int], slot: object) -> bool:
    """Mark ``slot`` as free or live; False if it is no slot, retired or taken."""
    if type(slot) is not int or not 0 <= slot < len(gens):
        return False
    if gens[slot] == GEN_LIMIT or owner[slot]:
        return False
    owner[slot] = 1
    return True


def all_claimed(owner: bytearray, gens: Sequence[int]) -> bool:
    """True if every slot below GEN_LIMIT is free or live (once, by ``claim``)."""
    return sum(owner) == len(gens) - gens.count(GEN_LIMIT)


def check_table(gens: Sequence[int], links: Sequence[int], free: int, epoch: int,
                held: Any) -> None:
    """Assert the invariants of a slot table; ``held``: the slots holding items."""
    n = len(gens)
    assert len(links) == n and 0 <= epoch < GEN_LIMIT
    seen = set()
    slot = free
    while slot != NIL:
        assert 0 <= slot < n and slot not in seen and gens[slot] < GEN_LIMIT
        seen.add(slot)
        slot = links[slot]
    for s in range(n):
        assert epoch <= gens[s] <= GEN_LIMIT
        assert (links[s] == LIVE) == (s in held)
        assert (s in held) + (s in seen) == (gens[s] < GEN_LIMIT), s
