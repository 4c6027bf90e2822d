"""The hot paths of ``aio.Timer`` (pure twin of ``_aiotimercore``): its handle, scheduling, firing.

``TimerHandle`` is the handle ``aio.Timer.call_later``/``call_at`` return;
``schedule`` makes one and puts it on the Timer's wheel, ``take_due`` moves
what the wheel hands out into the Timer's batch in deadline order, and
``run_batch`` runs that batch.  The Timer (``dq_core.aio._timer``) keeps
what faces asyncio: binding to the loop, arming its one loop timer, close.

A callback may do anything (schedule, cancel others of its batch, close
the Timer, raise): the batch is a deque read afresh after every callback,
and each handle is held by a reference of our own while it runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import operator
from collections import deque
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping, NoReturn, Optional

from ._aiowaiting import MAX_ARM
from ._convert import to_real

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = MappingProxyType({})


__all__ = [
    "MAX_ARM",
    "Pending",
    "TimerHandle",
    "arm",
    "call_at",
    "call_later",
    "on_timer",
    "pending",
    "run_batch",
    "schedule",
    "take_due",
    "unrun",
]

_get_running_loop = asyncio.get_running_loop
_copy_context = contextvars.copy_context
_nextafter = math.nextafter
_INF = math.inf

# Deadline order: a stable sort by deadline of what the wheel hands out (or
# drains), which is earliest tick first and first-in first-out within a tick,
# keeps first-in first-out among equal deadlines (equal deadlines share a tick).
_order = operator.attrgetter("_when")

# TimerHandle states
PENDING = "pending"  # in the wheel, or handed out and waiting its turn in the batch
DONE = "done"  # started (and perhaps finished)
CANCELLED = "cancelled"
UNRUN = "unrun"  # returned by close()


class Pending:
    """The pending handles of one Timer, kept off the cyclic GC's lists (see the module doc)."""

    __slots__ = ()

    def __len__(self) -> int:
        return 0  # the compiled core's count; here every handle stays an ordinary GC object

    def release(self) -> None:
        """Put every handle back on the GC's lists and let go of them."""

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("cannot pickle or copy 'Pending' object: it belongs to a Timer")


class TimerHandle:
    """A callback scheduled on an ``aio.Timer``: asyncio ``TimerHandle``'s ``cancel()``,
    ``cancelled()`` and ``when()``.

    Not thread-safe, like asyncio's: cancel it in the loop's thread (from
    another thread, ``loop.call_soon_threadsafe(handle.cancel)``)."""

    __slots__ = ("_when", "_callback", "_args", "_context", "_timer", "_key", "_state", "__weakref__")

    _when: float
    _callback: Optional[Callable[..., object]]
    _args: Optional[tuple[Any, ...]]
    _context: contextvars.Context
    _timer: Any
    _key: int
    _state: str

    def __init__(self) -> None:
        # refuses arguments, as the compiled twin's (aio.Timer makes handles with __new__)
        pass

    def when(self, /) -> float:
        """The deadline, on the loop's clock (``loop.time()``)."""
        return self._when

    def cancelled(self, /) -> bool:
        """True once ``cancel()`` has stopped the callback from running."""
        return self._state is CANCELLED

    def cancel(self, /) -> bool:
        """Stop the callback from running; False if it already ran, was cancelled or unrun.  O(1).

        A timer cancelled by a callback of the same batch (due together) does
        not run.  Call it from the Timer's loop (as asyncio's handles).
        """
        if self._state is not PENDING:
            return False
        self._state = CANCELLED
        # False when it already left the wheel for the batch: it is skipped there
        self._timer._wheel.cancel(self._key)
        self._callback = self._args = None  # as asyncio: a cancelled handle keeps nothing alive
        return True

    def __repr__(self, /) -> str:
        return f"<TimerHandle {self._state} when={self._when!r} {_describe(self)}>"

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        # a copy would be a second handle on the same timer
        raise TypeError("cannot pickle or copy 'TimerHandle' object: it belongs to a Timer")


def _describe(h: TimerHandle) -> str:
    cb = h._callback
    if cb is None:
        return "None"
    name = getattr(cb, "__qualname__", None) or repr(cb)
    args = ", ".join(map(repr, h._args or ()))
    return f"{name}({args})"


def call_later(
    self: Any,
    delay: float,
    callback: Callable[..., object],
    *args: Any,
    context: Optional[contextvars.Context] = None,
) -> TimerHandle:
    """Run ``callback(*args)`` ``delay`` seconds from now, in the loop; return its handle.  O(1)."""
    if type(delay) is not float or delay != delay:
        delay = to_real(delay, "delay")
    loop = _get_running_loop()
    if loop is not self._loop:
        self._bind(loop)
    now = loop.time()
    return _schedule(self, now + delay, callback, args, context, now)


def call_at(
    self: Any,
    when: float,
    callback: Callable[..., object],
    *args: Any,
    context: Optional[contextvars.Context] = None,
) -> TimerHandle:
    """Run ``callback(*args)`` at ``when`` (on ``loop.time()``), in the loop; return its handle.  O(1)."""
    if type(when) is not float or when != when:
        when = to_real(when, "when")
    loop = _get_running_loop()
    if loop is not self._loop:
        self._bind(loop)
    return _schedule(self, when, callback, args, context, _INF)


def schedule(
    timer: Any,
    when: float,
    callback: Callable[..., object],
    args: tuple[Any, ...],
    context: Optional[contextvars.Context],
) -> TimerHandle:
    """Put ``callback(*args)`` on ``timer``'s wheel at ``when``; arm its loop timer if sooner."""
    if type(when) is not float or when != when:
        when = to_real(when, "when")
    return _schedule(timer, when, callback, args, context, _INF)


def _schedule(
    timer: Any,
    when: float,
    callback: Callable[..., object],
    args: tuple[Any, ...],
    context: Optional[contextvars.Context],
    after: float,
) -> TimerHandle:
    # ``after``: a loop.time() read before (the wheel's time is not past it), or +inf:
    # a ``when`` after it needs no look at the wheel's time
    if timer._closed:
        raise RuntimeError("cannot schedule new timers after close()")
    if not callable(callback):
        raise TypeError(f"callback must be callable, not {type(callback).__name__!r}")
    if context is None:
        context = _copy_context()
    elif type(context) is not contextvars.Context:
        raise TypeError(f"context must be a contextvars.Context, not {type(context).__name__!r}")
    h = TimerHandle.__new__(TimerHandle)
    h._timer = timer
    h._when = when
    h._callback = callback
    h._args = args
    h._context = context
    h._state = PENDING
    wheel = timer._wheel  # the pure TimingWheel: its _insert and _time, as its schedule_at would
    if when > after:
        h._key = wheel._insert(h, when, False)
    else:
        now = wheel._time
        # Never into the wheel's list of already-due timers: that list goes
        # out ahead of timers of the next tick whose deadlines passed too.
        # In that tick, the batch sort by deadline puts it in its place.
        h._key = wheel._insert(h, when if when > now else _nextafter(now, _INF), False)
    if when < timer._armed and not timer._firing:
        timer._arm()
    return h


def take_due(wheel: Any, now: float, batch: deque[TimerHandle]) -> None:
    """Advance ``wheel`` to ``now`` and append what comes due to ``batch``, in deadline order."""
    due: list[TimerHandle] = wheel.advance(now)
    if due:
        if len(due) > 1:
            due.sort(key=_order)  # the wheel orders by tick; within a tick, by deadline too
        batch.extend(due)


def run_batch(batch: deque[TimerHandle], loop: AbstractEventLoop) -> None:
    """Run the callbacks of ``batch`` in order, taking each out first; skip the cancelled.

    An exception goes to ``loop.call_exception_handler``; SystemExit and
    KeyboardInterrupt propagate, the rest of the batch left in it.
    """
    while batch:
        h = batch.popleft()
        if h._state is not PENDING:  # cancelled by a callback before it
            continue
        h._state = DONE
        try:
            h._context.run(h._callback, *h._args)  # type: ignore[arg-type, misc]
        except (SystemExit, KeyboardInterrupt):
            raise  # as asyncio; the rest of the batch runs on the next loop step
        except BaseException as exc:
            loop.call_exception_handler(
                {
                    "message": f"Exception in callback {_describe(h)}",
                    "exception": exc,
                    "handle": h,
                }
            )


def pending(batch: deque[TimerHandle]) -> int:
    """How many handles of ``batch`` are still to run (not cancelled, not started).

    >>> from collections import deque
    >>> pending(deque())
    0
    """
    return sum(h._state is PENDING for h in batch)


def unrun(batch: deque[TimerHandle], drained: list[TimerHandle]) -> list[TimerHandle]:
    """The handles of ``batch`` still to run and ``drained``, in deadline order, marked unrun.

    ``batch`` is emptied.
    """
    out = [h for h in batch if h._state is PENDING]
    batch.clear()
    out += drained
    out.sort(key=_order)
    for h in out:
        h._state = UNRUN
    return out


def arm(self: Any) -> None:
    """Arm the loop timer for the wheel's next deadline if that is earlier than it is armed for."""
    loop = self._loop
    if self._batch:  # an interrupted batch (KeyboardInterrupt): go on at once
        nxt = loop.time()
    else:
        deadline = self._wheel.next_deadline()
        if deadline is None:
            return
        nxt = deadline
    if nxt >= self._armed:
        return
    handle = self._handle
    if handle is not None:
        handle.cancel()
    at = min(nxt, loop.time() + MAX_ARM)
    self._handle = loop.call_at(at, self._on_timer)
    self._armed = at


def on_timer(self: Any) -> None:
    """The loop timer: run what is due, then arm for the next deadline."""
    self._handle = None
    self._armed = _INF
    loop = self._loop
    batch = self._batch
    take_due(self._wheel, loop.time(), batch)  # re-reads the clock: never early
    self._firing = True
    try:
        run_batch(batch, loop)
    finally:
        self._firing = False
        if not self._closed:
            self._arm()
