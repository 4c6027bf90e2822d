"""aio.Timer and aio.timeout: loop timers kept on a TimingWheel, one loop timer per wheel.

``loop.call_later`` pays a heap push and an asyncio ``TimerHandle`` per
timer and keeps a cancelled handle in its heap until it surfaces (or until
half the heap is cancelled).  ``Timer`` keeps its timers on the
implementation's TimingWheel instead (O(1) schedule and cancel; a cancelled
timer leaves at once) and keeps ONE ``loop.call_at`` armed for the whole
wheel, at the wheel's next deadline.  It is re-armed only when a timer due
before that arrives, and after firing, for the next deadline.

When the loop timer fires, the clock is read again (a loop may fire a
``call_at`` up to its clock resolution early) and the wheel hands out what
is due; those callbacks run there and then, one after the other, in
deadline order (first-in first-out among equal deadlines).  A timer never
runs before its deadline and at most one ``tick`` after it (plus the time
the callbacks before it take, and the loop's own latency).

``timeout(delay)`` / ``timeout_at(when)`` are ``asyncio.timeout`` /
``asyncio.timeout_at`` whose loop timer is a timer of the running loop's
shared default ``Timer`` (``default_timer()``): on Python >= 3.11 they are
``asyncio.Timeout`` itself, with only ``reschedule`` arming the wheel, so
every other rule (uncancel bookkeeping, nesting, ``TimeoutError``) is the
stdlib's own.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import math
import operator
import sys
from asyncio import AbstractEventLoop
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NoReturn, Optional

from .._convert import to_real
from ._base import MAX_ARM

if TYPE_CHECKING:
    from typing_extensions import TypeVarTuple, Unpack

    from .._wheel_py import TimingWheel

    Ts = TypeVarTuple("Ts")  # only in annotations: TypeVarTuple is Python >= 3.11

__all__ = ["Timeout", "Timer", "TimerHandle", "default_timer", "timeout", "timeout_at"]

_get_running_loop = asyncio.get_running_loop
_copy_context = contextvars.copy_context
_nextafter = math.nextafter
_INF = math.inf
# Deadline order: a stable sort by deadline of what the wheel hands out (or
# drains), which is earliest tick first and first-in first-out within a tick,
# keeps first-in first-out among equal deadlines (equal deadlines share a tick).
_order = operator.attrgetter("_when")


# TimerHandle states
PENDING = "pending"      # in the wheel, or handed out and waiting its turn in the batch
DONE = "done"            # started (and perhaps finished)
CANCELLED = "cancelled"
UNRUN = "unrun"          # returned by close()


def _zero() -> float:
    return 0.0


def _real(value: object, name: str) -> float:
    return value if type(value) is float and value == value else to_real(value, name)


class TimerHandle:
    """A callback scheduled on an ``aio.Timer``: asyncio ``TimerHandle``'s ``cancel()``,
    ``cancelled()`` and ``when()``."""

    __slots__ = ("_when", "_callback", "_args", "_context", "_timer", "_key", "_state", "__weakref__")

    def __init__(self, timer: Timer, when: float, callback: Optional[Callable[..., object]],
                 args: Optional[tuple[Any, ...]], context: contextvars.Context) -> None:
        self._timer = timer
        self._when = when
        self._callback = callback
        self._args = args
        self._context = context
        self._key = -1  # the wheel's handle
        self._state = PENDING

    def when(self) -> float:
        """The deadline, on the loop's clock (``loop.time()``)."""
        return self._when

    def cancelled(self) -> bool:
        """True once ``cancel()`` has stopped the callback from running."""
        return self._state is CANCELLED

    def cancel(self) -> bool:
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

    def __repr__(self) -> str:
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


class Timer:
    """Loop timers on a TimingWheel: ``call_later``/``call_at`` with ONE loop timer for the wheel.

    ``call_later(delay, callback, *args)`` and ``call_at(when, callback,
    *args)`` (``when`` on ``loop.time()``) return a ``TimerHandle`` with
    asyncio's ``cancel()``, ``cancelled()`` and ``when()``; the callback runs
    in the loop, in the context current when it was scheduled (or
    ``context``), never before its deadline and at most one ``tick`` after
    it, in deadline order (first-in first-out among equal deadlines).  An
    exception in a callback goes to ``loop.call_exception_handler`` and
    the others still run.  Schedule and cancel are O(1).

    The Timer binds to the running loop on its first ``call_later`` or
    ``call_at`` (as asyncio's queues bind on first use); using it from
    another loop raises ``RuntimeError``, and so does calling it where no
    loop runs.  ``close()`` cancels the loop timer and returns the timers
    not run, in deadline order; scheduling after it raises
    ``RuntimeError``.  ``len(t)`` counts the timers not yet run or
    cancelled.  Copying and pickling raise ``TypeError``.

    >>> async def main():
    ...     t, out = Timer(tick=0.001), []
    ...     t.call_later(0.02, out.append, "later")
    ...     h = t.call_later(0.01, out.append, "cancelled")
    ...     t.call_later(0.01, out.append, "sooner")
    ...     h.cancel()
    ...     await asyncio.sleep(0.05)
    ...     return out, len(t)
    >>> asyncio.run(main())
    (['sooner', 'later'], 0)
    """

    __slots__ = ("_wheel", "_loop", "_batch", "_handle", "_armed", "_closed", "_firing",
                 "__weakref__")

    #: The TimingWheel class of the implementation: set by dq_core._assemble.
    _TimingWheel: ClassVar[type[TimingWheel[Any]]]

    def __init__(self, tick: float = 0.001, wheel_size: int = 256) -> None:
        # Checks tick and wheel_size now; replaced by a wheel on the loop's clock on binding.
        self._wheel: TimingWheel[TimerHandle] = self._TimingWheel(tick, wheel_size, clock=_zero)
        self._loop: Optional[AbstractEventLoop] = None
        self._batch: deque[TimerHandle] = deque()  # handed out by the wheel, not run yet
        self._handle: Optional[asyncio.TimerHandle] = None  # the one loop timer
        self._armed = _INF  # when it is armed for
        self._closed = False
        self._firing = False  # inside _on_timer: it arms the loop timer when done

    @property
    def tick(self) -> float:
        """The wheel's tick: the most a timer runs late (beside the loop's own latency)."""
        return self._wheel.tick

    def _bind(self, loop: AbstractEventLoop) -> None:
        if self._loop is not None:
            raise RuntimeError(f"{self!r} is bound to a different event loop")
        wheel = self._wheel
        self._wheel = self._TimingWheel(wheel.tick, wheel.wheel_size, clock=loop.time)
        self._loop = loop

    def call_later(self, delay: float, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts],
                   context: Optional[contextvars.Context] = None) -> TimerHandle:
        """Run ``callback(*args)`` ``delay`` seconds from now, in the loop; return its handle.  O(1)."""
        if type(delay) is not float or delay != delay:
            delay = to_real(delay, "delay")
        loop = _get_running_loop()
        if loop is not self._loop:
            self._bind(loop)
        return self._schedule(loop.time() + delay, callback, args, context)

    def call_at(self, when: float, callback: Callable[[Unpack[Ts]], object], *args: Unpack[Ts],
                context: Optional[contextvars.Context] = None) -> TimerHandle:
        """Run ``callback(*args)`` at ``when`` (on ``loop.time()``), in the loop; return its handle.  O(1)."""
        if type(when) is not float or when != when:
            when = to_real(when, "when")
        loop = _get_running_loop()
        if loop is not self._loop:
            self._bind(loop)
        return self._schedule(when, callback, args, context)

    def _schedule(self, when: float, callback: Callable[..., object], args: tuple[Any, ...],
                  context: Optional[contextvars.Context]) -> TimerHandle:
        if self._closed:
            raise RuntimeError("cannot schedule new timers after close()")
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__!r}")
        if context is None:
            context = _copy_context()
        elif type(context) is not contextvars.Context:
            raise TypeError(f"context must be a contextvars.Context, not {type(context).__name__!r}")
        h = TimerHandle(self, when, callback, args, context)
        wheel = self._wheel
        now = wheel.wheel_time
        # Never into the wheel's list of already-due timers: that list goes
        # out ahead of timers of the next tick whose deadlines passed too.
        # In that tick, the batch sort by deadline puts it in its place.
        h._key = wheel.schedule_at(h, when if when > now else _nextafter(now, _INF))
        if when < self._armed and not self._firing:
            self._arm()
        return h

    def _arm(self) -> None:
        """Arm the loop timer for the wheel's next deadline if that is earlier than it is armed for."""
        loop = self._loop
        assert loop is not None
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

    def _on_timer(self) -> None:
        self._handle = None
        self._armed = _INF
        loop = self._loop
        assert loop is not None
        batch = self._batch
        due = self._wheel.advance(loop.time())  # re-reads the clock: never early
        if due:
            if len(due) > 1:
                due.sort(key=_order)  # the wheel orders by tick; within a tick, by deadline too
            batch.extend(due)
            del due
        self._firing = True
        try:
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
                    loop.call_exception_handler({
                        "message": f"Exception in callback {_describe(h)}",
                        "exception": exc,
                        "handle": h,
                    })
        finally:
            self._firing = False
            if not self._closed:
                self._arm()

    def close(self) -> list[TimerHandle]:
        """Cancel the loop timer and return the timers not run, in deadline order.  O(n log n).

        They are neither run nor ``cancelled()``; ``cancel()`` on them
        returns False.  Scheduling after ``close`` raises RuntimeError; a
        second ``close`` returns [].  Needs no running loop; from a loop
        other than the one bound, raises RuntimeError.
        """
        try:
            loop: Optional[AbstractEventLoop] = _get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None and self._loop is not None and loop is not self._loop:
            raise RuntimeError(f"{self!r} is bound to a different event loop")
        if self._closed:
            return []
        self._closed = True
        handle = self._handle
        if handle is not None:
            self._handle = None
            self._armed = _INF
            handle.cancel()
        unrun = [h for h in self._batch if h._state is PENDING]
        self._batch.clear()
        unrun += self._wheel.drain()
        unrun.sort(key=_order)
        for h in unrun:
            h._state = UNRUN
        return unrun

    @property
    def closed(self) -> bool:
        """True once ``close()`` has been called."""
        return self._closed

    def __len__(self) -> int:
        return len(self._wheel) + sum(h._state is PENDING for h in self._batch)

    def _check(self) -> None:
        """Assert the invariants (call between loop steps, not inside one)."""
        self._wheel._check()
        assert not self._firing
        if self._closed:
            assert not self._wheel and not self._batch and self._handle is None
            return
        if self._handle is None:
            assert self._armed == _INF
            assert not self._wheel, "timers in the wheel but no loop timer armed"
        else:
            # (no bound against next_deadline(): for a timer still on an upper level that is
            # the start of its slot there, which a later loop timer may pass: it cascades then)
            assert self._armed < _INF

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError(f"cannot pickle or copy {type(self).__name__!r} object: it owns a loop timer")

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<{type(self).__name__} {state} pending={len(self)} tick={self._wheel.tick!r}>"


# -- timeout -----------------------------------------------------------------------------

# The default Timer of each loop.  Not a WeakKeyDictionary: the Timer holds its
# loop (its wheel's clock is loop.time), so the entry would keep its key alive.
# The entries of closed loops go when a new loop asks for its Timer.
_default_timers: dict[AbstractEventLoop, Timer] = {}


def default_timer() -> Timer:
    """The running loop's shared ``Timer`` (tick 1 ms) that ``timeout`` uses, made on first use.

    Kept until the loop is closed and another loop asks for its own;
    ``RuntimeError`` where no loop runs.
    """
    loop = _get_running_loop()
    try:
        return _default_timers[loop]
    except KeyError:
        pass
    for closed in [lp for lp in _default_timers if lp.is_closed()]:
        del _default_timers[closed]
    from .._assemble import aio_classes
    from .._compat import implementation

    timer: Timer = aio_classes(implementation).Timer()
    _default_timers[loop] = timer
    return timer


if sys.version_info >= (3, 11):

    class Timeout(asyncio.Timeout):  # type: ignore[misc]  # final in typeshed only
        """``asyncio.Timeout`` armed on the running loop's ``default_timer()``.

        Everything but where the timer lives is asyncio's: ``when()``,
        ``reschedule()``, ``expired()``, nesting, ``TimeoutError`` on
        expiry, cancellation from outside kept as ``CancelledError``, the
        task's uncancel count.  It expires at most one tick (1 ms) late.
        ``timer`` is the ``Timer`` to arm instead of the loop's default one.
        """

        def __init__(self, when: Optional[float], timer: Optional[Timer] = None) -> None:
            super().__init__(when)
            self._timer = timer

        def reschedule(self, when: Optional[float]) -> None:
            """Reschedule the timeout (``None``: never)."""
            if when is not None:
                when = _real(when, "when")
            # asyncio's checks of the state, and the cancel of the timer armed before
            super().reschedule(None)
            if when is None:
                return
            self._when = when
            loop = _get_running_loop()
            expire = self._on_timeout  # type: ignore[attr-defined]  # asyncio's, not in typeshed
            if when <= loop.time():
                self._timeout_handler = loop.call_soon(expire)
            else:
                # anything with cancel() will do: asyncio only cancels it
                timer = default_timer() if self._timer is None else self._timer
                self._timeout_handler = timer.call_at(when, expire)  # type: ignore[assignment]

else:  # Python 3.10: no asyncio.Timeout, no Task.uncancel

    class _State(enum.Enum):
        CREATED = "created"
        ENTERED = "active"
        EXPIRING = "expiring"
        EXPIRED = "expired"
        EXITED = "finished"

    class _TimeoutError(asyncio.TimeoutError, TimeoutError):
        """asyncio.TimeoutError (what 3.10 code catches) that is TimeoutError too (as on 3.11+)."""

    class Timeout:  # type: ignore[no-redef]
        """``asyncio.Timeout`` of Python 3.11, for Python 3.10, armed on ``default_timer()``.

        Without ``Task.uncancel``, a cancellation from outside that arrives
        after the timeout expired (before the task saw it) becomes
        ``TimeoutError`` too.
        """

        def __init__(self, when: Optional[float], timer: Optional[Timer] = None) -> None:
            self._timer = timer
            self._state = _State.CREATED
            self._timeout_handler: Any = None
            self._task: Optional[asyncio.Task[Any]] = None
            self._when = when

        def when(self) -> Optional[float]:
            """The deadline on ``loop.time()``, or None."""
            return self._when

        def reschedule(self, when: Optional[float]) -> None:
            """Reschedule the timeout (``None``: never)."""
            if self._state is not _State.ENTERED:
                if self._state is _State.CREATED:
                    raise RuntimeError("Timeout has not been entered")
                raise RuntimeError(f"Cannot change state of {self._state.value} Timeout")
            if when is not None:
                when = _real(when, "when")
            self._when = when
            if self._timeout_handler is not None:
                self._timeout_handler.cancel()
            if when is None:
                self._timeout_handler = None
            else:
                loop = _get_running_loop()
                if when <= loop.time():
                    self._timeout_handler = loop.call_soon(self._on_timeout)
                else:
                    timer = default_timer() if self._timer is None else self._timer
                    self._timeout_handler = timer.call_at(when, self._on_timeout)

        def expired(self) -> bool:
            """Whether the timeout expired during the ``async with``."""
            return self._state in (_State.EXPIRING, _State.EXPIRED)

        def __repr__(self) -> str:
            info = [str(self._state.value)]
            if self._state is _State.ENTERED:
                info.append(f"when={self._when}")
            return f"<Timeout [{' '.join(info)}]>"

        async def __aenter__(self) -> Timeout:
            if self._state is not _State.CREATED:
                raise RuntimeError("Timeout has already been entered")
            task = asyncio.current_task()
            if task is None:
                raise RuntimeError("Timeout should be used inside a task")
            self._state = _State.ENTERED
            self._task = task
            self.reschedule(self._when)
            return self

        async def __aexit__(self, exc_type: Optional[type[BaseException]],
                            exc_val: Optional[BaseException],
                            exc_tb: Optional[TracebackType]) -> Optional[bool]:
            if self._timeout_handler is not None:
                self._timeout_handler.cancel()
                self._timeout_handler = None
            if self._state is _State.EXPIRING:
                self._state = _State.EXPIRED
                if exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
                    raise _TimeoutError from exc_val
            elif self._state is _State.ENTERED:
                self._state = _State.EXITED
            return None

        def _on_timeout(self) -> None:
            assert self._state is _State.ENTERED and self._task is not None
            self._task.cancel()
            self._state = _State.EXPIRING
            self._timeout_handler = None


def timeout(delay: Optional[float], *, timer: Optional[Timer] = None) -> Timeout:
    """``asyncio.timeout(delay)`` on the running loop's ``default_timer()`` (or on ``timer``).

    ``async with timeout(10): ...`` cancels the block after 10 s and raises
    ``TimeoutError``; ``None`` never expires (``reschedule`` may set a
    deadline later).  Schedule and cancel are O(1) on the wheel, one loop
    timer for every timeout of the loop.

    >>> async def main():
    ...     try:
    ...         async with timeout(0.01):
    ...             await asyncio.sleep(1)
    ...     except TimeoutError:
    ...         return "timed out"
    >>> asyncio.run(main())
    'timed out'
    """
    loop = _get_running_loop()
    return Timeout(loop.time() + _real(delay, "delay") if delay is not None else None, timer)


def timeout_at(when: Optional[float], *, timer: Optional[Timer] = None) -> Timeout:
    """``asyncio.timeout_at(when)`` (``when`` on ``loop.time()``) on the loop's ``default_timer()``."""
    return Timeout(_real(when, "when") if when is not None else None, timer)
