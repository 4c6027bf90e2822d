"""Clocks for the tests: an event loop whose clock is virtual.

``VirtualClockLoop`` is the default (selector) event loop on a virtual
clock: its selector polls without waiting and moves the clock on by the
timeout the loop asked for, so the loop jumps from one timer to the next
and 60 s of timers run through in no time.  ``perf/bench_aio.py`` runs
its timer run-through on it too.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any, Optional

__all__ = ["VirtualClockLoop"]


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
