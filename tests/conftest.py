"""One test matrix: every test that takes ``impl`` runs on both implementations.

``impl.name`` is ``"c"`` (compiled) or ``"py"`` (pure twin).  The compiled
variant is skipped when it is not built, unless DQ_CORE_REQUIRE_EXTENSIONS
is set (CI sets it), which turns that skip into a failure.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType, SimpleNamespace

import pytest
from hypothesis import HealthCheck, settings

import dq_core

REQUIRE_EXTENSIONS = bool(os.environ.get("DQ_CORE_REQUIRE_EXTENSIONS"))

# (compiled module, pure module) for each core; public names come from these.
CORES = {"_heap": ("Heap",), "_pqueue": ("ItemHeap",), "_ring": ("TTLRing",), "_ttlmap": ("TTLDictCore",), "_wheel": ("TimingWheel",)}

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")


def _load(kind: str) -> SimpleNamespace:
    ns = SimpleNamespace(name=kind)
    for core, names in CORES.items():
        module: ModuleType = importlib.import_module(
            f"dq_core.{core}" if kind == "c" else f"dq_core.{core}_py"
        )
        for n in names:
            setattr(ns, n, getattr(module, n))
        setattr(ns, core.lstrip("_"), module)
    # The public classes built on the cores, as dq_core builds them on the
    # implementation in use.
    from dq_core import _queues

    ns.PriorityQueue = type(
        "PriorityQueue",
        (_queues.PriorityQueueMethods, ns.pqueue.QueueCore),
        {"__doc__": _queues.PriorityQueue.__doc__, "__module__": "dq_core"},
    )
    from dq_core import _delayqueue, _executor, _ttldict

    ns.PriorityExecutor = type(
        "PriorityExecutor", (_executor.PriorityExecutor,),
        {"_queue_class": ns.PriorityQueue, "__module__": "dq_core"},
    )

    from collections.abc import MutableMapping

    ns.TTLDict = type(
        "TTLDict",
        (_ttldict.TTLDictMethods, ns.ttlmap.TTLDictCore, MutableMapping),
        {"__doc__": _ttldict.TTLDict.__doc__, "__module__": "dq_core"},
    )

    from dq_core import _timer

    ns.Timer = type("Timer", (_timer.Timer,), {"_wheel_class": ns.TimingWheel, "__module__": "dq_core"})

    ns.DelayQueue = type(
        "DelayQueue", (_delayqueue.DelayQueue,), {"_heap_class": ns.Heap, "__module__": "dq_core"}
    )
    return ns


def compiled_or_skip() -> SimpleNamespace:
    try:
        return _load("c")
    except ImportError as exc:
        if REQUIRE_EXTENSIONS:
            pytest.fail(f"compiled core required but not importable: {exc}")
        pytest.skip(f"compiled core not built: {exc}")


@pytest.fixture(scope="session", params=["c", "py"])
def impl(request: pytest.FixtureRequest) -> SimpleNamespace:
    if request.param == "c":
        return compiled_or_skip()
    return _load("py")


@pytest.fixture(scope="session")
def both() -> tuple[SimpleNamespace, SimpleNamespace]:
    """Both implementations at once, for tests that compare them."""
    return compiled_or_skip(), _load("py")


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"dq_core {dq_core.__version__} from {os.path.dirname(dq_core.__file__)}, "
        f"implementation={dq_core.implementation}, "
        f"require_extensions={REQUIRE_EXTENSIONS}"
    )
