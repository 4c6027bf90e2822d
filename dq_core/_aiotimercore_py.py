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
import itertools
import math
from collections import deque
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping, NoReturn, Optional

from ._aiowaiting import MAX_ARM
from ._convert import to_real
from ._timerbatch import order as _order
from ._timerbatch import take_due as _take_due

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
_INF = math.inf

_seqs = itertools.count()

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

    __slots__ = ("_when", "_callback", "_args", "_context", "_timer", "_key", "_state", "_seq", "__weakref__")

    _when: float
    _callback: Optional[Callable[..., object]]
    _args: Optional[tuple[Any, ...]]
    _context: contextvars.Context
    _timer: Any
    _key: int
    _state: str
    _seq: int

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
    return _schedule(self, loop.time() + delay, callback, args, context)


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
    return _schedule(self, when, callback, args, context)


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
    return _schedule(timer, when, callback, args, context)


def _schedule(
    timer: Any,
    when: float,
    callback: Callable[..., object],
    args: tuple[Any, ...],
    context: Optional[contextvars.Context],
) -> TimerHandle:
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
    h._seq = next(_seqs)
    # the pure TimingWheel's _insert, as its schedule_at would: a ``when`` the
    # wheel's time has reached goes to its list of due timers, which the next
    # take_due merges into the batch in deadline order
    h._key = timer._wheel._insert(h, when, False)
    if when < timer._armed and not timer._firing:
        timer._arm()
    return h


def take_due(wheel: Any, now: float, batch: deque[TimerHandle]) -> None:
    """Hand out to ``batch``, in deadline order, what the wheel holds for the next two ticks.

    ``batch`` then holds every timer due by ``now`` (those scheduled at or
    before the wheel's time included: they come out first) and those due
    within about two ticks, which wait there for their own deadline.
    """
    _take_due(wheel, now, batch)


def run_batch(batch: deque[TimerHandle], loop: AbstractEventLoop, now: float) -> bool:
    """Run the callbacks of ``batch`` due by ``now``, in order, taking each out first; skip the cancelled.

    Returns whether one ran.  An exception goes to ``loop.call_exception_handler``;
    SystemExit and KeyboardInterrupt propagate, the rest of the batch left in it.
    """
    ran = False
    while batch:
        h = batch[0]
        if h._state is not PENDING:  # cancelled by a callback before it
            batch.popleft()
            continue
        if h._when > now:
            break
        batch.popleft()
        h._state = DONE
        ran = True
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
    return ran


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
    """Arm the loop timer for what comes next, if that is earlier than it is armed for.

    What comes next: the first timer of the batch at its deadline, or one tick
    before the wheel's next deadline (``take_due`` hands its timers out then); but
    no sooner than one tick after the last firing that ran a callback, so that a
    dense schedule costs one loop timer per tick, not one per deadline.
    """
    loop = self._loop
    wheel = self._wheel
    batch = self._batch
    nxt = batch[0]._when if batch else _INF
    deadline = wheel.next_deadline()
    if deadline is not None:
        deadline -= wheel.tick  # its tick starts: take_due takes it
        if deadline < nxt:
            nxt = deadline
    elif nxt == _INF:
        return
    ran = self._ran + wheel.tick
    if nxt < ran:
        nxt = ran
    if nxt >= self._armed:
        return
    handle = self._handle
    if handle is not None:
        handle.cancel()
    at = min(nxt, loop.time() + MAX_ARM)
    self._handle = loop.call_at(at, self._on_timer)
    self._armed = at


def on_timer(self: Any) -> None:
    """The loop timer: run what is due, then arm for what comes next."""
    self._handle = None
    self._armed = _INF
    loop = self._loop
    batch = self._batch
    now = loop.time()  # read again: never early
    take_due(self._wheel, now, batch)
    self._firing = True
    try:
        if run_batch(batch, loop, now):
            self._ran = now
    finally:
        self._firing = False
        if not self._closed:
            self._arm()
