"""Timer: one thread that runs callbacks from a TimingWheel.

The thread takes from the wheel what it holds for the next two ticks into
a batch in deadline order, and sleeps on a condition until the batch's
first deadline, or until one tick before the wheel's ``next_deadline()``
(no tick loop: an idle Timer uses no CPU; a far deadline is slept towards
in waits of at most a day, which ``Condition.wait`` accepts on every
platform); it is woken early only when a timer due before that is
scheduled.  So a callback runs at its own deadline, not at the end of its
wheel tick.  Callbacks run outside the lock, one at a time, in deadline
order; the lock is taken again between them, so a ``cancel`` or ``stop``
from any thread takes effect before the next one.

Lifetime follows ``threading.Timer``: while callbacks are pending, the
shared state (which the thread holds) holds the Timer too, so a Timer
dropped with callbacks pending still runs them.  The last one run or
cancelled drops that reference: a Timer nobody else holds is then
collected, and its finaliser lets the thread end.
"""

from __future__ import annotations

import collections
import itertools
import logging
import math
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Optional

from ._convert import to_real
from ._timerbatch import order as _order
from ._timerbatch import take_due
from ._waiting import MAX_WAIT  # the longest single wait of the thread

if TYPE_CHECKING:
    from typing_extensions import ParamSpec

    from ._wheelcore_py import TimingWheel

    P = ParamSpec("P")  # only in annotations: ParamSpec is Python >= 3.10

__all__ = ["Timer", "TimerHandle"]

_log = logging.getLogger("dq_core")
_counter = itertools.count()

# TimerHandle states
PENDING = "pending"  # in the wheel
DUE = "due"  # taken from the wheel, waiting its turn on the thread
RUNNING = "running"  # started (and perhaps finished)
CANCELLED = "cancelled"
UNRUN = "unrun"  # returned by stop()


class TimerHandle:
    """A scheduled callback: ``cancel()`` it, or read ``when`` and ``cancelled``."""

    __slots__ = ("_when", "_fn", "_args", "_kwargs", "_state", "_shared", "_key", "_seq")

    def __init__(
        self,
        shared: _Shared,
        when: float,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self._shared = shared
        self._seq = -1  # first-in first-out among equal deadlines; set by schedule
        self._when = when
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._state = PENDING
        self._key = -1  # the wheel's handle

    @property
    def when(self) -> float:
        """The deadline, on the ``time.monotonic()`` clock."""
        return self._when

    @property
    def cancelled(self) -> bool:
        """True once ``cancel()`` has stopped the callback from running."""
        return self._state is CANCELLED

    def cancel(self) -> bool:
        """Stop the callback from running; False if it already started, ran or was cancelled."""
        return self._shared.cancel(self)

    def __repr__(self) -> str:
        fn = getattr(self._fn, "__qualname__", None) or repr(self._fn)
        return f"<TimerHandle {self._state} when={self._when!r} {fn}>"

    def __reduce_ex__(self, protocol: object) -> Any:
        # a copy would be a second handle on the same timer
        raise TypeError("cannot copy or pickle 'TimerHandle' objects: they belong to a Timer")


class _Shared:
    """State shared by the Timer, its handles and its thread.

    It holds the Timer itself (``keeper``) only while callbacks are pending,
    so a Timer nobody holds runs them, then can be collected, which stops
    the thread."""

    def __init__(self, wheel: Any, name: str) -> None:
        # re-entrant for abandon(), which can run from a GC finaliser on a
        # thread that holds the lock already
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.wheel = wheel
        self.batch: collections.deque[TimerHandle] = collections.deque()
        self.stopped = False
        self.thread: Optional[threading.Thread] = None
        self.name = name
        self.wake_at = -math.inf  # when the sleeping thread will wake on its own
        self.added = False  # a timer was scheduled since the thread last took from the wheel
        self.wakeups = 0
        self.seq = itertools.count()
        self.failed: Optional[BaseException] = None  # what ended the thread, if it failed
        self.keeper: Optional[Timer] = None  # the Timer, while callbacks are pending

    def idle(self) -> bool:
        """No callback pending (call with the lock held)."""
        return not len(self.wheel) and not any(h._state is DUE for h in self.batch)

    def schedule(self, h: TimerHandle, timer: Timer) -> TimerHandle:
        with self.lock:
            if self.failed is not None:
                raise RuntimeError(
                    f"the timer thread failed ({self.failed!r}); see the dq_core log"
                ) from self.failed
            if self.stopped:
                raise RuntimeError("cannot schedule new timers after stop()")
            h._seq = next(self.seq)
            # a deadline the wheel's time has reached goes to its list of due
            # items, which the thread merges into the batch in deadline order
            h._key = self.wheel.schedule_at(h, h._when)
            self.added = True
            self.keeper = timer  # kept alive until its callbacks ran or were cancelled
            if self.thread is None:
                self.thread = threading.Thread(target=_run, args=(self,), name=self.name, daemon=True)
                self.thread.start()
            elif h._when < self.wake_at:
                self.cond.notify()
        return h

    def cancel(self, h: TimerHandle) -> bool:
        with self.lock:
            if h._state is PENDING:
                self.wheel.cancel(h._key)
            elif h._state is not DUE:
                return False
            h._state = CANCELLED
            keeper = None
            if self.keeper is not None and self.idle():
                keeper, self.keeper = self.keeper, None
        del keeper  # the Timer may be collected here, outside the lock
        return True

    def stop(self) -> list[TimerHandle]:
        with self.lock:
            if self.stopped:
                return []
            self.stopped = True
            unrun = [h for h in self.batch if h._state is DUE]
            unrun += self.wheel.drain()
            unrun.sort(key=_order)
            self.batch.clear()
            for h in unrun:
                h._state = UNRUN
            self.cond.notify_all()
            thread = self.thread
            keeper, self.keeper = self.keeper, None
        del keeper
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        return unrun

    def abandon(self) -> None:
        # The Timer was collected: let the thread go.  This may run on any
        # thread, from a GC finaliser, even one that holds the lock (it is
        # re-entrant): wait for the lock, so that the timer thread, if it is
        # between its check of ``stopped`` and its wait, is woken once it waits.
        self.stopped = True
        with self.lock:
            self.cond.notify_all()

    def pending(self) -> int:
        with self.lock:
            return len(self.wheel) + sum(h._state is DUE for h in self.batch)


def _run(shared: _Shared) -> None:
    try:
        _loop(shared)
    except BaseException as exc:  # not a callback's: those are caught below
        # A thread that died quietly would leave a Timer that accepts
        # timers and never runs them: refuse them instead, and say why.
        _log.critical("timer thread %r failed; the Timer runs no more callbacks", shared.name, exc_info=True)
        with shared.lock:
            shared.failed = exc
            keeper, shared.keeper = shared.keeper, None
        del keeper


def _loop(shared: _Shared) -> None:
    cond, wheel, batch = shared.cond, shared.wheel, shared.batch
    tick = wheel.tick
    while True:
        with cond:
            while True:
                if shared.stopped:
                    return
                while batch and batch[0]._state is not DUE:  # cancelled meanwhile
                    batch.popleft()
                now = time.monotonic()
                if shared.added or not batch or batch[0]._when > now:
                    shared.added = False
                    for h in take_due(wheel, now, batch):
                        h._state = DUE
                    while batch and batch[0]._state is not DUE:
                        batch.popleft()
                if batch and batch[0]._when <= now:
                    h = batch.popleft()
                    h._state = RUNNING
                    break
                # the first of the batch at its deadline, or the wheel's next tick at its start
                nxt = batch[0]._when if batch else math.inf
                deadline = wheel.next_deadline()
                if deadline is not None and deadline - tick < nxt:
                    nxt = deadline - tick
                if nxt == math.inf:
                    # Nothing pending: the Timer may go.  If nobody else holds
                    # it, its finaliser runs abandon() here, on this thread.
                    shared.keeper = None
                if shared.stopped:  # abandon() ran meanwhile, on this thread (a finaliser)
                    return
                if nxt == math.inf:
                    shared.wake_at = math.inf
                    cond.wait()
                else:
                    shared.wake_at = nxt
                    cond.wait(min(max(0.0, nxt - time.monotonic()), MAX_WAIT))
                shared.wake_at = -math.inf
                shared.wakeups += 1
        try:
            h._fn(*h._args, **h._kwargs)
        except BaseException:
            _log.exception("exception in timer callback %r", h)
        del h  # nothing of the callback is kept while we sleep


class Timer:
    """A thread that runs callbacks at their deadlines, from a TimingWheel.

    ``call_later``/``call_at`` and ``TimerHandle.cancel`` are thread-safe.
    Callbacks run one at a time on the timer's thread, in deadline order,
    never early: at their deadlines (plus the thread's wake-up latency and
    the time the callbacks before them take), not at the end of their
    ``tick``; an exception in one is logged on the
    ``dq_core`` logger and the thread goes on.  The thread starts with the
    first timer and sleeps until the next deadline.  ``stop()`` (also on
    leaving a ``with`` block) ends it and returns the timers not run.

    As with ``threading.Timer``, a Timer with callbacks pending stays alive
    (its thread holds it) until they ran or were cancelled, or it is
    stopped: ``Timer().call_later(1, fn)`` runs ``fn`` although nothing
    keeps the Timer.  Once nothing is pending, a Timer nobody holds is
    collected and its thread ends.

    >>> import threading
    >>> done = threading.Event()
    >>> with Timer(tick=0.001) as t:
    ...     h = t.call_later(0.01, done.set)
    ...     done.wait(5)
    True
    """

    #: The TimingWheel class of the implementation: set by dq_core._assemble.
    _TimingWheel: ClassVar[type[TimingWheel[Any]]]

    def __init__(self, tick: float = 0.01, wheel_size: int = 256, *, name: Optional[str] = None) -> None:
        wheel = self._TimingWheel(tick, wheel_size, clock=time.monotonic)
        if name is None:
            name = f"dq_core-timer-{next(_counter)}"
        self._shared = _Shared(wheel, name)
        self._finalizer = weakref.finalize(self, self._shared.abandon)

    def call_later(
        self, delay: float, fn: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> TimerHandle:
        """Run ``fn(*args, **kwargs)`` ``delay`` seconds from now; return its handle.  O(1)."""
        d = to_real(delay, "delay")
        if not callable(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__!r}")
        return self._shared.schedule(TimerHandle(self._shared, time.monotonic() + d, fn, args, kwargs), self)

    def call_at(
        self, deadline: float, fn: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs
    ) -> TimerHandle:
        """Run ``fn(*args, **kwargs)`` at ``deadline`` (``time.monotonic()`` clock).  O(1)."""
        d = to_real(deadline, "deadline")
        if not callable(fn):
            raise TypeError(f"fn must be callable, not {type(fn).__name__!r}")
        return self._shared.schedule(TimerHandle(self._shared, d, fn, args, kwargs), self)

    def cancel(self, handle: TimerHandle) -> bool:
        """Same as ``handle.cancel()``."""
        if not isinstance(handle, TimerHandle) or handle._shared is not self._shared:
            raise TypeError("handle must be a TimerHandle of this Timer")
        return self._shared.cancel(handle)

    def stop(self) -> list[TimerHandle]:
        """Stop the thread and return the timers not run, in deadline order.

        Waits for a running callback to finish (unless called from one).
        Scheduling after ``stop`` raises RuntimeError; a second ``stop``
        returns [].
        """
        return self._shared.stop()

    @property
    def stopped(self) -> bool:
        """True once ``stop()`` has been called."""
        return self._shared.stopped

    def __len__(self) -> int:
        return self._shared.pending()

    def __enter__(self) -> Timer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(f"cannot copy or pickle {type(self).__name__!r} objects: they own a thread")

    def __repr__(self) -> str:
        shared = self._shared
        state = "failed" if shared.failed else "stopped" if shared.stopped else "running"
        return f"<Timer {state} pending={len(self)} tick={self._shared.wheel.tick!r}>"
