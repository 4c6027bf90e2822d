"""aio.RateLimiter: the threaded RateLimiter's token bucket, for coroutines.

The arithmetic is ``dq_core._ratelimiter.TokenBucket``'s, read on the running
loop's clock (``loop.time()``).  Waiting follows ``asyncio.Semaphore``: a
coroutine that cannot take its tokens at once parks on a future of its own
at the back of a line (a deque), so waiters are served first come, first
served, and a later ``try_acquire`` or ``acquire`` never jumps the line.

No polling and no thundering herd: only the head of the line has a loop
timer (one ``loop.call_at`` per limiter), armed for the moment the head's
tokens exist.  When it fires, the clock is read again (a loop may fire a
timer up to its clock resolution early) and the head is woken; the line
stands still until its task resumes, takes its tokens at that moment
(reading the clock again) and plans the next in line.  A task that resumes
late (a busy loop) thus finds the bucket capped at ``burst`` and leaves the
next tokens for later: starts never bunch past the burst.  A waiter that
gives up (cancelled, or timed out by ``asyncio.timeout``) leaves the line:
if it was the head, the next one is planned at once, so later waiters move
earlier; one woken but cancelled before it resumed takes nothing and passes
its turn on.
Cancelled waiters behind the head stay in the deque, skipped when they
reach the front and swept out when they outnumber the live ones, so
cancelling costs O(1) amortised however long the line.
"""

from __future__ import annotations

import asyncio
from asyncio import AbstractEventLoop, Future, TimerHandle
from collections import deque
from types import TracebackType
from typing import Optional

from .._aiowaiting import LoopTimer
from .._convert import MAX_EXACT_INT
from .._tokenbucket import TokenBucket, positive
from ._base import MAX_ARM, LoopBound

__all__ = ["RateLimiter"]

_INF = float("inf")
_get_running_loop = asyncio.get_running_loop


def _tokens(tokens: object) -> float:
    tp = type(tokens)
    if tp is int and 0 < tokens <= MAX_EXACT_INT:  # type: ignore[operator]
        return float(tokens)  # type: ignore[arg-type]
    if tp is float and 0.0 < tokens < _INF:  # type: ignore[operator]
        return tokens  # type: ignore[return-value]
    return positive(tokens, "tokens")


class RateLimiter(LoopBound, LoopTimer, TokenBucket):
    """Token bucket for coroutines: ``rate`` tokens per second, at most ``burst`` stored; starts full.

    ``try_acquire`` never waits; ``await acquire(tokens)`` waits until its
    tokens exist, behind the coroutines that came before it (first come,
    first served), and returns True; ``async with lim:`` takes one token.
    Cancelling a waiting ``acquire`` (or timing it out with
    ``asyncio.timeout``) gives its place back: those behind it are served
    earlier.  Tokens may be fractional; asking for more than ``burst`` at
    once can never succeed and raises ``ValueError``.  Setting ``rate`` or
    ``burst`` keeps the tokens available now (capped at the new burst).

    The clock is the running loop's ``loop.time()``; the limiter binds to
    the first loop that uses it.  Not thread-safe.  Copying and pickling
    raise ``TypeError``.

    >>> async def main():
    ...     lim = RateLimiter(rate=50, burst=2)
    ...     taken = [lim.try_acquire(), lim.try_acquire(), lim.try_acquire()]
    ...     await lim.acquire()        # 20 ms later, when the next token exists
    ...     return taken
    >>> asyncio.run(main())
    [True, True, False]
    """

    __slots__ = (
        "_rate",
        "_burst",
        "_full_at",
        "_granted",
        "_waiters",
        "_woken",
        "_dead",
        "_timer",
        "_timer_when",
        "_loop",
        "__weakref__",  # _loop: LoopBound's binding (its subclasses hold the slot)
    )

    def __init__(self, rate: float, burst: float = 1) -> None:
        # Anchored at -inf: full whenever it is first read, on whichever loop.
        self._start(rate, burst, -_INF)
        self._loop: Optional[AbstractEventLoop] = None
        self._waiters: deque[tuple[Future[None], float]] = deque()
        # The head woken (its tokens exist) whose task has not resumed yet:
        # the line waits for it to take them.
        self._woken: Optional[tuple[Future[None], float]] = None
        self._dead = 0  # about how many cancelled waiters sit behind the head
        self._timer: Optional[TimerHandle] = None
        self._timer_when = 0.0

    def _retune(self, rate: float, burst: float) -> None:
        woken = self._woken
        for waiter, k in [*([woken] if woken is not None else []), *self._waiters]:
            if k > burst and (not waiter.done() or (woken is not None and waiter is woken[0])):
                raise ValueError(
                    f"burst ({burst!r}) must not be less than the tokens a waiting acquire asks for ({k!r})"
                )
        loop = self._loop
        if loop is None:  # never read: still full
            self._rate, self._burst = rate, burst
            return
        self._set(loop.time(), rate, burst)
        if self._waiters:
            self._plan()

    def _begin(self, tokens: object) -> tuple[float, AbstractEventLoop]:
        """``tokens`` checked, and the running loop (bound to it)."""
        k = _tokens(tokens)
        loop = _get_running_loop()
        if loop is not self._loop:
            self._get_loop()
        self._check_tokens(k)
        return k, loop

    def try_acquire(self, tokens: float = 1) -> bool:
        """Take ``tokens`` if they are there now and nobody waits; True if taken.  O(1)."""
        k, loop = self._begin(tokens)
        waiters = self._waiters
        if self._woken is not None:
            return False  # a woken waiter is about to take its tokens
        if waiters:
            if not waiters[0][0].done():
                return False  # first come, first served
            self._plan()  # the head gave up and has not left yet
            if waiters:
                return False
        if self._has(loop.time(), k):
            self._granted += k
            return True
        return False

    async def acquire(self, tokens: float = 1) -> bool:
        """Take ``tokens``, waiting behind earlier callers until they exist; return True.

        O(1), and O(1) amortised to cancel.  Raises ``ValueError`` if
        ``tokens`` exceeds ``burst``.
        """
        k, loop = self._begin(tokens)
        waiters = self._waiters
        if not waiters and self._woken is None and self._has(loop.time(), k):
            self._granted += k
            return True
        waiter = loop.create_future()
        waiters.append((waiter, k))
        head = waiters[0][0]
        if head is waiter or head.done():
            self._plan()
        while True:
            try:
                await waiter
            except BaseException:  # as asyncio.Semaphore: also on cancellation
                waiter.cancel()  # in case it is not done yet
                if waiter.cancelled():
                    self._leave()
                elif self._woken is not None and self._woken[0] is waiter:
                    # woken, but it will not proceed: the next one's turn
                    self._woken = None
                    self._plan()
                raise
            # Woken: take the tokens now, when this task proceeds, not when
            # the timer fired, so a late resume cannot bunch the starts.
            self._woken = None
            now = loop.time()
            wait = self._wait(now, k)
            if not now + wait > now:
                self._granted += k
                if waiters:
                    self._plan()
                return True
            # Not there after all (rate or burst lowered meanwhile): head of the line again.
            waiter = loop.create_future()
            waiters.appendleft((waiter, k))
            self._plan()

    def _give_back(self, k: float) -> None:
        """Return ``k`` tokens taken and not used (the bucket stays capped at ``burst``)."""
        self._granted -= k
        if self._waiters:
            self._plan()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        return None

    # -- the line and its one timer ------------------------------------------------------

    def _leave(self) -> None:
        """A waiter of the line gave up (its future is cancelled)."""
        waiters = self._waiters
        if waiters and waiters[0][0].done():
            self._plan()  # it (or another that gave up) heads the line
            return
        self._dead += 1
        if self._dead > len(waiters) >> 1:
            live = [w for w in waiters if not w[0].done()]
            waiters.clear()  # in place: waiting coroutines hold this deque
            waiters.extend(live)
            self._dead = 0

    def _plan(self) -> None:
        """Grant the head of the line if its tokens exist, and arm the one timer for the next."""
        waiters = self._waiters
        if self._woken is not None:  # it plans the next one when it proceeds
            self._disarm()
            return
        loop = self._loop
        assert loop is not None
        now = loop.time()
        while waiters:
            waiter, k = waiters[0]
            if waiter.done():  # gave up; its task has not run yet
                waiters.popleft()
                continue
            wait = self._wait(now, k)
            if now + wait > now:  # not there yet, by more than the clock can tell
                self._arm(loop, min(now + wait, now + MAX_ARM))
                return
            waiters.popleft()
            self._woken = (waiter, k)  # nobody can jump in before its task resumes
            waiter.set_result(None)
            break
        if not waiters:
            self._dead = 0
        self._disarm()

    # the timer (LoopTimer's _arm, _on_timer, _disarm): firing re-runs _plan,
    # which re-reads the clock, so never grants early
    _on_due = _plan

    # -- checks and representation ---------------------------------------------------------

    def _check(self) -> None:
        """Assert the invariants (between loop steps, the loop's clock standing still)."""
        waiting = [(w, k) for w, k in self._waiters if not w.done()]
        assert all(k <= self._burst for _, k in waiting)
        if self._woken is not None:
            assert self._timer is None, "a timer armed while a woken waiter has not resumed"
            return
        if self._timer is not None:
            assert waiting, "a timer armed with nobody waiting"
        if waiting and self._waiters[0][0] is waiting[0][0]:
            assert self._timer is not None, "the head waits but no timer is armed"
            loop = self._loop
            assert loop is not None
            now, k = loop.time(), waiting[0][1]
            avail = self._available(now)
            assert avail < k, "the head's tokens are there"
            due = now + (k - avail) / self._rate
            assert self._timer_when <= due + 1e-6 * (1 + abs(due)), "the timer is armed past the head"

    def __len__(self) -> int:
        """Whole tokens in the bucket now: how many ``try_acquire()`` calls would succeed."""
        loop = self._loop
        return self._whole(0.0 if loop is None else loop.time())

    def __repr__(self) -> str:
        loop = self._loop
        waiting = sum(not w.done() for w, _ in self._waiters) + (self._woken is not None)
        return self._repr(0.0 if loop is None else loop.time()) + f" waiting={waiting}>"
