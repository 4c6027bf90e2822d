"""Clocks for the tests: a fake clock moved by hand, and an event loop on a virtual clock.

``FakeClock`` is the clock every threaded structure's tests pass as
``clock=``: it reads ``now``, which the test sets.  ``VirtualClockLoop`` is the default (selector) event loop on a virtual
clock: its selector polls without waiting and moves the clock on by the
timeout the loop asked for, so the loop jumps from one timer to the next
and 60 s of timers run through in no time.  ``perf/bench_aio.py`` runs
its timer run-through on it too.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any, Optional

__all__ = ["FakeClock", "VirtualClockLoop"]


class FakeClock:
    """A clock the tests move by hand (``clock.now = 5.0``); ``now`` may be any object.

    Picklable, and equal to another FakeClock with the same reading (by
    ``repr``: NaN included), so a copy or an unpickled structure's clock
    compares equal to the original's.
    """

    def __init__(self, now: object = 0.0) -> None:
        self.now = now

    def __call__(self) -> Any:
        return self.now

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeClock) and repr(other.now) == repr(self.now)

    __hash__ = None  # type: ignore[assignment]  # equal by reading, which changes


class _VirtualSelector(selectors.DefaultSelector):
    """Polls without waiting, then moves the loop's virtual clock on by ``timeout``."""

    def __init__(self, clock: list[float]) -> None:
        super().__init__()
        self._clock = clock

    def select(self, timeout: Optional[float] = None) -> list[Any]:
        events: list[Any] = super().select(0)
        if not events and timeout is not None and timeout > 0:
            self._clock[0] += timeout
        return events


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """The default event loop on a virtual clock that jumps to the next timer instead of waiting."""

    def __init__(self) -> None:
        self._virtual = [0.0]
        super().__init__(_VirtualSelector(self._virtual))

    def time(self) -> float:
        return self._virtual[0]
