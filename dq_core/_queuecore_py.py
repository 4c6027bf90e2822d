"""PriorityQueue's core: the pure-Python twin of the compiled ``dq_core._queuecore``.

``QueueCore`` holds the lock (``LockedBase``, from ``_lockcore_py``), the
heap (an ``ItemHeap``, from ``_itemheapcore_py``) and the uncontended
put/get paths of ``dq_core.PriorityQueue``; ``QueueView`` is its ``queue``
attribute, a live read-only view of the heap list.

>>> q = QueueCore()
>>> for item in [(2, "b"), (1, "z"), (2, "a")]:
...     q.put_nowait(item)
>>> q.queue[0], len(q.queue)
((1, 'z'), 3)
>>> [q.get_nowait() for _ in range(q.qsize())]
[(1, 'z'), (2, 'a'), (2, 'b')]
"""

from __future__ import annotations

import queue as _stdlib_queue
import threading
import types
from collections import deque
from collections.abc import Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Iterator,
    Mapping,
    NoReturn,
    Optional,
    SupportsIndex,
    Union,
    overload,
)

from ._exceptions import SHUTDOWN_GET, SHUTDOWN_PUT, Empty, Full, ShutDown
from ._itemheapcore_py import ItemHeap, T
from ._lockcore_py import LockedBase
from ._validate import check_real_maxsize

#: The interpreter shortcuts its compiled twin may take (name -> on): pure Python takes none.
SHORTCUTS: Mapping[str, bool] = types.MappingProxyType({})


__all__ = ["QueueCore", "QueueView"]


class QueueCore(LockedBase, _stdlib_queue.PriorityQueue[T]):
    """The lock, the heap and the uncontended put/get of PriorityQueue.

    A ``queue.PriorityQueue`` by inheritance only: every method of the
    standard library's class is overridden here or in ``dq_core._priorityqueue``,
    and its ``__init__`` never runs (no ``mutex`` or conditions).  Blocking
    waits, ``task_done``/``join`` and ``shutdown`` live in
    ``dq_core._priorityqueue``, shared by both implementations; they call back
    into ``_lock()``/``_unlock()`` and park on the waiter deques.
    """

    __slots__ = (
        "_heap",
        "_mutex",
        "_owner",
        "_maxsize",
        "unfinished_tasks",
        "is_shutdown",
        "_getters",
        "_putters",
        "_joiners",
    )

    unfinished_tasks: int
    is_shutdown: bool

    def __init__(self, maxsize: int = 0) -> None:
        self._heap: ItemHeap[T] = ItemHeap()
        self._mutex = threading.Lock()
        self._owner = 0
        # threads parked in get, put and join (see dq_core._waiting)
        self._getters: deque[Any] = deque()
        self._putters: deque[Any] = deque()
        self._joiners: deque[Any] = deque()
        self.maxsize = maxsize
        self.unfinished_tasks = 0
        self.is_shutdown = False

    # maxsize is kept as given, as the standard library keeps it (a float
    # works); what cannot be compared with 0 is refused here, not at a put.
    @property
    def maxsize(self) -> int:
        """Number of items allowed in the queue (0 or less: no bound)."""
        return self._maxsize

    @maxsize.setter
    def maxsize(self, maxsize: int) -> None:
        check_real_maxsize(maxsize)
        self._maxsize = maxsize

    # Hooks the shared layer (dq_core._priorityqueue) provides.
    def _wait_for_room(self, block: bool, timeout: Optional[float]) -> None:
        raise NotImplementedError

    def _wait_for_item(self, block: bool, timeout: Optional[float]) -> None:
        raise NotImplementedError

    def _add(self, item: T) -> None:
        # With the lock held: queue it, count it, wake one getter.
        self._heap.push(item)
        self.unfinished_tasks += 1
        if self._getters:
            self._getters.popleft().release()

    def _take(self) -> T:
        # With the lock held: unqueue the lowest item, wake one putter.
        item = self._heap.pop()
        if self._putters:
            self._putters.popleft().release()
        return item

    # The standard library's ``queue: list[T]`` attribute, as a read-only view.
    @property
    def queue(self) -> QueueView[T]:  # type: ignore[override]
        """A live, read-only view of the heap list: ``queue[0]`` is the head.  O(1)."""
        return QueueView(self)

    def qsize(self, /) -> int:
        """Return the approximate size of the queue (not reliable!).  O(1)."""
        return len(self._heap)

    def empty(self, /) -> bool:
        """Return True if the queue is empty (not reliable!).  O(1)."""
        return not self._heap

    def full(self, /) -> bool:
        """Return True if the queue is full (not reliable!).  O(1)."""
        return 0 < self._maxsize <= len(self._heap)

    def put(self, /, item: T, block: bool = True, timeout: Optional[float] = None) -> None:
        """Put ``item`` into the queue.  O(log n).

        With ``block`` true and ``timeout`` None, wait for a free slot; with a
        non-negative ``timeout``, wait at most that long and raise ``Full``;
        with ``block`` false, raise ``Full`` at once if there is no room.
        Raises ``ShutDown`` once the queue is shut down.
        """
        self._lock()
        try:
            if self.is_shutdown:
                raise ShutDown(SHUTDOWN_PUT)
            # With room and no timeout to check, the wait is a no-op: skip the call.
            # "maxsize > 0" first, as queue.Queue.put and the compiled core
            # ask: a maxsize that is no number fails with their message
            m = self._maxsize
            if (m > 0 and len(self._heap) >= m) or (block and timeout is not None and m > 0):
                self._wait_for_room(block, timeout)
            self._add(item)
        finally:
            self._unlock()

    def put_nowait(self, /, item: T) -> None:
        """Put ``item`` without blocking; ``Full`` if there is no room.  O(log n)."""
        self._lock()
        try:
            if self.is_shutdown:
                raise ShutDown(SHUTDOWN_PUT)
            m = self._maxsize
            if m > 0 and len(self._heap) >= m:
                raise Full
            self._add(item)
        finally:
            self._unlock()

    def get(self, /, block: bool = True, timeout: Optional[float] = None) -> T:
        """Remove and return the lowest item.  O(log n).

        With ``block`` true and ``timeout`` None, wait for an item; with a
        non-negative ``timeout``, wait at most that long and raise ``Empty``;
        with ``block`` false, raise ``Empty`` at once if there is none.
        Once shut down, raises ``ShutDown`` when the queue is empty.
        """
        self._lock()
        try:
            if not self._heap or (block and timeout is not None):
                self._wait_for_item(block, timeout)
            return self._take()
        finally:
            self._unlock()

    def get_nowait(self, /) -> T:
        """Remove and return the lowest item without blocking; ``Empty`` if none.  O(log n)."""
        self._lock()
        try:
            if not self._heap:
                if self.is_shutdown:
                    raise ShutDown(SHUTDOWN_GET)
                raise Empty
            return self._take()
        finally:
            self._unlock()


def _read_only() -> NoReturn:
    raise TypeError("the queue's heap list is read-only: use put(), get() or clear()")


class QueueView(Generic[T]):
    """A live, read-only view of a PriorityQueue's heap list (``q.queue``).

    Indexing, ``len``, iteration and ``in`` read the heap list in place:
    ``q.queue[0]`` is the head (O(1)) and the other positions are in the
    order heapq gives the standard library's list.  ``clear()`` empties the
    queue as the standard library's ``q.queue.clear()`` does (neither
    ``unfinished_tasks`` nor waiting threads are touched); any other
    mutation raises ``TypeError``.  Reads take no lock: like ``qsize()``,
    they are approximate while other threads use the queue.  Copying or
    pickling it gives a plain list.
    """

    __slots__ = ("_queue", "_heap")
    if not TYPE_CHECKING:
        __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, queue: QueueCore[T]) -> None:
        if not isinstance(queue, QueueCore):
            raise TypeError(f"queue must be a PriorityQueue, not {type(queue).__name__!r}")
        self._queue = queue
        self._heap = queue._heap

    def __len__(self) -> int:
        return len(self._heap._items)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[T, list[T]]:
        return self._heap._items[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._heap._items)

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._heap._items)

    def __contains__(self, value: object) -> bool:
        return value in self._heap._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, QueueView):
            other = other._heap._items
        elif not isinstance(other, list):
            return NotImplemented
        return self._heap._items == other

    def __ne__(self, other: object) -> bool:
        if isinstance(other, QueueView):
            other = other._heap._items
        elif not isinstance(other, list):
            return NotImplemented
        return self._heap._items != other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._heap._items)

    def __reduce__(self) -> tuple[type[list[T]], tuple[list[T]]]:
        return (list, (list(self._heap._items),))

    # + and * give new lists, as on the standard library's list
    def __add__(self, other: list[T]) -> list[T]:
        return list(self._heap._items) + other

    def __radd__(self, other: list[T]) -> list[T]:
        return other + list(self._heap._items)

    def __mul__(self, n: SupportsIndex) -> list[T]:
        return list(self._heap._items) * n

    def __rmul__(self, n: SupportsIndex) -> list[T]:
        return n * list(self._heap._items)

    def copy(self) -> list[T]:
        """Return a list of the items, in heap order.  O(n)."""
        return list(self._heap._items)

    def index(self, value: object, *args: Any) -> int:
        """Return the first position of ``value`` (``list.index``).  O(n)."""
        return self._heap._items.index(value, *args)  # type: ignore[arg-type]

    def count(self, value: object) -> int:
        """Return how many items equal ``value``.  O(n)."""
        return self._heap._items.count(value)  # type: ignore[arg-type]

    def clear(self) -> None:
        """Remove every item, as ``list.clear()`` on the standard library's queue.  O(n).

        Unlike ``PriorityQueue.clear()``, this leaves ``unfinished_tasks``
        and waiting threads alone, exactly as the standard library does.
        """
        self._queue._lock()
        try:
            dropped = self._heap.clear()
        finally:
            self._queue._unlock()
        del dropped  # item finalisers run outside the lock

    def append(self, item: object) -> NoReturn:
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def extend(self, items: object) -> NoReturn:
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def insert(self, index: object, item: object) -> NoReturn:
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def pop(self, index: object = -1) -> NoReturn:
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def remove(self, value: object) -> NoReturn:
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def sort(self, *, key: object = None, reverse: object = False) -> NoReturn:
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def reverse(self) -> NoReturn:
        """Refused: the view is read-only (``TypeError``)."""
        _read_only()

    def __setitem__(self, index: object, value: object) -> NoReturn:
        _read_only()

    def __delitem__(self, index: object) -> NoReturn:
        _read_only()

    def __iadd__(self, other: object) -> NoReturn:
        _read_only()

    def __imul__(self, other: object) -> NoReturn:
        _read_only()


Sequence.register(QueueView)
