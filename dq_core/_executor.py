"""PriorityExecutor: a concurrent.futures Executor that starts tasks by priority under a rate limit.

Pending tasks wait in a PriorityQueue as ``(priority, seq, task)``
(lowest priority first, FIFO among equals through ``seq``; tasks are never
compared).  The compiled queue does a put or get under a C lock that is
never held across a wait, so workers and submitters do not queue up on a
Python lock.  Workers block on a ``queue.SimpleQueue`` doorbell (C-level,
as ThreadPoolExecutor's do) that gets one ring per task.  A worker that
hears it takes a permit from the RateLimiter (permits are reserved first
come, first served, so threads never race for them), then the task at the
top of the queue *at that moment*: a task submitted while the permit was
awaited still goes first if it is more urgent.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
from concurrent.futures import BrokenExecutor, Executor, Future
from queue import Empty
from typing import Any, Callable, ClassVar, Optional, TypeVar

from ._convert import to_real
from ._queues import PriorityQueue
from ._ratelimit import RateLimiter

__all__ = ["PriorityExecutor"]

T = TypeVar("T")
Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]
_log = logging.getLogger("dq_core")
_counter = itertools.count()


class PriorityExecutor(Executor):
    """Thread pool that starts tasks in priority order, never faster than ``rate`` per second.

    ``submit`` runs at priority 0; ``submit_with_priority(priority, fn, ...)``
    lets lower priorities start first (FIFO among equals).  At most
    ``max_workers`` tasks run at once; with ``rate`` set, at most ``rate``
    tasks start per second after an initial ``burst``.  Workers start lazily;
    ``initializer(*initargs)`` runs in each, as in ThreadPoolExecutor.

    >>> with PriorityExecutor(max_workers=1) as ex:
    ...     f = ex.submit_with_priority(5, pow, 2, 10)
    ...     f.result()
    1024
    """

    #: The pending-task queue class; the test matrix swaps in each implementation's.
    _queue_class: ClassVar[Any] = PriorityQueue

    def __init__(self, max_workers: Optional[int] = None, rate: Optional[float] = None,
                 burst: float = 1, thread_name_prefix: str = "",
                 initializer: Optional[Callable[..., Any]] = None,
                 initargs: tuple[Any, ...] = ()) -> None:
        if max_workers is None:
            max_workers = min(32, (os.cpu_count() or 1) + 4)
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        self._max_workers = max_workers
        self._limiter = None if rate is None else RateLimiter(rate, burst)
        self._pending: PriorityQueue[tuple[float, int, Task]] = self._queue_class()
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

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)`` at priority 0; return its Future."""
        return self._submit(0.0, fn, args, kwargs)

    def submit_with_priority(self, priority: float, fn: Callable[..., T], /,
                             *args: Any, **kwargs: Any) -> Future[T]:
        """Schedule ``fn(*args, **kwargs)`` at ``priority`` (lowest starts first).  O(log n)."""
        p = priority if type(priority) is float and priority == priority else to_real(
            priority, "priority")
        return self._submit(p, fn, args, kwargs)

    def _submit(self, p: float, fn: Callable[..., T], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Future[T]:
        with self._lock:
            if self._broken:
                raise BrokenExecutor(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: Future[T] = Future()
            self._pending.put_nowait((p, next(self._seq), (future, fn, args, kwargs)))
            self._bell.put(None)
            # As ThreadPoolExecutor: a worker that turned idle takes it, else a new one.
            if not self._idle.acquire(False) and len(self._threads) < self._max_workers:
                self._start_worker()
        return future

    def _start_worker(self) -> None:
        t = threading.Thread(target=self._worker, daemon=True,
                             name=f"{self._prefix}_{len(self._threads)}")
        self._threads.add(t)
        t.start()

    def _worker(self) -> None:
        if self._initializer is not None:
            try:
                self._initializer(*self._initargs)
            except BaseException:
                _log.critical("Exception in initializer:", exc_info=True)
                self._set_broken("A thread initializer failed, the thread pool is not usable anymore")
                return
        get = self._pending.get_nowait
        pending = self._pending
        limiter = self._limiter
        while True:
            self._bell.get()
            if limiter is not None and pending.qsize():
                limiter.acquire()  # no lock held: submits go on meanwhile
            try:
                future, fn, args, kwargs = get()[2]
            except Empty:
                if self._shutdown or self._broken:
                    return
                continue  # its task was cancelled
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        result = fn(*args, **kwargs)
                    except BaseException as exc:
                        future.set_exception(exc)
                        del exc
                    else:
                        future.set_result(result)
                        del result
            finally:
                del future, fn, args, kwargs
                self._idle.release()

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

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} max_workers={self._max_workers} "
                f"workers={len(self._threads)} pending={self._pending.qsize()}>")
