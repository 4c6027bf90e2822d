"""aio.PriorityTaskPool: coroutines started lowest priority first, at most N at once, at most R per second.

The asyncio form of seed 004's priority poller and of the threaded
``PriorityExecutor``.  ``submit`` keeps the coroutine in the
implementation's keyed ``Heap`` under its priority (lowest first, first in
first out among equals; only priorities are compared, never coroutines)
and returns a ``PoolFuture``: what a Task is to its caller (await it,
cancel it, add callbacks), created before the task exists.

The pool starts tasks from one place, ``_dispatch``: while fewer than
``max_concurrency`` run and a coroutine is pending, it takes a token (with
``rate``) and makes a task of the coroutine at the top of the heap *at that
moment*, so tasks begin in exactly the order they are started.  A dispatch
is scheduled once per loop step of submits (``call_soon``), so coroutines
submitted together start in priority order, and runs again whenever a task
ends.  Without a token at hand, one task waits for it in the pool's
``aio.RateLimiter`` (its one loop timer, no polling) and dispatches when it
comes; a token that finds nothing left to start goes back to the limiter.

Cancelling a future before its start takes its coroutine out of the heap
at once and closes it (no "never awaited" warning); after, it cancels the
task, and the future ends as the task does.  An exception stays in its own
future.
"""

from __future__ import annotations

import asyncio
import operator
from asyncio import AbstractEventLoop, Future, Task
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Coroutine, Optional, TypeVar

from .._aiowaiting import wakeup_all
from .._convert import to_real
from .._tokenbucket import task_burst
from ._base import LoopBound
from ._ratelimiter import RateLimiter

if TYPE_CHECKING:
    from .._heapcore_py import Heap

__all__ = ["PoolFuture", "PriorityTaskPool"]

R = TypeVar("R")


def _concurrency(value: object) -> int:
    if not hasattr(type(value), "__index__"):
        raise TypeError(f"max_concurrency must be an int, not {type(value).__name__!r}")
    n = operator.index(value)  # type: ignore[arg-type]
    if n <= 0:
        raise ValueError(f"max_concurrency must be greater than 0, got {n!r}")
    return n


class PoolFuture(Future[R]):
    """The Future ``PriorityTaskPool.submit`` returns, of the coroutine's result.

    Before the start, ``cancel()`` takes the coroutine out of the pool (it
    is closed, never run); after, it cancels the task running it, and the
    Future ends as the task does (cancelled, unless the coroutine declines).
    """

    _pool: PriorityTaskPool
    _coro: Coroutine[Any, Any, R]
    _handle: int
    _task: Optional[Task[R]]

    def __init__(
        self, pool: PriorityTaskPool, coro: Coroutine[Any, Any, R], *, loop: AbstractEventLoop
    ) -> None:
        super().__init__(loop=loop)
        self._pool = pool
        self._coro = coro
        self._handle = -1
        self._task = None

    def _start(self) -> None:
        task = self.get_loop().create_task(self._coro)
        self._task = task
        self._pool._tasks.add(task)
        task.add_done_callback(self._settle)

    def _settle(self, task: Task[R]) -> None:
        # The task ended: so does this Future, the same way; the slot is free.
        if not self.done():
            if task.cancelled():
                Future.cancel(self)
            else:
                exc = task.exception()  # retrieved here: it is reported (if ever) by this Future
                if exc is None:
                    self.set_result(task.result())
                else:
                    self.set_exception(exc)
        self._pool._finished(task)

    def cancel(self, msg: Any = None) -> bool:
        """Withdraw the coroutine if not started yet, else cancel its task; True if that was done."""
        task = self._task
        if task is not None:
            return task.cancel(msg)
        if self.done():
            return False
        self._pool._withdraw(self)
        return super().cancel(msg)


class PriorityTaskPool(LoopBound):
    """Runs coroutines as tasks, lowest priority first, at most ``max_concurrency`` at once.

    ``submit(coro, priority=0)`` returns a Future of ``coro``'s result
    (a ``PoolFuture``, which cancels as a Task does); pending coroutines
    start in (priority, submission) order as slots free up, and with
    ``rate`` set, at most ``rate`` start per second after an initial
    ``burst`` (at least 1: a start takes one token).  Cancelling the
    future before the start removes the coroutine (closed, never run);
    after, it cancels the running task.  An exception ends only its own
    task.  ``async with pool:`` waits on exit for everything submitted
    (also what is submitted while it waits), then closes the pool;
    ``close(cancel_pending=False)`` refuses new coroutines and can cancel
    those not started.

    The pool binds to the first running loop that uses it; not
    thread-safe; copying and pickling raise ``TypeError``.

    >>> async def main():
    ...     order = []
    ...     async def job(name):
    ...         order.append(name)
    ...     async with PriorityTaskPool(max_concurrency=1) as pool:
    ...         for priority, name in [(3, "c"), (1, "a"), (2, "b")]:
    ...             pool.submit(job(name), priority)
    ...     return order
    >>> asyncio.run(main())
    ['a', 'b', 'c']
    """

    __slots__ = (
        "_max",
        "_limiter",
        "_pending",
        "_running",
        "_tasks",
        "_unfinished",
        "_permit_task",
        "_soon",
        "_closed",
        "_idle",
        "_loop",
        "__weakref__",  # _loop: LoopBound's binding
    )

    #: The keyed heap class of the implementation: set by dq_core._assemble.
    _Heap: ClassVar[type[Heap[Any]]]

    def __init__(self, max_concurrency: int, rate: Optional[float] = None, burst: float = 1) -> None:
        self._max = _concurrency(max_concurrency)
        b = task_burst(burst)
        self._limiter = None if rate is None else RateLimiter(rate, b)
        self._pending: Heap[PoolFuture[Any]] = self._Heap()  # the futures not started
        self._running = 0  # tasks started and not finished
        self._tasks: set[Task[Any]] = set()  # the tasks running
        self._unfinished = 0  # futures submitted and not done
        self._permit_task: Optional[Task[None]] = None
        self._soon = False  # a dispatch is scheduled
        self._closed = False
        self._idle: deque[Future[None]] = deque()  # __aexit__ waiting for no task left
        self._loop: Optional[AbstractEventLoop] = None

    @property
    def max_concurrency(self) -> int:
        """The most tasks running at once."""
        return self._max

    def submit(self, coro: Coroutine[Any, Any, R], priority: float = 0) -> Future[R]:
        """Schedule ``coro`` at ``priority`` (lowest starts first); return a Future of its result.

        The Future is what a Task would be to the caller: cancelling it before
        the start removes the coroutine (closed, never run), after it cancels
        the task running it.  O(log n).  Raises ``RuntimeError`` once the
        pool is closed; a coroutine refused, for that or a bad ``priority``,
        is closed (it will never run, and Python does not warn that it was
        never awaited).
        """
        if not asyncio.iscoroutine(coro):
            raise TypeError(f"coro must be a coroutine, not {type(coro).__name__!r}")
        try:
            p = (
                priority
                if type(priority) is float and priority == priority
                else to_real(priority, "priority")
            )
            loop = self._get_loop()
            if self._closed:
                raise RuntimeError("cannot submit to a closed PriorityTaskPool")
        except BaseException:
            coro.close()
            raise
        future: PoolFuture[R] = PoolFuture(self, coro, loop=loop)
        future._handle = self._pending.push(p, future)
        self._unfinished += 1
        future.add_done_callback(self._forget)
        if not self._soon:  # once per loop step: tasks submitted together start by priority
            self._soon = True
            loop.call_soon(self._dispatch)
        return future

    def _withdraw(self, future: PoolFuture[Any]) -> None:
        # A future cancelled before its start: out of the heap, its coroutine closed.
        self._pending.remove(future._handle)
        if not self._pending:
            self._stop_permit()
        future._coro.close()  # never started: no "never awaited" warning

    def _forget(self, future: Future[Any]) -> None:
        self._unfinished -= 1
        if not self._unfinished:
            wakeup_all(self._idle)

    def _finished(self, task: Task[Any]) -> None:
        # A started task ended, however: its slot is free.
        self._tasks.discard(task)
        self._running -= 1
        self._dispatch()

    def _dispatch(self, permit: bool = False) -> None:
        """Start tasks from the top of the heap while slots (and tokens) allow."""
        self._soon = False
        pending = self._pending
        limiter = self._limiter
        while pending and self._running < self._max:
            if limiter is not None and not permit:
                if self._permit_task is None and limiter.try_acquire():
                    permit = True
                else:
                    if self._permit_task is None:
                        # A plain Task, never the loop's task factory: an eager
                        # one (asyncio.eager_task_factory) would run it here, and
                        # a token there at once would dispatch inside this call
                        # and leave a finished task as the permit on its way.
                        self._permit_task = Task(self._await_permit(limiter), loop=self._loop)
                    break
            future = pending.pop()  # never a cancelled one: cancel() takes it out
            had, permit = permit, False
            self._running += 1
            try:
                future._start()
            except BaseException as exc:
                # No task: the slot and the token stay free, the future fails.
                self._running -= 1
                permit = had
                future._coro.close()
                if not future.done():
                    future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
        if permit and limiter is not None:
            limiter._give_back(1.0)  # nothing left to start with it

    async def _await_permit(self, limiter: RateLimiter) -> None:
        try:
            await limiter.acquire()
        finally:
            if self._permit_task is asyncio.current_task():
                self._permit_task = None
        self._dispatch(permit=True)

    def _stop_permit(self) -> None:
        task = self._permit_task
        if task is not None:
            self._permit_task = None
            task.cancel()  # its place in the limiter's line is given back

    def close(self, cancel_pending: bool = False) -> None:
        """Refuse new tasks; with ``cancel_pending``, cancel every task not started.  O(n log n).

        Tasks already running go on; so do pending ones without ``cancel_pending``.
        """
        self._closed = True
        if cancel_pending:
            for future in self._pending.pop_many(len(self._pending)):
                future._coro.close()
                Future.cancel(future)
            self._stop_permit()

    async def __aenter__(self) -> PriorityTaskPool:
        self._get_loop()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        """Wait for every task submitted (also those submitted meanwhile), then close.

        If the wait is cancelled, every task of the pool is cancelled too.
        """
        loop = self._get_loop()
        try:
            while self._unfinished:
                waiter = loop.create_future()
                self._idle.append(waiter)
                await waiter
        except BaseException:
            self.close(cancel_pending=True)
            for task in list(self._tasks):
                task.cancel()
            raise
        self.close()

    def _check(self) -> None:
        """Assert the invariants (call between loop steps, not inside one)."""
        assert 0 <= self._running <= self._max
        assert self._running == len(self._tasks) <= self._unfinished
        if self._pending and self._running < self._max and not self._soon:
            assert self._limiter is not None and self._permit_task is not None, (
                "a task waits for a free slot with no token on its way"
            )

    def __len__(self) -> int:
        """Tasks submitted and not started yet."""
        return len(self._pending)

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} max_concurrency={self._max} running={self._running} "
            f"pending={len(self._pending)}>"
        )
