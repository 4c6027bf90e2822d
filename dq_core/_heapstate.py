"""The pickled state of a Heap, shared by both implementations.

``Heap.__getstate__`` returns ``(version, seq, epoch, tags, free, live)``:

- ``seq``: the next insertion sequence number;
- ``epoch``: the generation given to slots made afresh;
- ``tags``: every slot's tag, ``cid << 32 | gen``: the id of the container
  that issued its latest occupant's handle and its generation
  (``GEN_LIMIT``: retired for good), the container's id above 0.  Version
  1 states (bare generations, before container ids) are refused: their
  handles could not be told from another container's;
- ``free``: the free slots, the next one to reuse last;
- ``live``: ``(slot, priority, seq, item)`` for every item, in pop order.

Both implementations load through :func:`check_state`, so they accept and
refuse exactly the same states with the same errors, and neither touches the
heap before the whole state has passed.
"""

from __future__ import annotations

from typing import Any, Sequence, cast

from ._handles import GEN_LIMIT, MAX_SLOTS, all_claimed, claim, tags_valid, unsupported_version

__all__ = ["STATE_VERSION", "SEQ_LIMIT", "SEQ_SPAN", "Live", "check_state"]

#: Version tag of the state shared by both implementations' pickles.
STATE_VERSION = 2
#: The versions loaded: 1, with bare generations where 2 has tags, is refused.
_LOADS = (2,)
#: A state's sequence numbers stay below this, far from the compiled counter's 2**64.
SEQ_LIMIT = 2**63
#: A heap numbers its live items afresh (0, 1, ... in pop order) when its
#: counter would pass this: the compiled core keeps a sequence number in 33
#: bits beside the slot.  Both implementations do it at the same count, and
#: when they load a state whose counter is past it.
SEQ_SPAN = 2**33

Live = tuple[int, float, int, Any]  # (slot, priority, seq, item)

# Only these containers: any other could run user code while it is read.
_SEQUENCES = (list, tuple)


def _invalid(why: str) -> ValueError:
    return ValueError(f"invalid Heap state: {why}")


def _is_int(value: object, low: int, high: int) -> bool:
    # bools and int subclasses are refused: a state holds plain ints
    return type(value) is int and low <= value < high


def check_state(state: object) -> tuple[int, int, list[int], list[int], list[Live]]:
    """Validate a Heap state; return ``(seq, epoch, tags, free, live)``, copied.

    Raises ``ValueError`` (or ``TypeError`` for a state that is not a
    sequence at all) naming what is wrong; nothing is changed anywhere.
    """
    if type(state) not in _SEQUENCES:
        raise TypeError(f"Heap state must be a tuple, not {type(state).__name__!r}")
    fields = cast("Sequence[Any]", state)
    if len(fields) != 6:
        raise _invalid(f"expected 6 fields, got {len(fields)}")
    version, seq, epoch, tags, free, live = fields
    if type(version) is not int or version not in _LOADS:
        raise ValueError(unsupported_version("Heap", version))
    if not _is_int(seq, 0, SEQ_LIMIT):
        raise _invalid("seq must be an int in [0, 2**63)")
    if not _is_int(epoch, 0, GEN_LIMIT):
        raise _invalid("epoch must be an int in [0, GEN_LIMIT)")
    for name, field in (("tags", tags), ("free", free), ("live", live)):
        if type(field) not in _SEQUENCES:
            raise _invalid(f"{name} must be a list, not {type(field).__name__!r}")
    tags = list(tags)
    if len(tags) > MAX_SLOTS:
        raise _invalid("too many slots")
    if not tags_valid(tags, epoch):
        raise _invalid(
            "every tag must be an int cid << 32 | gen, cid in [1, 2**64), gen in [epoch, GEN_LIMIT]"
        )
    # Every slot below GEN_LIMIT is either free or holds one item; a
    # retired slot is neither.
    owner = bytearray(len(tags))
    free = list(free)
    for s in free:
        if not claim(owner, tags, s):
            raise _invalid(f"bad free slot {s!r}")
    out: list[Live] = []
    prev: tuple[float, int] | None = None
    for i, entry in enumerate(live):
        if type(entry) not in _SEQUENCES or len(entry) != 4:
            raise _invalid(f"live[{i}] must be (slot, priority, seq, item)")
        slot, key, s, item = entry
        if not claim(owner, tags, slot):
            raise _invalid(f"live[{i}] has a bad slot {slot!r}")
        if type(key) is not float or key != key:
            raise _invalid(f"live[{i}] priority must be a float other than NaN")
        if not _is_int(s, 0, seq):
            raise _invalid(f"live[{i}] seq must be an int below the state's seq")
        if prev is not None and not prev < (key, s):
            raise _invalid(f"live[{i}] is out of order")
        prev = (key, s)
        out.append((slot, key, s, item))
    if not all_claimed(owner, tags):
        raise _invalid("a slot is neither free, live nor retired")
    return seq, epoch, tags, free, out
