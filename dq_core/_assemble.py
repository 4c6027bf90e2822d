"""The one place that turns an implementation's cores into dq_core's classes.

Each core module (``_<name>core``: compiled, or its pure ``_<name>core_py``
twin) exports the classes of one structure.  Some are public as they are
(``Heap``, ``TTLRing``, ``TimingWheel``, ``aio.TimerHandle``); others get a
face, a pure-Python class holding what both implementations share (locks
and waiting, mapping methods, a thread):

- a face that extends a core (``PriorityQueue``, ``DelayQueue``, ``TTLDict``,
  ``WheelTTLDict``) is joined with it as a base class;
- a face that holds a core (``Timer`` and ``WheelTTLDict`` hold a
  ``TimingWheel``, ``PriorityExecutor`` a ``PriorityQueue``) gets the class
  as an attribute; ``cached`` is made for the implementation's
  ``WheelTTLDict``.

Two cores only serve others: ``_itemheapcore`` (``ItemHeap``, the heap of
both PriorityQueues) and ``_lockcore`` (``LockedBase``, the lock of the
threaded queue cores).

The asyncio faces (``dq_core.aio``) extend the cores of ``_aioqueuecore``:
``aio.PriorityQueue`` its ``AioQueueCore`` (over an ``ItemHeap``),
``aio.DelayQueue`` its ``AioDelayCore`` (over a ``Heap``).  ``aio_classes``
builds them apart from ``classes``, whose fields are exactly ``dq_core``'s
public names.

``dq_core/__init__`` exports ``classes(dq_core.implementation)``; the test
matrix runs on ``classes("cython")`` and ``classes("python")``, so for the
implementation in use the tests exercise the very classes users import.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import MutableMapping
from types import ModuleType, new_class
from typing import Any, NamedTuple

from . import _cached, _delayqueue, _priorityexecutor, _priorityqueue, _timer, _ttldict, _wheelttldict
from ._argerrors import name_methods
from ._signature import strip_annotations

__all__ = [
    "AIO_CORE_MODULES",
    "CORE_MODULES",
    "IMPLEMENTATIONS",
    "THREADED_CORE_MODULES",
    "AioClasses",
    "Classes",
    "aio_classes",
    "assemble",
    "assemble_aio",
    "classes",
    "cores",
]

#: The cores, each a compiled module ``dq_core.<name>`` with a pure twin ``dq_core.<name>_py``.
CORE_MODULES = (
    "_aioqueuecore",
    "_aiotimercore",
    "_delaycore",
    "_heapcore",
    "_itemheapcore",
    "_lockcore",
    "_queuecore",
    "_ringcore",
    "_ttldictcore",
    "_wheelcore",
    "_wheelttlcore",
)

#: The cores of ``dq_core.aio``: they import asyncio, so only ``aio_classes`` imports them
#: (``import dq_core`` never imports asyncio).
AIO_CORE_MODULES = ("_aioqueuecore", "_aiotimercore")
THREADED_CORE_MODULES = tuple(name for name in CORE_MODULES if name not in AIO_CORE_MODULES)

#: The implementations, by the name ``dq_core.implementation`` gives them.
IMPLEMENTATIONS = ("cython", "python")


def cores(implementation: str, names: tuple[str, ...] = CORE_MODULES) -> dict[str, ModuleType]:
    """The core modules ``names`` of ``implementation`` ("cython" or "python"), by core name.

    Raises ImportError if the compiled cores are asked for and not built.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    suffix = "" if implementation == "cython" else "_py"
    return {name: importlib.import_module(f"dq_core.{name}{suffix}") for name in names}


class AioClasses(NamedTuple):
    """The public classes of ``dq_core.aio`` of one implementation."""

    PriorityQueue: Any
    DelayQueue: Any
    Timer: Any
    TimerHandle: Any
    RateLimiter: Any
    PriorityTaskPool: Any


class Classes(NamedTuple):
    """The public classes of one implementation."""

    Heap: Any
    PriorityQueue: Any
    DelayQueue: Any
    TimingWheel: Any
    Timer: Any
    TTLRing: Any
    TTLDict: Any
    PriorityExecutor: Any
    WheelTTLDict: Any
    cached: Any


def _public(face: type, *cores: type, **attrs: Any) -> type:
    """The public class named as ``face``: ``face`` with ``cores`` as further bases and ``attrs`` set."""
    body = {"__doc__": face.__doc__, "__module__": "dq_core", "__qualname__": face.__name__, **attrs}
    return new_class(face.__name__, (face, *cores), exec_body=lambda ns: ns.update(body))


#: The modules whose functions only the pure implementation's classes hold:
#: the twins, and the pure loop timer of the asyncio twin.
_PURE_ONLY = tuple(f"dq_core.{name}_py" for name in CORE_MODULES) + ("dq_core._aiowaiting",)


#: The modules whose functions name_methods names: the pure-only ones, and the
#: compiled cores (their Cython functions bound as methods, aio.Timer.call_at).
_NAMED_MODULES = _PURE_ONLY + tuple(f"dq_core.{name}" for name in CORE_MODULES)


def _as_compiled(public: tuple[Any, ...]) -> None:
    """Show the pure twins' methods as their compiled twins show theirs: no annotations,
    and argument errors that name the public class (``DelayQueue.put``, not ``DelayCore.put``)."""
    for cls in public:
        if not isinstance(cls, type):  # cached is a function
            continue
        for klass in cls.__mro__:
            strip_annotations(klass, _PURE_ONLY)
        name_methods(cls, _NAMED_MODULES)


def assemble(modules: dict[str, ModuleType]) -> Classes:
    """The public classes built on the core ``modules`` (as ``cores`` returns them)."""
    delay, heap, queue, ring, ttldict, wheel, wheelttl = (
        modules[name]
        for name in (
            "_delaycore",
            "_heapcore",
            "_queuecore",
            "_ringcore",
            "_ttldictcore",
            "_wheelcore",
            "_wheelttlcore",
        )
    )
    adopt = heap.adopt_methods  # a face extending a compiled core: its methods, its own
    priority_queue = adopt(_public(_priorityqueue.PriorityQueue, queue.QueueCore))
    wheel_ttl_dict = wheelttl.own_getitem(
        adopt(
            _public(
                _wheelttldict.WheelTTLDict,
                wheelttl.WheelTTLCore,
                MutableMapping,
                _TimingWheel=wheel.TimingWheel,
            )
        )
    )
    public = Classes(
        Heap=heap.Heap,
        PriorityQueue=priority_queue,
        DelayQueue=adopt(_public(_delayqueue.DelayQueue, delay.DelayCore)),
        TimingWheel=wheel.TimingWheel,
        Timer=_public(_timer.Timer, _TimingWheel=wheel.TimingWheel),
        TTLRing=ring.TTLRing,
        TTLDict=adopt(_public(_ttldict.TTLDict, ttldict.TTLDictCore, MutableMapping)),
        PriorityExecutor=_public(_priorityexecutor.PriorityExecutor, _PriorityQueue=priority_queue),
        WheelTTLDict=wheel_ttl_dict,
        cached=_cached.make_cached(wheel_ttl_dict, atomic_reads=wheelttl.__name__ == "dq_core._wheelttlcore"),
    )
    _as_compiled(public)
    return public


def assemble_aio(modules: dict[str, ModuleType]) -> AioClasses:
    """The public classes of ``dq_core.aio`` built on the core ``modules``."""
    # imported here, not on top: import dq_core imports no asyncio
    from .aio import _delayqueue as _aio_delayqueue
    from .aio import _priorityqueue as _aio_priorityqueue
    from .aio import _prioritytaskpool as _aio_prioritytaskpool
    from .aio import _ratelimiter as _aio_ratelimiter
    from .aio import _timer as _aio_timer

    heap, wheel, aioqueue = modules["_heapcore"], modules["_wheelcore"], modules["_aioqueuecore"]
    aiotimer = modules["_aiotimercore"]
    adopt = heap.adopt_methods
    public = AioClasses(
        PriorityQueue=adopt(
            _public(_aio_priorityqueue.PriorityQueue, aioqueue.AioQueueCore, __module__="dq_core.aio")
        ),
        DelayQueue=adopt(
            _public(_aio_delayqueue.DelayQueue, aioqueue.AioDelayCore, __module__="dq_core.aio")
        ),
        Timer=_public(
            _aio_timer.Timer, _TimingWheel=wheel.TimingWheel, _core=aiotimer, __module__="dq_core.aio"
        ),
        TimerHandle=aiotimer.TimerHandle,
        RateLimiter=_public(_aio_ratelimiter.RateLimiter, __module__="dq_core.aio"),
        PriorityTaskPool=_public(
            _aio_prioritytaskpool.PriorityTaskPool, _Heap=heap.Heap, __module__="dq_core.aio"
        ),
    )
    _as_compiled(public)
    return public


@functools.lru_cache(maxsize=None)
def classes(implementation: str) -> Classes:
    """The public classes of ``implementation`` ("cython" or "python"), built once.

    Raises ImportError for "cython" when the compiled cores are not built.
    """
    return assemble(cores(implementation, THREADED_CORE_MODULES))


@functools.lru_cache(maxsize=None)
def aio_classes(implementation: str) -> AioClasses:
    """The public classes of ``dq_core.aio`` for ``implementation``, built once."""
    return assemble_aio(cores(implementation, AIO_CORE_MODULES + ("_heapcore", "_wheelcore")))
