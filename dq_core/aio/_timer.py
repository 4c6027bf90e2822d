"""aio.Timer and aio.timeout: loop timers kept on a TimingWheel, one loop timer per wheel.

``loop.call_later`` pays a heap push and an asyncio ``TimerHandle`` per
timer and keeps a cancelled handle in its heap until it surfaces (or until
half the heap is cancelled).  ``Timer`` keeps its timers on the
implementation's TimingWheel instead (O(1) schedule and cancel; a cancelled
timer leaves at once) and keeps ONE ``loop.call_at`` armed for the whole
wheel, at the wheel's next deadline.  It is re-armed only when a timer due
before that arrives, and after firing, for the next deadline.

When the loop timer fires, the clock is read again (a loop may fire a
``call_at`` up to its clock resolution early) and the wheel hands out the
timers of every tick begun by then, into a batch in deadline order: those
due run there and then, one after the other (first-in first-out among
equal deadlines); the others wait in the batch, and the loop timer is
armed for the first of them, at its own deadline rather than at the end
of its tick.  So a timer runs at its deadline (plus the loop's own
latency), except that the loop timer fires at most once a tick while
callbacks run: where timers come due faster than that, each runs at most
one ``tick`` after its deadline (plus the time the callbacks before it
take).  It never runs before its deadline.

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
import sys
import threading
from asyncio import AbstractEventLoop
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NoReturn, Optional

from .._convert import to_real
from .._inuse import in_use

if TYPE_CHECKING:
    from types import ModuleType

    from typing_extensions import TypeVarTuple, Unpack

    from .._aiotimercore_py import TimerHandle  # the implementation's own is aio.TimerHandle
    from .._wheelcore_py import TimingWheel

    Ts = TypeVarTuple("Ts")  # only in annotations: TypeVarTuple is Python >= 3.11

__all__ = ["Timeout", "Timer", "default_timer", "timeout", "timeout_at"]

_get_running_loop = asyncio.get_running_loop
_nextafter = math.nextafter
_INF = math.inf


def _zero() -> float:
    return 0.0


def _real(value: object, name: str) -> float:
    return value if type(value) is float and value == value else to_real(value, name)


class Timer:
    """Loop timers on a TimingWheel: ``call_later``/``call_at`` with ONE loop timer for the wheel.

    ``call_later(delay, callback, *args)`` and ``call_at(when, callback,
    *args)`` (``when`` on ``loop.time()``) return a ``TimerHandle`` with
    asyncio's ``cancel()``, ``cancelled()`` and ``when()``; the callback runs
    in the loop, in the context current when it was scheduled (or
    ``context``), in deadline order (first-in first-out among equal
    deadlines), never before its deadline and at most one ``tick`` after it:
    at its deadline (plus the loop's latency) unless callbacks of the Timer
    ran less than a tick before (the loop timer fires at most once a tick
    while they do).  An
    exception in a callback goes to ``loop.call_exception_handler`` and
    the others still run.  Schedule and cancel are O(1).

    The Timer binds to the running loop on its first ``call_later`` or
    ``call_at`` (as asyncio's queues bind on first use); using it from
    another loop raises ``RuntimeError``, and so does calling it where no
    loop runs.  ``close()`` cancels the loop timer and returns the timers
    not run, in deadline order; scheduling after it raises
    ``RuntimeError``.  ``len(t)`` counts the timers not yet run or
    cancelled.  Copying and pickling raise ``TypeError``.

    Not thread-safe, like the loop's own ``call_later``: use it in the
    loop's thread; from another thread, go through
    ``loop.call_soon_threadsafe(t.call_later, delay, callback)``.

    >>> async def main():
    ...     t, out = Timer(tick=0.001), []
    ...     now = asyncio.get_running_loop().time()
    ...     t.call_at(now + 0.02, out.append, "later")
    ...     h = t.call_at(now + 0.01, out.append, "cancelled")
    ...     t.call_at(now + 0.01, out.append, "sooner")
    ...     h.cancel()
    ...     await asyncio.sleep(0.05)
    ...     return out, len(t)
    >>> asyncio.run(main())
    (['sooner', 'later'], 0)
    """

    __slots__ = (
        "_wheel",
        "_loop",
        "_batch",
        "_pending",
        "_handle",
        "_armed",
        "_closed",
        "_firing",
        "_ran",
        "__weakref__",
    )

    #: The TimingWheel class and the ``_aiotimercore`` core of the implementation: set by dq_core._assemble.
    _TimingWheel: ClassVar[type[TimingWheel[Any]]]
    _core: ClassVar[ModuleType]

    def __init__(self, tick: float = 0.001, wheel_size: int = 256) -> None:
        # Checks tick and wheel_size now; replaced by a wheel on the loop's clock on binding.
        self._wheel: TimingWheel[TimerHandle] = self._TimingWheel(tick, wheel_size, clock=_zero)
        self._loop: Optional[AbstractEventLoop] = None
        self._batch: deque[TimerHandle] = deque()  # handed out by the wheel, not run yet
        self._pending = self._core.Pending()  # the compiled core's pending handles off the GC's lists
        self._handle: Optional[asyncio.TimerHandle] = None  # the one loop timer (its cancel())
        self._armed = _INF  # when it is armed for
        self._closed = False
        self._firing = False  # inside _on_timer: it arms the loop timer when done
        self._ran = -_INF  # when the last firing that ran a callback began

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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        core = cls.__dict__.get("_core")
        if core is not None:  # the public class of an implementation: its compiled (or pure) fast paths
            cls.call_later = core.call_later  # type: ignore[method-assign]
            cls.call_at = core.call_at  # type: ignore[method-assign]
            cls._arm = core.arm  # type: ignore[method-assign]
            cls._on_timer = core.on_timer  # type: ignore[method-assign]

    # call_later, call_at, _arm and _on_timer are _aiotimercore's (set above); these give their types.
    if TYPE_CHECKING:

        def call_later(
            self,
            delay: float,
            callback: Callable[[Unpack[Ts]], object],
            *args: Unpack[Ts],
            context: Optional[contextvars.Context] = None,
        ) -> TimerHandle:
            """Run ``callback(*args)`` ``delay`` seconds from now, in the loop; return its handle.  O(1)."""

        def call_at(
            self,
            when: float,
            callback: Callable[[Unpack[Ts]], object],
            *args: Unpack[Ts],
            context: Optional[contextvars.Context] = None,
        ) -> TimerHandle:
            """Run ``callback(*args)`` at ``when`` (on ``loop.time()``), in the loop; return its handle.  O(1)."""

        def _arm(self) -> None:
            """Arm the loop timer for what comes next, if that is earlier than it is armed for."""

        def _on_timer(self) -> None:
            """The loop timer: run what is due, then arm for what comes next."""

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
        return self._core.unrun(self._batch, self._wheel.drain())  # type: ignore[no-any-return]

    @property
    def closed(self) -> bool:
        """True once ``close()`` has been called."""
        return self._closed

    def __len__(self) -> int:
        return len(self._wheel) + self._core.pending(self._batch)  # type: ignore[no-any-return]

    def _check(self) -> None:
        """Assert the invariants (call between loop steps, not inside one)."""
        self._wheel._check()
        assert not self._firing
        assert len(self._pending) <= len(self._wheel) + len(self._batch)
        if self._closed:
            assert not self._wheel and not self._batch and self._handle is None
            return
        if self._handle is None:
            assert self._armed == _INF
            assert not self._wheel, "timers in the wheel but no loop timer armed"
            assert not self._core.pending(self._batch), "timers in the batch but no loop timer armed"
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

# The default Timer of each loop is an attribute of the loop: the loop holds
# it and it holds the loop (its wheel's clock is loop.time), a cycle the
# collector frees with a loop dropped without close(), fds and all, as it
# would free the loop itself.  Each thread sets it only on the loop it runs,
# so threads that each run a loop share nothing.  A module-level dict would
# keep every loop alive (a WeakKeyDictionary too: its value holds its key)
# and be mutated from many threads.  Only a loop that takes no attribute
# (__slots__) goes in _slotted_loops, under the lock, until it is closed.
_ATTRIBUTE = "_dq_core_default_timer"
_slotted_loops: dict[AbstractEventLoop, Timer] = {}
_slotted_lock = threading.Lock()


def default_timer() -> Timer:
    """The running loop's shared ``Timer`` (tick 1 ms) that ``timeout`` uses, made on first use.

    Held by the loop: it goes with the loop.  Safe with loops running in
    many threads.  ``RuntimeError`` where no loop runs.
    """
    loop = _get_running_loop()
    timer: Optional[Timer] = getattr(loop, _ATTRIBUTE, None)
    if timer is not None:
        return timer
    if _slotted_loops:
        held = _slotted_loops.get(loop)
        if held is not None:
            return held
    timer = in_use("aio.Timer")()  # the public aio.Timer, handed down by dq_core.aio
    try:
        setattr(loop, _ATTRIBUTE, timer)
    except AttributeError:
        with _slotted_lock:
            held = _slotted_loops.get(loop)
            if held is not None:
                return held
            for closed in [lp for lp in _slotted_loops if lp.is_closed()]:
                del _slotted_loops[closed]
            _slotted_loops[loop] = timer
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

    class Timeout:  # type: ignore[no-redef, unused-ignore]  # redefined on 3.11+ only
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

        async def __aexit__(
            self,
            exc_type: Optional[type[BaseException]],
            exc_val: Optional[BaseException],
            exc_tb: Optional[TracebackType],
        ) -> Optional[bool]:
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
