"""PriorityExecutor: a concurrent.futures Executor that starts tasks by priority under a rate limit.

Pending tasks wait in a PriorityQueue as ``(priority, seq, task)``
(lowest priority first, FIFO among equals through ``seq``; tasks are never
compared).  The compiled queue does a put or get under a C lock that is
never held across a wait, so workers and submitters do not queue up on a
Python lock.  Workers block on a ``queue.SimpleQueue`` doorbell (C-level,
as ThreadPoolExecutor's do) that gets one ring per task.  A worker that
hears it takes a permit from the RateLimiter (first come, first served,
taken when the worker wakes, so one that wakes late cannot bunch starts), then the task at the
top of the queue *at that moment*: a task submitted while the permit was
awaited still goes first if it is more urgent.

Lifetime follows concurrent.futures.thread: workers hold only a weak
reference to the executor (and the queue, bell and limiter), so an executor
dropped without ``shutdown()`` is collected, its workers drain what was
submitted and exit; at interpreter exit ``_python_exit`` (registered with
``threading._register_atexit``, as ThreadPoolExecutor does) lets them drain
and joins them.  A worker survives any exception of its own machinery: the
future it was serving gets the exception, so none stays pending forever.
"""

from __future__ import annotations

import itertools
import logging
import operator
import os
import queue
import threading
import weakref
from concurrent.futures import BrokenExecutor, Executor, Future
from queue import Empty
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Optional, TypeVar

from ._convert import to_real
from ._pickling import Uncopyable
from ._priorityqueue import PriorityQueue
from ._ratelimiter import RateLimiter
from ._tokenbucket import task_burst

__all__ = ["PriorityExecutor"]

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import ParamSpec

    P = ParamSpec("P")  # only in annotations: ParamSpec is Python >= 3.10
Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]
_log = logging.getLogger("dq_core")
_counter = itertools.count()

# As concurrent.futures.thread: at interpreter exit, every worker drains its
# queue and is joined.  Held while mutating _threads_bells and _shutdown.
_threads_bells: "weakref.WeakKeyDictionary[threading.Thread, queue.SimpleQueue[None]]" = (
    weakref.WeakKeyDictionary()
)
_shutdown = False
_global_shutdown_lock = threading.Lock()


def _python_exit() -> None:
    global _shutdown
    with _global_shutdown_lock:
        _shutdown = True
        # under the lock that _submit holds while it adds workers: no thread
        # mutates the dict while it is listed, with or without a GIL
        items = list(_threads_bells.items())
    for _, bell in items:
        bell.put(None)
    for t, _ in items:
        t.join()


# Called just before the non-daemon threads are joined (bpo-39812).
threading._register_atexit(_python_exit)  # type: ignore[attr-defined]

if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_global_shutdown_lock.acquire,
        after_in_child=_global_shutdown_lock._at_fork_reinit,  # type: ignore[attr-defined]
        after_in_parent=_global_shutdown_lock.release,
    )


class PriorityExecutor(Uncopyable, Executor):
    """Thread pool that starts tasks in priority order, never faster than ``rate`` per second.

    ``submit`` runs at priority 0; ``submit_with_priority(priority, fn, ...)``
    lets lower priorities start first (FIFO among equals).  At most
    ``max_workers`` tasks run at once; with ``rate`` set, at most ``rate``
    tasks start per second after an initial ``burst`` (at least 1: a task
    takes one token).  Workers start lazily; ``initializer(*initargs)`` runs
    in each, as in ThreadPoolExecutor.  As there, an executor dropped
    without ``shutdown()`` runs what was submitted, then its workers exit.
    An executor cannot be copied or pickled.

    >>> with PriorityExecutor(max_workers=1) as ex:
    ...     f = ex.submit_with_priority(5, pow, 2, 10)
    ...     f.result()
    1024
    """

    #: The PriorityQueue class of the implementation: set by dq_core._assemble.
    _PriorityQueue: ClassVar[type[PriorityQueue[Any]]]

    def __init__(
        self,
        max_workers: Optional[int] = None,
        rate: Optional[float] = None,
        burst: float = 1,
        thread_name_prefix: str = "",
        initializer: Optional[Callable[..., Any]] = None,
        initargs: tuple[Any, ...] = (),
    ) -> None:
        if max_workers is None:
            max_workers = min(32, (os.cpu_count() or 1) + 4)
        elif not hasattr(type(max_workers), "__index__"):
            raise TypeError(f"max_workers must be an int, not {type(max_workers).__name__!r}")
        max_workers = operator.index(max_workers)
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        b = task_burst(burst)
        self._max_workers = max_workers
        self._limiter = None if rate is None else RateLimiter(rate, b)
        self._pending: PriorityQueue[tuple[float, int, Task]] = self._PriorityQueue()
        self._seq = itertools.count()
        self._lock = threading.Lock()
        # One ring per task, one per worker at shutdown: a worker that hears
        # one finds either a task, or the pool closing.
        self._bell: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._threads: set[threading.Thread] = set()
        self._idle = threading.Semaphore(0)  # released by each worker that turns idle
        self._shutdown = False
        self._broken: Optional[str] = None
        self._prefix = thread_name_prefix or f"PriorityExecutor-{next(_counter)}"
        self._initializer = initializer
        self._initargs = initargs

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)`` at priority 0; return its Future."""
        return self._submit(0.0, fn, args, kwargs)

    def submit_with_priority(
        self, priority: float, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)`` at ``priority`` (lowest starts first).  O(log n)."""
        p = priority if type(priority) is float and priority == priority else to_real(priority, "priority")
        return self._submit(p, fn, args, kwargs)

    def _submit(
        self, p: float, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Future[T]:
        with self._lock, _global_shutdown_lock:
            if self._broken:
                raise BrokenExecutor(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if _shutdown:
                raise RuntimeError("cannot schedule new futures after interpreter shutdown")
            future: Future[T] = Future()
            self._pending.put_nowait((p, next(self._seq), (future, fn, args, kwargs)))
            self._bell.put(None)
            # As ThreadPoolExecutor: a worker that turned idle takes it, else a new one.
            if not self._idle.acquire(False) and len(self._threads) < self._max_workers:
                self._start_worker()
        return future

    def _start_worker(self) -> None:
        # Called with both locks held.  The worker gets a weak reference only:
        # when the executor is collected, the callback wakes it to drain and exit.
        def collected(_: object, bell: queue.SimpleQueue[None] = self._bell) -> None:
            bell.put(None)

        t = threading.Thread(
            target=_worker,
            name=f"{self._prefix}_{len(self._threads)}",
            args=(
                weakref.ref(self, collected),
                self._pending,
                self._bell,
                self._limiter,
                self._idle,
                self._initializer,
                self._initargs,
            ),
        )
        t.start()
        self._threads.add(t)
        _threads_bells[t] = self._bell

    def _set_broken(self, reason: str) -> None:
        with self._lock:
            self._broken = reason
            pending = [entry[2] for entry in self._pending.get_many()]
            for _ in self._threads:
                self._bell.put(None)
        for future, *_ in pending:
            if future.set_running_or_notify_cancel():
                future.set_exception(BrokenExecutor(reason))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop accepting tasks; optionally cancel the pending ones; optionally wait.

        Workers finish the tasks already started (and, without
        ``cancel_futures``, every pending one) and exit.
        """
        with self._lock:
            self._shutdown = True
            pending = [entry[2] for entry in self._pending.get_many()] if cancel_futures else []
            threads = list(self._threads)
            for _ in threads:
                self._bell.put(None)
        for future, *_ in pending:
            future.cancel()
        if wait:
            for t in threads:
                t.join()

    def __len__(self) -> int:
        """Tasks submitted and not started yet (not reliable, like ``qsize()``)."""
        return self._pending.qsize()

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} max_workers={self._max_workers} "
            f"workers={len(self._threads)} pending={self._pending.qsize()}>"
        )


def _worker(
    executor_ref: "weakref.ref[PriorityExecutor]",
    pending: Any,
    bell: queue.SimpleQueue[None],
    limiter: Optional[RateLimiter],
    idle: threading.Semaphore,
    initializer: Optional[Callable[..., Any]],
    initargs: tuple[Any, ...],
) -> None:
    # A worker's whole life; it holds no strong reference to the executor
    # while it waits.
    if initializer is not None:
        try:
            initializer(*initargs)
        except BaseException:
            _log.critical("Exception in initializer:", exc_info=True)
            executor = executor_ref()
            if executor is not None:
                executor._set_broken("A thread initializer failed, the thread pool is not usable anymore")
            return
    while True:
        bell.get()
        if _serve_one(pending, limiter):
            idle.release()
            continue
        # No task left for this ring: a cancelled task, or the pool closing.
        executor = executor_ref()
        if _shutdown or executor is None or executor._shutdown or executor._broken:
            bell.put(None)  # pass the news on to the other workers
            return
        del executor


def _serve_one(pending: Any, limiter: Optional[RateLimiter]) -> bool:
    """Take a permit and the most urgent task, and run it; False if no task was left."""
    task: Optional[Task] = None
    try:
        if limiter is not None and pending.qsize():
            limiter.acquire()  # no lock held: submits go on meanwhile
        try:
            task = pending.get_nowait()[2]
        except Empty:
            return False
        future, fn, args, kwargs = task
        if future.set_running_or_notify_cancel():
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
    except BaseException as exc:
        # The worker's own machinery failed, not the task: the future this
        # ring was for gets the error, so it cannot stay pending forever.
        _log.critical("Exception in worker", exc_info=True)
        _fail(task, pending, exc)
    return True


def _fail(task: Optional[Task], pending: Any, exc: BaseException) -> None:
    try:
        if task is None:
            try:
                task = pending.get_nowait()[2]
            except Empty:
                return
        future = task[0]
        if not future.done() and (future.running() or future.set_running_or_notify_cancel()):
            future.set_exception(exc)
    except BaseException:
        _log.critical("Exception in worker, failing a future", exc_info=True)
