"""The compiled Heap after a failed allocation (CPython's ``_testcapi.set_nomemory``).

Each test fails the 1st, 2nd, 3rd... allocation of one operation in turn,
until the operation no longer fails, and checks the heap after every
``MemoryError``: it is consistent (pops in priority order, FIFO among
ties, no item lost or duplicated beyond what the operation says).  The
pure twin allocates in Python bytecode, where a ``MemoryError`` can strike
between any two lines: only the compiled core's C paths can promise this.
"""

from __future__ import annotations

import pytest

from conftest import compiled_or_skip

_testcapi = pytest.importorskip("_testcapi")
if not hasattr(_testcapi, "set_nomemory"):  # pragma: no cover - builds without the hooks
    pytest.skip("this CPython has no _testcapi.set_nomemory", allow_module_level=True)


def _failing(op, limit=200):
    """Run ``op()`` with its n-th allocation failing, n = 0, 1, ...; yield whether it failed.

    The caller builds a fresh heap before each run and checks it after.
    Stops at the first n for which ``op`` succeeds.
    """
    for n in range(limit):
        try:
            _testcapi.set_nomemory(n, n + 1)
            try:
                op()
            finally:
                _testcapi.remove_mem_hooks()
        except MemoryError:
            yield n, True
        else:
            yield n, False
            return
    raise AssertionError(f"still failing after {limit} allocations")


def _drain(h):
    return [h.pop() for _ in range(len(h))]


def test_clear_that_runs_out_of_memory_keeps_every_item_or_none():
    c = compiled_or_skip()
    failures = 0
    state = {}

    def build():
        h = c.Heap()
        handles = [h.push(p, (p, i)) for i, p in enumerate([5, 3, 3, 9, 1, 7] * 300)]
        h.remove(handles[4])  # a freed slot: clear releases the rest
        state.update(h=h, handles=handles)

    build()
    expected = sorted((p, i) for i, p in enumerate([5, 3, 3, 9, 1, 7] * 300) if i != 4)
    for _, failed in _failing(lambda: state["h"].clear()):
        h = state["h"]
        h._check()
        if failed and len(h):
            # the failure came before anything changed: every item, every handle
            failures += 1
            assert h.priority(state["handles"][0]) == 5
            assert _drain(h) == expected
        else:
            # cleared (the failure, if any, came after: in trimming the tables)
            assert len(h) == 0 and state["handles"][0] not in h
            h.push(1, "after")
            assert h.pop() == "after"
        build()
    assert failures, "no allocation failed before clear changed anything: the test exercised nothing"


@pytest.mark.parametrize("before", [0, 3, 1000], ids=["empty", "small", "large"])
@pytest.mark.parametrize("order", ["ascending", "mixed"])
def test_push_many_that_runs_out_of_memory_leaves_a_consistent_heap(before, order):
    # bulk mode (k >= len) appends then heapifies; the heapify runs on the
    # items pushed before the failure too, so the heap stays a heap
    c = compiled_or_skip()
    k = 2000
    keys = list(range(k)) if order == "ascending" else [(i * 7919) % 101 for i in range(k)]
    failures = 0
    state = {}

    def build():
        h = c.Heap()
        for i in range(before):
            h.push((i * 31) % 57, ("old", i))
        state["h"] = h

    build()
    new = [(p, ("new", i)) for i, p in enumerate(keys)]
    for _, failed in _failing(lambda: state["h"].push_many(keys, [x for _, x in new])):
        h = state["h"]
        h._check()
        got = []
        while h:
            p, x = h.popitem()
            got.append((p, x))
        assert [p for p, _ in got] == sorted(p for p, _ in got), "not popped in priority order"
        olds = [x for _, x in got if x[0] == "old"]
        news = [x for _, x in got if x[0] == "new"]
        assert sorted(olds) == [("old", i) for i in range(before)]
        # the new items pushed are a prefix of the batch (all of it on success)
        assert sorted(news) == [("new", i) for i in range(len(news))]
        if not failed:
            assert len(news) == k
        else:
            failures += 1
        # FIFO among ties: equal priorities come out in push order
        for a, b in zip(got, got[1:]):
            if a[0] == b[0] and a[1][0] == b[1][0]:
                assert a[1][1] < b[1][1]
        build()
    assert failures
