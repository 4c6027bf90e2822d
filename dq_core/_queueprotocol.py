"""QueueProtocol: what the thread-safe queues share, admission and shutdown."""

from __future__ import annotations

from collections import deque
from time import monotonic
from typing import TYPE_CHECKING, Any, Optional

from ._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT, Full, ShutDown
from ._validate import check_timeout
from ._waiting import notify_all, wait

__all__ = ["QueueProtocol"]


class QueueProtocol:
    """What the thread-safe queues share: admission (shutdown, room) and shutdown.

    A queue using it has ``maxsize``, ``is_shutdown``, the waiter deques
    ``_getters`` and ``_putters``, ``_lock``/``_unlock``, and ``_on_shutdown``,
    which empties it on an immediate shutdown.
    """

    maxsize: Any
    is_shutdown: bool
    _getters: "deque[Any]"
    _putters: "deque[Any]"

    if TYPE_CHECKING:  # provided by the queue (DelayCore or QueueCore)

        def _lock(self) -> None: ...
        def _unlock(self) -> None: ...

    def _held(self) -> int:
        # The items counted against maxsize.  PriorityQueue, which has no
        # len() (as the stdlib's has none), overrides it.
        return len(self)  # type: ignore[arg-type]

    def _check_drained(self) -> None:
        # What a taker meets once the queue is shut down and holds nothing.
        if self.is_shutdown and not self._held():
            raise ShutDown(SHUTDOWN_GET)

    def _on_shutdown(self, immediate: bool) -> object:
        """Called with the lock held by shutdown: return what an immediate one drops."""
        raise NotImplementedError

    def _wait_for_room(self, block: bool, timeout: Optional[float]) -> None:
        # Called with the lock held and maxsize > 0, as queue.Queue.put waits.
        if not block:
            if self._held() >= self.maxsize:
                raise Full
        elif timeout is None:
            while self._held() >= self.maxsize:
                wait(self, self._putters, None)
                if self.is_shutdown:
                    raise ShutDown(SHUTDOWN_PUT)
        else:
            end = monotonic() + check_timeout(timeout)
            while self._held() >= self.maxsize:
                remaining = end - monotonic()
                if remaining <= 0.0:
                    raise Full
                wait(self, self._putters, remaining)
                if self.is_shutdown:
                    raise ShutDown(SHUTDOWN_PUT)

    def _shut_down(self, immediate: bool) -> None:
        """The work of ``shutdown``: from now on ``put`` raises ``ShutDown``; wake every waiter."""
        dropped: object = None
        self._lock()
        try:
            self.is_shutdown = True
            dropped = self._on_shutdown(immediate)
            notify_all(self._getters)
            notify_all(self._putters)
        finally:
            self._unlock()
        del dropped  # item finalisers run outside the lock
