"""The event loops the asyncio tests run on, and checks that they are the ones meant.

Every asyncio test takes ``run`` (one test per loop: ids ``asyncio`` and
``uvloop``): ``run(coro)`` runs it to completion on a fresh loop of that
kind, then cancels what is left and closes the loop.  uvloop is a test extra
wherever it installs (not on Windows); where it is missing, its variant is
skipped, unless DQ_CORE_REQUIRE_UVLOOP is set.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Callable, Coroutine, TypeVar

import pytest

R = TypeVar("R")

try:
    import uvloop
except ImportError:  # pragma: no cover - Windows
    uvloop = None

LOOPS = ("asyncio", "uvloop")

#: How long a test's coroutine may run: far beyond the slowest (a few
#: seconds on a loaded 2-core machine), far below pytest-timeout's 120 s,
#: so a wait that never ends (a getter never woken) fails within seconds.
LIMIT = 30.0


def new_loop(kind: str) -> asyncio.AbstractEventLoop:
    if kind == "uvloop":
        if uvloop is None:
            if os.environ.get("DQ_CORE_REQUIRE_UVLOOP"):
                pytest.fail("uvloop required but not installed")
            pytest.skip("uvloop is not installed")
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run_on(kind: str, coro: Coroutine[Any, Any, R], limit: float = LIMIT) -> R:
    """Run ``coro`` on a fresh loop of ``kind``; cancel leftover tasks; close the loop.

    A coroutine still running after ``limit`` seconds is cancelled and the
    test fails, naming the limit.  The watchdog is a thread, not a loop
    timer, so tests that count the loop's timers see none of it.
    """
    try:
        loop = new_loop(kind)
        task = loop.create_task(coro)
    except BaseException:
        coro.close()
        raise
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        try:
            loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:  # the loop closed meanwhile: nothing to stop
            pass

    watchdog = threading.Timer(limit, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if expired.is_set():
            raise AssertionError(f"still waiting after {limit} s: a wait that never ends") from None
        raise
    finally:
        watchdog.cancel()
        watchdog.join()  # gone, and with it its hold on the loop
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


@pytest.fixture(params=LOOPS)
def run(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, R]], R]:
    kind = request.param
    new_loop(kind).close()  # skip early where the loop is missing

    def runner(coro: Coroutine[Any, Any, R]) -> R:
        return run_on(kind, coro)

    runner.kind = kind  # type: ignore[attr-defined]
    return runner


async def settle(rounds: int = 5) -> None:
    """Let every ready callback and task run (a few loop iterations)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def until_waiting(q, getters=0, putters=0):
    """Step the loop until that many getters and putters are parked on ``q``."""
    for _ in range(100):
        if (
            sum(not f.done() for f in q._getters) >= getters
            and sum(not f.done() for f in q._putters) >= putters
        ):
            return
        await asyncio.sleep(0)
    raise AssertionError("waiters never parked")


def test_run_uses_the_loop_it_names(run):
    async def kind():
        return type(asyncio.get_running_loop()).__module__

    module = run(kind())
    assert module.startswith("uvloop" if run.kind == "uvloop" else "asyncio")


def test_run_cancels_leftover_tasks(run):
    seen = []

    async def forever():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main():
        asyncio.ensure_future(forever())
        await settle()

    run(main())
    assert seen == ["cancelled"]
