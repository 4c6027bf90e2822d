"""``cached``: memoise a function or coroutine function, one computation per key.

The values live in a mapping (a ``WheelTTLDict`` by default, which
``dq_core._assemble`` hands down as the implementation's class; or any
mutable mapping passed as ``cache=``, a ``TTLDict`` for instance).  A key
being computed has a *flight*: the first caller (the leader) runs the
function, outside every lock; the callers that come meanwhile wait for
its result, threads on an event, coroutines on a future of their own
loop.  If the leader raises or is cancelled, nothing is cached: its
waiters wake and go round again, and the first of them leads a new
flight, so no waiter is stranded and the function runs once at a time
per key.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Hashable,
    MutableMapping,
    NamedTuple,
    Optional,
    TypeVar,
)

if TYPE_CHECKING:
    import asyncio

from ._convert import to_count

__all__ = ["CacheInfo", "make_cached"]

F = TypeVar("F", bound=Callable[..., Any])

_MISSING: Any = object()
_KWD_MARK = (object(),)  # between positional and keyword arguments in a key
_FAST_TYPES = frozenset({int, str})


def _gil_enabled() -> bool:
    is_enabled = getattr(sys, "_is_gil_enabled", None)  # 3.13+
    return True if is_enabled is None else bool(is_enabled())


class CacheInfo(NamedTuple):
    """Counters of a cached function, as ``functools.lru_cache``'s ``cache_info()``."""

    hits: int
    misses: int
    maxsize: Optional[int]
    currsize: int


class _HashedKey(list):  # type: ignore[type-arg]
    # a key's hash computed once, however many look-ups use it (as functools does)
    __slots__ = ("hashvalue",)

    def __init__(self, tup: tuple[Any, ...]) -> None:
        self[:] = tup
        self.hashvalue = hash(tup)

    def __hash__(self) -> int:  # type: ignore[override]
        return self.hashvalue


def _make_key(args: tuple[Any, ...], kwargs: dict[str, Any], typed: bool) -> Hashable:
    key = args
    if kwargs:
        key += _KWD_MARK
        for item in kwargs.items():
            key += item
    if typed:
        key += tuple(type(v) for v in args)
        if kwargs:
            key += tuple(type(v) for v in kwargs.values())
    elif len(key) == 1 and type(key[0]) in _FAST_TYPES:
        return key[0]  # type: ignore[no-any-return]
    return _HashedKey(key)


class _Flight:
    """One computation under way: its outcome, and how its waiters are woken."""

    __slots__ = ("ok", "value", "event", "futures")

    def __init__(self) -> None:
        self.ok = False  # True once the leader's value is in ``value``
        self.value: Any = None
        self.event: Optional[threading.Event] = None  # made by the first waiting thread
        self.futures: list[asyncio.Future[None]] = []  # one per waiting coroutine

    def land(self) -> None:
        """Wake every waiter (after ``ok``/``value`` are set, or not: the leader failed)."""
        if self.event is not None:
            self.event.set()
        if not self.futures:
            return
        import asyncio  # only once a coroutine waits: import dq_core imports no asyncio

        try:
            running: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for fut in self.futures:
            loop = fut.get_loop()
            if loop is running:
                if not fut.done():
                    fut.set_result(None)
            else:
                try:
                    loop.call_soon_threadsafe(_wake, fut)
                except RuntimeError:  # that loop is closed: nobody waits there
                    pass


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def make_cached(default_mapping: type, atomic_reads: bool = False) -> Callable[..., Any]:
    """The ``cached`` decorator whose caches are ``default_mapping`` (a WheelTTLDict class).

    ``atomic_reads``: the mapping is the compiled one, whose ``get`` of an
    int or str key runs no Python code while the mapping is changed (the
    clock is read in C; what it releases, it releases after the change):
    with the GIL, a hit on such a key in a cache made here needs no lock.
    """

    def cached(
        ttl: Any = None,
        maxsize: Optional[int] = 128,
        *,
        typed: bool = False,
        key: Optional[Callable[..., Hashable]] = None,
        cache: Optional[MutableMapping[Any, Any]] = None,
    ) -> Any:
        if callable(ttl) and maxsize == 128 and not typed and key is None and cache is None:
            return cached()(ttl)  # @cached without parentheses
        if cache is not None:
            if ttl is not None or maxsize != 128:
                raise ValueError("give ttl and maxsize to the mapping passed as cache, not to cached")
            store = cache
            limit = getattr(cache, "maxsize", None)
        else:
            limit = None if maxsize is None else to_count(maxsize, "maxsize")
            # maxsize=0: nothing is kept, but concurrent callers still share one call
            store = default_mapping(ttl, limit or None)
        if key is not None and typed:
            raise ValueError("typed applies to the default key: give key or typed, not both")
        if key is not None and not callable(key):
            raise TypeError(f"key must be callable or None, not {type(key).__name__!r}")

        def decorate(func: F) -> F:
            if not callable(func):
                raise TypeError(f"cached decorates a callable, not {type(func).__name__!r}")
            unlocked = atomic_reads and cache is None and _gil_enabled()
            parameters = {"ttl": ttl, "maxsize": limit, "typed": typed}
            wrapped: F = _wrap(func, store, limit, typed, key, parameters, unlocked)
            return wrapped

        return decorate

    cached.__doc__ = _CACHED_DOC
    cached.__module__ = "dq_core"
    cached.__qualname__ = "cached"  # its argument errors name cached(), as the public name
    return cached


_CACHED_DOC = """Memoise a function, method or coroutine function; one call per key at a time.

    ``@cached(ttl=None, maxsize=128, *, typed=False, key=None, cache=None)``,
    or ``@cached`` alone.  Results live ``ttl`` seconds (None: until evicted)
    in a ``WheelTTLDict`` of at most ``maxsize`` entries, the least recently
    used evicted first (None: no limit; 0: nothing is kept, but concurrent
    callers still share one call).  ``typed`` and the default key are
    ``functools.lru_cache``'s; ``key(*args, **kwargs)`` returns a hashable
    key instead.  ``cache=`` uses a mapping of your own (a ``TTLDict``, a
    ``WheelTTLDict`` with an ``on_expire``) in place of the one made.

    Single-flight: while a key is computed, the other callers (threads, or
    coroutines on any loop) wait for that one result instead of computing
    it again.  Exceptions are not cached: a leader that raises (or is
    cancelled) raises alone, and one of its waiters computes in its place.
    No lock is held while the function runs; the wrapper's lock guards
    the mapping's operations (a key's ``__hash__``/``__eq__`` and an
    ``on_expire`` of a mapping of your own run under it: they must not call
    the cached function).

    The wrapper has ``cache_info()`` (hits, misses, maxsize, currsize;
    misses count the function's calls, a waiter that gets a leader's
    result counts as a hit), ``cache_clear()``, ``cache_parameters()`` and
    ``cache`` (the mapping).

    >>> calls = []
    >>> @cached(ttl=60)
    ... def square(x):
    ...     calls.append(x)
    ...     return x * x
    >>> square(3), square(3), calls
    (9, 9, [3])
    >>> square.cache_info()
    CacheInfo(hits=1, misses=1, maxsize=128, currsize=1)
    """


def _wrap(
    func: Any,
    store: MutableMapping[Any, Any],
    limit: Optional[int],
    typed: bool,
    key_func: Optional[Callable[..., Hashable]],
    parameters: dict[str, Any],
    unlocked: bool = False,
) -> Any:
    # unlocked: a hit on an int or str key reads the mapping without the
    # lock (see make_cached) and counts itself as functools' unbounded
    # cache does, with the GIL's word for it
    lock = threading.Lock()
    flights: dict[Any, _Flight] = {}
    counts = [0, 0, 0]  # hits, misses, generation (cache_clear: an older flight keeps nothing)
    keep = limit != 0
    lookup = store.get

    fast_types = _FAST_TYPES if not typed and key_func is None else frozenset()

    def make_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if key_func is not None:
            return key_func(*args, **kwargs)
        return _make_key(args, kwargs, typed)

    def begin(k: Any) -> tuple[Any, Optional[_Flight], bool]:
        """(value, None, _) on a hit; else (_, flight, leads)."""
        with lock:
            value = lookup(k, _MISSING)
            if value is not _MISSING:
                counts[0] += 1
                return value, None, False
            flight = flights.get(k)
            if flight is None:
                flight = flights[k] = _Flight()
                counts[1] += 1
                return _MISSING, flight, True
            return _MISSING, flight, False

    def succeed(k: Any, flight: _Flight, generation: int, value: Any) -> None:
        try:
            with lock:
                if flights.get(k) is flight:
                    del flights[k]
                flight.value, flight.ok = value, True
                if keep and generation == counts[2]:
                    store[k] = value
        finally:
            flight.land()

    def fail(k: Any, flight: _Flight) -> None:
        try:
            with lock:
                if flights.get(k) is flight:
                    del flights[k]
        finally:
            flight.land()  # ok is False: the waiters go round again, one leads

    def landed(flight: _Flight) -> bool:
        if flight.ok:
            with lock:
                counts[0] += 1
        return flight.ok

    wrapper: Callable[..., Any]
    if inspect.iscoroutinefunction(func):

        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            if not kwargs and len(args) == 1 and type(args[0]) in fast_types:
                k = args[0]  # the key of one int or str argument: itself (as functools)
                if unlocked:
                    value = lookup(k, _MISSING)
                    if value is not _MISSING:
                        counts[0] += 1
                        return value
            else:
                k = make_key(args, kwargs)
            while True:
                value, flight, leads = begin(k)
                if flight is None:
                    return value
                if leads:
                    generation = counts[2]
                    try:
                        value = await func(*args, **kwargs)
                    except BaseException:
                        fail(k, flight)
                        raise
                    succeed(k, flight, generation, value)
                    return value
                import asyncio  # a coroutine waits: asyncio is loaded (import dq_core loads none)

                fut = asyncio.get_running_loop().create_future()
                with lock:
                    if flights.get(k) is flight:  # still under way: it will wake us
                        flight.futures.append(fut)
                    else:
                        fut.set_result(None)
                await fut
                if landed(flight):
                    return flight.value

        wrapper = awrapper
    else:

        def compute(k: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            while True:
                value, flight, leads = begin(k)
                if flight is None:
                    return value
                if leads:
                    generation = counts[2]
                    try:
                        value = func(*args, **kwargs)
                    except BaseException:
                        fail(k, flight)
                        raise
                    succeed(k, flight, generation, value)
                    return value
                with lock:
                    if flight.event is None:
                        flight.event = threading.Event()
                    event = flight.event
                    if flights.get(k) is not flight:  # landed meanwhile
                        event.set()
                event.wait()
                if landed(flight):
                    return flight.value

        def swrapper(*args: Any, **kwargs: Any) -> Any:
            if not kwargs and len(args) == 1 and type(args[0]) in fast_types:
                k = args[0]  # the key of one int or str argument: itself (as functools)
                if unlocked:
                    value = lookup(k, _MISSING)
                    if value is not _MISSING:
                        counts[0] += 1
                        return value
                    return compute(k, args, kwargs)
            else:
                k = make_key(args, kwargs)
            with lock:  # the hit, without a further call
                value = lookup(k, _MISSING)
                if value is not _MISSING:
                    counts[0] += 1
                    return value
            return compute(k, args, kwargs)

        wrapper = swrapper

    def cache_info() -> CacheInfo:
        """Hits, misses, maxsize and current size of the cache."""
        with lock:
            return CacheInfo(counts[0], counts[1], limit, len(store))

    def cache_clear() -> None:
        """Empty the cache and zero the counters (a call under way keeps its result to itself)."""
        with lock:
            store.clear()
            counts[0] = counts[1] = 0
            counts[2] += 1

    def cache_parameters() -> dict[str, Any]:
        """The ``ttl``, ``maxsize`` and ``typed`` the wrapper was made with."""
        return dict(parameters)

    out = functools.wraps(func)(wrapper)
    out.cache_info = cache_info  # type: ignore[attr-defined]
    out.cache_clear = cache_clear  # type: ignore[attr-defined]
    out.cache_parameters = cache_parameters  # type: ignore[attr-defined]
    out.cache = store  # type: ignore[attr-defined]
    return out
