"""CPython's own asyncio queue tests (Lib/test/test_asyncio/test_queues.py) on aio.PriorityQueue.

The running interpreter's copy of the file is loaded with ``asyncio.Queue``
and ``asyncio.PriorityQueue`` both replaced by dq_core's ``aio.PriorityQueue``
(each implementation in turn), and every one of its tests runs as a test
here, unchanged.  Tests that only a FIFO queue can pass are left out, each
with its reason: the items' order of ``asyncio.Queue`` and its class name in
``repr``.  The LIFO queue's tests do not concern dq_core.

On Python 3.13+ the file includes asyncio's shutdown tests; before, dq_core
keeps 3.13's semantics, which ``tests/test_aio_priority_queue.py`` checks.
"""

from __future__ import annotations

import asyncio
import importlib.util
import unittest
from pathlib import Path

import pytest

PATH = Path(asyncio.__file__).parent.parent / "test" / "test_asyncio" / "test_queues.py"

#: Tests that check asyncio.Queue's FIFO order or its class name, which a
#: priority queue cannot have: the reason, and what asyncio.PriorityQueue's
#: first failure in them says.
FIFO_ONLY = {
    "QueueBasicTests.test_order": (
        "asyncio.Queue is first-in first-out",
        "Lists differ: [1, 3, 2] != [1, 2, 3]",
    ),
    "QueueBasicTests.test_repr": ("expects '<Queue' at the start of repr", "<PriorityQueue at "),
    "QueueBasicTests.test_str": ("expects '<Queue' at the start of str", "<PriorityQueue maxsize="),
}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names() -> list[str]:
    if not PATH.exists():
        return []
    module = _load("_cpython_asyncio_queue_tests")
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    names = []
    for group in suite:
        for case in group:  # type: ignore[union-attr]
            cls = type(case).__name__
            if not cls.startswith("Lifo"):
                names.append(f"{cls}.{case._testMethodName}")
    return sorted(names)


NAMES = _names()


def test_the_file_is_there_and_read():
    # CI's Python (a full CPython install) has its test suite; a distribution
    # that strips it fails here rather than silently running nothing
    assert PATH.exists(), f"CPython's test suite is not installed: {PATH}"
    assert len(NAMES) >= 30 and "PriorityQueueTests.test_order" in NAMES


@pytest.mark.parametrize("name", [n for n in NAMES if n not in FIFO_ONLY])
def test_cpython_asyncio_queue_test(impl, name, monkeypatch):
    monkeypatch.setattr(asyncio, "Queue", impl.aio.PriorityQueue)
    monkeypatch.setattr(asyncio, "PriorityQueue", impl.aio.PriorityQueue)
    module = _load(f"_cpython_asyncio_queue_tests_{impl.name}")  # q_class: ours
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromName(name, module).run(result)
    problems = result.errors + result.failures
    assert result.testsRun == 1 and not problems, "\n".join(text for _, text in problems)
    assert not result.skipped, result.skipped


@pytest.mark.parametrize("name", sorted(FIFO_ONLY))
def test_the_tests_left_out_are_fifo_only(name):
    # they fail on asyncio.PriorityQueue itself: the reason holds
    assert name in NAMES
    module = _load("_cpython_asyncio_queue_tests_stdlib_pq")
    saved = asyncio.Queue
    asyncio.Queue = asyncio.PriorityQueue  # type: ignore[misc]
    try:
        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromName(name, module).run(result)
    finally:
        asyncio.Queue = saved  # type: ignore[misc]
    reason, says = FIFO_ONLY[name]
    # the first failure is the FIFO one (on 3.10 a test loop's own check
    # fails after it in test_repr and test_str: the test stopped early)
    assert result.failures and not result.errors, reason
    assert says in result.failures[0][1], (reason, result.failures[0][1])
