"""The batch both Timers fire from: what the wheel holds for the next two ticks, in deadline order.

The threaded Timer (``_timer.py``) and the pure ``aio.Timer`` core
(``_aiotimercore_py.py``) take their due timers here; the compiled core
does the same in C.  Taking two ticks ahead lets each timer wait in the
batch for its own deadline instead of firing at the end of its tick.
"""

from __future__ import annotations

import operator
from collections import deque
from typing import Any

# Deadline order, first-in first-out among equal deadlines: by deadline, then
# by the order of scheduling (the wheel hands out timers scheduled at or
# before its time ahead of older ones of the same deadline in a later tick).
order = operator.attrgetter("_when", "_seq")


def take_due(wheel: Any, now: float, batch: deque[Any]) -> list[Any]:
    """Move what ``wheel`` holds for the next two ticks into ``batch``, in deadline order.

    ``batch`` then holds every timer due by ``now`` (those scheduled at or
    before the wheel's time included) and those due within about two
    ticks, which wait there for their own deadline.  Returns the timers
    moved (a list, empty if none).
    """
    due: list[Any] = wheel.advance(now + 2.0 * wheel.tick)
    if due:
        if len(due) > 1:
            due.sort(key=order)
        if batch and order(due[0]) < order(batch[-1]):
            # timers scheduled at or before the wheel's time: into their place
            merged = list(batch)
            merged += due
            merged.sort(key=order)
            batch.clear()
            batch.extend(merged)
        else:
            batch.extend(due)
    return due
