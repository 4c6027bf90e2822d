"""What the queues' reprs read: the length and the head, together.

A leaf below the threaded and the asyncio faces, which both describe a
queue this way (``DelayQueue`` and ``aio.DelayQueue`` with the very same
words) and so share it here rather than import each other.
"""

from __future__ import annotations

import reprlib
from typing import Any, Callable

__all__ = ["delay_queue_repr", "head_snapshot"]


def head_snapshot(queue: Any, head: Callable[[Any], Any]) -> tuple[int, Any]:
    """``(len, head(heap))`` of ``queue``'s heap read together under its lock (``(0, None)`` if empty).

    For ``__repr__``: read without the lock, another thread could empty the
    heap between the two reads.  A thread that already holds the lock (a
    clock or a comparison describing the queue) reads without taking it.
    The caller formats the head after the lock is released: its ``repr``
    is user code.  A queue without a lock (``dq_core.aio.DelayQueue``) is
    read as it is: one thread uses it.
    """
    if not hasattr(queue, "_lock"):
        return _head(queue._heap, head)
    try:
        queue._lock()
    except RuntimeError:  # held by this thread: nothing else changes the heap
        return _head(queue._heap, head)
    try:
        return _head(queue._heap, head)
    finally:
        queue._unlock()


def _head(heap: Any, head: Callable[[Any], Any]) -> tuple[int, Any]:
    n = len(heap)
    return n, (head(heap) if n else None)


def delay_queue_repr(queue: Any) -> str:
    """A DelayQueue's repr, threaded or asyncio: its length and next deadline."""
    n, deadline = head_snapshot(queue, lambda heap: heap.peekitem()[0])
    if not n:
        return f"<{type(queue).__name__} len=0>"
    return f"<{type(queue).__name__} len={n} next_deadline={reprlib.repr(deadline)}>"
