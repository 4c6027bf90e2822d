"""One test matrix: every test that takes ``impl`` runs on both implementations.

``impl.name`` is ``"c"`` (compiled) or ``"py"`` (pure twin).  The compiled
variant is skipped when it is not built, unless DQ_CORE_REQUIRE_EXTENSIONS
is set (CI sets it), which turns that skip into a failure.

The Redis tests run a real redis-server (tests/redis_server.py).  Without one
on PATH, every test that needs it is skipped, from here and with one reason,
so that pytest's summary says so in one line; DQ_CORE_REQUIRE_REDIS (CI sets
it) turns that skip into a failure.
"""

from __future__ import annotations

import os
import shutil
import sys
from types import SimpleNamespace
from typing import Iterator

import pytest
from hypothesis import HealthCheck, settings

import dq_core
from dq_core._assemble import aio_classes, classes, cores

REQUIRE_EXTENSIONS = bool(os.environ.get("DQ_CORE_REQUIRE_EXTENSIONS"))
REQUIRE_REDIS = bool(os.environ.get("DQ_CORE_REQUIRE_REDIS"))
#: The fixtures that start Redis servers (tests/redis_server.py,
#: tests/test_redis_cluster.py), and what each needs on PATH besides redis-server.
REDIS_FIXTURES = {
    "redis_server": (),
    "own_server": (),
    "sentinel": ("redis-sentinel",),
    "cluster": ("redis-cli",),
}
NO_REDIS = (
    "the Redis tests need redis-server on PATH, not found: install it to run them "
    "(Debian/Ubuntu: apt-get install redis-server redis-sentinel; macOS: brew install redis)"
)

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("default")

IMPLEMENTATIONS = {"c": "cython", "py": "python"}


def _load(kind: str) -> SimpleNamespace:
    """One implementation: its public classes (as dq_core assembles them), its core
    modules (``impl.heapcore``, ``impl.queuecore``, ...), ``impl.ItemHeap`` and ``impl.aio``
    (``impl.aio.PriorityQueue``, ``impl.aio.DelayQueue``)."""
    implementation = IMPLEMENTATIONS[kind]
    ns = SimpleNamespace(name=kind, aio=aio_classes(implementation), **classes(implementation)._asdict())
    for name, module in cores(implementation).items():
        setattr(ns, name.lstrip("_"), module)
    ns.ItemHeap = ns.itemheapcore.ItemHeap
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


@pytest.fixture
def switch_often() -> Iterator[None]:
    """With the GIL, switch threads as often as possible; free-threaded builds need no help."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or fail) a test that needs a Redis server when none is on PATH."""
    needs = [REDIS_FIXTURES[f] for f in getattr(item, "fixturenames", ()) if f in REDIS_FIXTURES]
    if not needs:
        return
    reason = NO_REDIS if shutil.which("redis-server") is None else None
    missing = sorted({p for programs in needs for p in programs if shutil.which(p) is None})
    if reason is None and missing:
        reason = f"this Redis test needs {' and '.join(missing)} on PATH, not found"
    if reason is not None:
        if REQUIRE_REDIS:
            pytest.fail(f"{reason} (DQ_CORE_REQUIRE_REDIS is set)", pytrace=False)
        pytest.skip(reason)


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [
        f"dq_core {dq_core.__version__} from {os.path.dirname(dq_core.__file__)}, "
        f"implementation={dq_core.implementation}, "
        f"require_extensions={REQUIRE_EXTENSIONS}"
    ]
    try:  # the interpreter shortcuts each compiled core takes (src/include/dq_shortcuts.h)
        compiled = cores("cython")
    except ImportError as exc:
        return [*lines, f"dq_core shortcuts: compiled cores not importable ({exc})"]
    for name, module in compiled.items():
        on = sorted(k for k, v in module.SHORTCUTS.items() if v)
        off = sorted(k for k, v in module.SHORTCUTS.items() if not v)
        if on or off:
            lines.append(f"dq_core shortcuts {name}: on={','.join(on) or '-'} off={','.join(off) or '-'}")
    return lines
