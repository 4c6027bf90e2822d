"""The rules both TimingWheel implementations share: constants, state checks.

Neither twin: the compiled ``dq_core._wheelcore`` and the pure
``dq_core._wheelcore_py`` both load pickled states through :func:`check_state`
and assert their bookkeeping through :func:`check_raw`, so they accept and
refuse the same states and hold the same invariants.
"""

from __future__ import annotations

import math
from typing import Any

from ._handles import GEN_LIMIT, NIL, all_claimed, check_table, claim, tags_valid, unsupported_version

__all__ = [
    "MAX_WHEEL_SIZE",
    "TICK_LIMIT",
    "ORIGIN_LIMIT",
    "DUE",
    "FAR",
    "FREE",
    "DUE_LIST",
    "FAR_LIST",
    "WHEEL_LISTS",
    "STATE_VERSION",
    "COUNTER_LIMIT",
    "tick_of",
    "check_state",
    "check_raw",
]

# Shared with the compiled twin (as C constants of dq_core._wheelcore).
#: The most slots per level.
MAX_WHEEL_SIZE = 2**16
#: A deadline whose tick number (deadline / tick) reaches this goes on the
#: far list, served by an exact comparison of deadlines.
TICK_LIMIT = 2**62
#: The clock's reading at construction, in ticks, must lie within this.
ORIGIN_LIMIT = 2**61
# tick[] of a slot outside the wheel proper
DUE, FAR, FREE = -1, -2, -3
# list ids: the due list, the far list, then level * wheel_size + slot + 2
DUE_LIST, FAR_LIST, WHEEL_LISTS = 0, 1, 2
#: The version of the state both implementations pickle to.
STATE_VERSION = 2
# 2 has tags (cid << 32 | gen: dq_core._handles); 1, with bare generations, is refused
_LOADS = (2,)
#: The counters (visited, cascaded) stay below this: 64-bit in the compiled twin.
COUNTER_LIMIT = 2**64


def tick_of(d: float, tick: float) -> int:
    """The absolute tick at which deadline ``d`` is due, or TICK_LIMIT if beyond."""
    q = math.nextafter(d, -math.inf) / tick
    if q >= TICK_LIMIT:
        return TICK_LIMIT
    return math.floor(q) + 1


def check_state(state: Any) -> tuple[Any, ...]:
    """Validate a pickled TimingWheel state (both implementations load through this)."""
    try:
        (version, tick, size, clock, origin, cur, now, epoch, tags, free, live, visited, cascaded) = state
    except (TypeError, ValueError):
        raise ValueError("invalid TimingWheel state") from None
    if not (type(version) is int and version in _LOADS):
        raise ValueError(unsupported_version("TimingWheel", version))
    if not callable(clock):
        raise TypeError(f"clock must be callable, not {type(clock).__name__!r}")

    def bad(what: str) -> ValueError:
        return ValueError(f"invalid TimingWheel state: {what}")

    if not (type(tick) is float and 0 < tick < math.inf):
        raise bad("tick")
    if not (type(size) is int and 2 <= size <= MAX_WHEEL_SIZE and not size & (size - 1)):
        raise bad("wheel_size")
    if not (type(origin) is int and -ORIGIN_LIMIT <= origin <= ORIGIN_LIMIT):
        raise bad("origin")
    if not (type(cur) is int and 0 <= cur <= TICK_LIMIT - origin):
        raise bad("current tick")
    if not (type(now) is float and -math.inf < now < math.inf):
        raise bad("time")
    if not (type(epoch) is int and 0 <= epoch < GEN_LIMIT):
        raise bad("epoch")
    if not all(type(x) is int and 0 <= x < COUNTER_LIMIT for x in (visited, cascaded)):
        raise bad("counters")
    if not (type(tags) is list and type(free) is list and type(live) is list):
        raise bad("slot lists")
    # Snapshots: what is checked is what gets built, whatever a finaliser
    # does to the caller's lists meanwhile.
    tags, free = list(tags), list(free)
    live = [tuple(e) if type(e) in (tuple, list) else e for e in list(live)]
    if not tags_valid(tags, epoch):
        raise bad("generations")
    slots = list(free)
    for entry in live:
        if not (type(entry) is tuple and len(entry) == 4):
            raise bad("timer")
        slot, t, d, _ = entry
        slots.append(slot)
        if type(t) is not int:
            raise bad("timer tick")
        if t == FAR:
            if not (type(d) is float and d == d and tick_of(d, tick) >= TICK_LIMIT):
                raise bad("far deadline")
        elif d is not None or not (t == DUE or cur < t < TICK_LIMIT - origin):
            raise bad("timer tick")
    # every slot below GEN_LIMIT either free or live, once
    owner = bytearray(len(tags))
    if not (all(claim(owner, tags, s) for s in slots) and all_claimed(owner, tags)):
        raise bad("slots")
    return (version, tick, size, clock, origin, cur, now, epoch, tags, free, live, visited, cascaded)


def check_raw(w: dict[str, Any]) -> None:
    """Assert the invariants of a wheel's raw state (both implementations)."""
    bits: int = w["bits"]
    cur: int = w["cur"]
    tk: list[int] = w["tk"]
    nxt: list[int] = w["next"]
    size = 1 << bits
    mask = size - 1

    def list_of(t: int) -> int:
        if t < 0:
            return DUE_LIST if t == DUE else FAR_LIST
        level = 0
        while (t ^ cur) >> ((level + 1) * bits):
            level += 1
        return WHEEL_LISTS + (level << bits) + ((t >> (level * bits)) & mask)

    nlists = WHEEL_LISTS + len(w["occ"]) * size
    assert len(w["head"]) == len(w["tail"]) == nlists
    seen: set[int] = set()
    for lst in range(nlists):
        slot, prev = w["head"][lst], NIL
        while slot != NIL:
            assert slot not in seen and tk[slot] != FREE
            seen.add(slot)
            assert w["prev"][slot] == prev
            assert list_of(tk[slot]) == lst, (slot, lst)
            if lst >= WHEEL_LISTS:
                assert tk[slot] > cur
            prev, slot = slot, nxt[slot]
        assert w["tail"][lst] == prev
        if lst >= WHEEL_LISTS:
            i = lst - WHEEL_LISTS
            assert (w["occ"][i >> bits] >> (i & mask)) & 1 == (w["head"][lst] != NIL), lst
    assert len(seen) == w["len"]
    assert set(w["far"]) == {s for s in seen if tk[s] == FAR}
    check_table(w["tag"], w["links"], w["free"], w["epoch"], seen, w["cid"])
    assert len(tk) == len(w["items"]) == len(w["tag"])
    for s in range(len(tk)):
        if s not in seen:
            assert tk[s] == FREE and w["items"][s] is None
    assert all(0 <= o < (1 << size) for o in w["occ"])
