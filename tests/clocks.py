"""Clocks for the tests: a fake clock moved by hand, and an event loop on a virtual clock.

``FakeClock`` is the clock every threaded structure's tests pass as
``clock=``: it reads ``now``, which the test sets, moved on by ``step`` at
every reading if given.  ``VirtualClockLoop`` is the default (selector)
event loop on a virtual clock, ``now``: its selector polls without waiting
and moves the clock on by the timeout the loop asked for, so the loop jumps
from one timer to the next and 60 s of timers run through in no time; with
``jump=False`` only the test moves it.  ``perf/bench_aio.py`` runs its timer
run-through on it too.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any, Optional

__all__ = ["FakeClock", "VirtualClockLoop"]


class FakeClock:
    """A clock the tests move by hand (``clock.now = 5.0``); ``now`` may be any object.

    With ``step``, every reading first moves ``now`` on by it, so time passes
    between any two readings.  Picklable, and equal to another FakeClock with
    the same reading (by ``repr``: NaN included), so a copy or an unpickled
    structure's clock compares equal to the original's.
    """

    def __init__(self, now: object = 0.0, step: float = 0.0) -> None:
        self.now = now
        self.step = step

    def __call__(self) -> Any:
        if self.step:
            self.now += self.step  # type: ignore[operator]
        return self.now

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeClock) and repr(other.now) == repr(self.now)

    __hash__ = None  # type: ignore[assignment]  # equal by reading, which changes


class _VirtualSelector(selectors.DefaultSelector):
    """Polls without waiting; when idle, moves the loop's virtual clock on by ``timeout``."""

    def __init__(self, loop: VirtualClockLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: Optional[float] = None) -> list[Any]:
        events: list[Any] = super().select(0)
        if not events and self._loop.jump:
            if timeout is None:
                raise AssertionError("virtual clock: the loop would wait for ever (nothing scheduled)")
            self._loop.now += max(timeout, 0.0)  # the wait takes no real time
        return events


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """The default event loop on a virtual clock, ``now``, that never waits in real time.

    With ``jump`` (the default), waiting for a timer moves the clock to it
    at once, and callbacks take no virtual time, so a task resumes at
    exactly the time of the timer that woke it; without it, the clock moves
    only when the test sets ``now``.  With ``step``, every reading of
    ``time()`` also moves it on by ``step``.
    """

    def __init__(self, now: float = 0.0, *, step: float = 0.0, jump: bool = True) -> None:
        self.now = now
        self.step = step
        self.jump = jump
        super().__init__(_VirtualSelector(self))

    def time(self) -> float:
        if self.step:
            self.now += self.step
        return self.now

    def armed(self) -> list[asyncio.TimerHandle]:
        """The timers scheduled and not cancelled (asyncio's private list)."""
        return [h for h in self._scheduled if not h.cancelled()]  # type: ignore[attr-defined]

    def busy(self) -> bool:
        """Whether a callback is ready or a timer due (asyncio's private lists)."""
        return bool(self._ready) or any(  # type: ignore[attr-defined]
            h.when() <= self.now for h in self.armed()
        )
