"""TTLDict's memory follows its live entries: the sweep at every set, purge(), the table.

One test per region of the state space, on both implementations: a backlog
of entries all expired at once, sets interleaved with expiry, the sweep a
set makes, on_expire raising or re-entering during a sweep or a purge,
keys set again and deleted (holes in the ring), colliding hashes, and the
default clock read in C.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
import weakref

import pytest

from clocks import FakeClock
from dq_core._ringstate import BATCH
from dq_core._ttldictstate import SWEEP
from ttl_helpers import PushOnDel


def _filled(impl, n, ttl=10.0, **kwargs):
    clock = FakeClock()
    d = impl.TTLDict(ttl, clock=clock, **kwargs)
    for i in range(n):
        d[i] = i
    return d, clock


# -- the backlog region: everything expired at once ------------------------------


def test_purge_of_a_backlog_counts_reports_and_releases_each_entry_once(impl):
    seen = []
    n = 5 * BATCH + 3  # batches, and a short last one
    d, clock = _filled(impl, n, on_expire=lambda k, v: seen.append((k, v)))
    values = [object() for _ in range(n)]
    for i, v in enumerate(values):
        d[i] = v  # the same keys, now with values only the dict (and this list) holds
    refs = [sys.getrefcount(v) for v in values]
    clock.now = 10.0
    assert d.purge() == n and d.purge() == 0
    assert seen == list(zip(range(n), values))  # oldest first, each once
    seen.clear()
    assert [sys.getrefcount(v) for v in values] == [r - 1 for r in refs]  # the dict let go
    assert d._held() == 0 and len(d) == 0 and d.next_expiry() is None
    d._check()


def test_purge_builds_no_list(impl):
    # expire() returns a pair for each entry; purge() holds a batch at most
    n = 20_000
    d, clock = _filled(impl, n)
    e, _ = _filled(impl, n)
    clock.now = e.clock.now = 10.0
    peaks = []
    for call in (d.purge, e.expire):
        gc.collect()
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            out = call()
            peaks.append(tracemalloc.get_traced_memory()[1] - base)
        finally:
            tracemalloc.stop()
        del out
    assert peaks[0] < 64 * 1024 < n * 8 < peaks[1], peaks


def test_a_backlog_is_swept_by_sets_alone(impl):
    # a mapping only written to: each set drops SWEEP expired entries
    n = 40 * SWEEP
    d, clock = _filled(impl, n)
    clock.now = 100.0  # all due
    for i in range(10):
        d[("new", i)] = i
        assert d._held() == n - (i + 1) * SWEEP + (i + 1)
        d._check()
    assert list(d)[-10:] == [("new", i) for i in range(10)]


# -- the interleaved region: sets, reads and expiry taking turns -----------------------


def test_a_sliding_window_holds_what_is_live_without_any_call(impl):
    # the workload on a fake clock: a new key a step, each living 0.2 s
    clock = FakeClock()
    d = impl.TTLDict(0.2, clock=clock)
    live = 150
    for i in range(20_000):
        clock.now = i * (0.2 / live)
        d[i] = i
        assert d[i] == i
        assert d._held() <= live + 1
    d._check()
    assert live - 1 <= len(d) <= live + 1


def test_memory_follows_the_window_down(impl):
    clock = FakeClock()
    gc.collect()
    tracemalloc.start()
    try:
        d = impl.TTLDict(1.0, clock=clock)
        for i in range(20_000):
            d[i] = None
        full = tracemalloc.get_traced_memory()[0]
        clock.now = 5.0
        for i in range(20_000, 20_000 + 20_000 // SWEEP + 10):  # sets alone sweep the backlog
            d[i] = None
            clock.now += 1e-7
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert d._held() < 20_000 // SWEEP + 20
    assert after < full * 0.6, (full, after)  # the expired entries and the table's room went
    d._check()


def test_setting_the_same_keys_again_leaves_no_growing_trail(impl):
    clock = FakeClock()
    d = impl.TTLDict(60, clock=clock)
    d["old"] = 0  # a long-lived head: holes behind it cannot reach the head
    for i in range(20_000):
        d[i % 3] = i
        if i % 1000 == 0:
            d._check()
    assert d._held() == 4 and list(d) == ["old", 2, 0, 1]

    def churn() -> None:
        for i in range(3000):
            d[i % 3] = i

    from helpers import traced_growth

    assert traced_growth(churn, 5) < 16 * 1024


# -- the sweep a set makes --------------------------------------------------------------


def test_a_set_sweeps_at_most_sweep_entries_oldest_first_and_reports_them(impl):
    seen = []
    d, clock = _filled(impl, 3 * SWEEP, on_expire=lambda k, v: seen.append(k))
    clock.now = 10.0
    d["x"] = 1
    assert seen == list(range(SWEEP))
    d["y"] = 2
    assert seen == list(range(2 * SWEEP))
    assert d.expire() == [(k, k) for k in range(2 * SWEEP, 3 * SWEEP)]
    assert seen == list(range(3 * SWEEP)) and list(d) == ["x", "y"]
    d._check()


def test_a_set_with_nothing_due_removes_nothing(impl):
    seen = []
    d, clock = _filled(impl, 100, on_expire=lambda k, v: seen.append(k))
    clock.now = 9.99
    for i in range(100):
        d[i] = -i
    assert seen == [] and d._held() == 100


def test_on_expire_raising_during_a_sweep(impl):
    seen = []

    def callback(k, v):
        seen.append(k)
        raise LookupError(k)

    d, clock = _filled(impl, 2 * SWEEP, on_expire=callback)
    clock.now = 10.0
    with pytest.raises(LookupError) as info:
        d["x"] = "new"
    assert info.value.args == (0,)  # the first one raised, after every call was made
    assert seen == list(range(SWEEP))
    assert d["x"] == "new" and d._held() == SWEEP + 1  # the set is done, the rest held
    d._check()
    with pytest.raises(LookupError):
        d.purge()
    assert seen == list(range(2 * SWEEP)) and d._held() == 1
    d._check()


def test_on_expire_re_entering_during_a_sweep_and_a_purge(impl):
    # on_expire runs once the change is complete: it may set (whose sweep
    # reports more, from within), delete and read
    seen = []
    d, clock = _filled(impl, 3 * BATCH)

    def callback(k, v):
        seen.append(k)
        if isinstance(k, int) and k % 2 == 0:
            d[("again", k)] = v  # a set, which sweeps SWEEP more
        elif isinstance(k, int):
            d.pop(k + 1, None)  # expired or gone: nothing happens
        assert d.get(k) is None
        d._check()

    d.on_expire = callback
    clock.now = 10.0
    d["x"] = 0  # its sweep starts a cascade that reports every expired entry
    assert sorted(seen) == list(range(3 * BATCH))
    assert seen[:2] == [0, SWEEP]  # on_expire(0, 0) set a key, whose sweep reported the next
    assert list(d) == ["x"] + [("again", k) for k in seen if k % 2 == 0]
    clock.now = 20.0
    before = len(seen)
    count = d.purge()  # all due now, reported oldest first; nothing re-sets
    assert count == 1 + 3 * BATCH // 2 and seen[before:] == ["x"] + [
        ("again", k) for k in seen[:before] if k % 2 == 0
    ]
    assert len(seen) == len(set(seen)) and d._held() == 0
    d._check()


def test_a_finaliser_of_a_purged_value_may_set_keys(impl):
    # what a purge removes is released after its batch has left: a finaliser
    # changing the mapping then is allowed, and what it sets is kept
    d, clock = _filled(impl, 0)
    log: list[str] = []
    d["k"] = PushOnDel(d, log)
    clock.now = 20.0
    assert d.purge() == 1
    assert log == ["done"] and d._held() == 1 and d["from __del__"] == 0
    d._check()


# -- holes, growth and shrinking of the table ---------------------------------------------


def test_order_is_the_order_of_the_last_set(impl):
    d, clock = _filled(impl, 5)
    d[2] = "again"
    del d[0]
    d[0] = "back"
    assert list(d) == [1, 3, 4, 2, 0]
    assert d.popitem() == (1, 1) and list(d) == [3, 4, 2, 0]
    clock.now = 10.0  # all were set at 0.0: iteration purges them first
    assert list(d) == [] and d.expire() == []
    d._check()


def test_a_live_key_set_again_keeps_its_stored_object(impl):
    d, _ = _filled(impl, 0)
    d[1] = "int"
    d[1.0] = "float"  # equal and same hash: the stored key stays 1, as in a dict
    assert list(d.items()) == [(1, "float")] and type(next(iter(d))) is int
    assert {1: "float"} == dict(d.items())


def test_grow_shrink_and_holes_with_colliding_hashes(impl):
    class Same:
        def __init__(self, i):
            self.i = i

        def __hash__(self):
            return self.i % 7

        def __eq__(self, other):
            return isinstance(other, Same) and other.i == self.i

    clock = FakeClock()
    d = impl.TTLDict(50, clock=clock)
    keys = [Same(i) for i in range(600)]
    for k in keys:
        d[k] = k.i
    d._check()
    for k in keys[::3]:
        del d[k]
    for k in keys[1::3]:
        d[k] = -k.i  # to the tail
    d._check()
    assert all(
        d.get(Same(k.i)) == (None if k.i % 3 == 0 else (-k.i if k.i % 3 == 1 else k.i)) for k in keys[:300]
    )
    for k in keys[2::3]:
        del d[k]
    d._check()
    assert len(d) == 200 and list(d) == keys[1::3]
    clock.now = 60.0
    assert d.purge() == 200 and d._held() == 0
    d._check()
    d[Same(1)] = "after"
    assert d[Same(1)] == "after"
    d._check()


def test_an_eq_that_grows_the_table_during_a_read_restarts_the_lookup(impl):
    class Key:
        def __init__(self, i, action=None):
            self.i = i
            self.action = action

        def __hash__(self):
            return 0

        def __eq__(self, other):
            action, self.action = self.action, None
            if action:
                action()
            return isinstance(other, Key) and other.i == self.i

    clock = FakeClock()
    d = impl.TTLDict(50, clock=clock)
    first = Key(0)
    d[first] = "first"
    d[Key(1)] = "second"

    def grow():
        for i in range(2000):  # the table grows and moves: the read starts again
            d[("grown", i)] = i

    first.action = grow
    assert d[Key(1)] == "second"
    assert d._held() == 2002
    d._check()


def test_a_cycle_through_a_value_is_collected(impl):
    class Box:
        pass

    d = impl.TTLDict(50, clock=FakeClock())
    box = Box()
    box.d = d
    d["box"] = box
    d[box] = "key too"
    ref = weakref.ref(box)
    del d, box
    gc.collect()
    assert ref() is None


# -- the clock ---------------------------------------------------------------------------------


def test_the_default_clock_is_time_monotonic(impl):
    d = impl.TTLDict(100.0)
    ring = impl.TTLRing(100.0)
    before = time.monotonic()
    d["a"] = 1
    ring.push("a")
    after = time.monotonic()
    for expiry in (d.next_expiry(), ring.next_expiry()):
        assert before + 100.0 <= expiry <= after + 100.0
    assert d.expire() == [] and ring.expire() == [] and d.purge() == ring.purge() == 0
    assert d.expire(now=after + 100.0) == [("a", 1)] and ring.purge(now=after + 100.0) == 1


def test_a_replaced_time_monotonic_given_as_clock_is_called(impl, monkeypatch):
    calls = []

    def fake() -> float:
        calls.append(1)
        return 5.0

    monkeypatch.setattr(time, "monotonic", fake)
    d = impl.TTLDict(1.0, clock=time.monotonic)
    ring = impl.TTLRing(1.0, clock=time.monotonic)
    d["a"] = 1
    ring.push("a")
    assert d.next_expiry() == ring.next_expiry() == 6.0 and len(calls) == 2


def test_tables_grown_and_dropped_leave_no_memory_behind(impl):
    from helpers import traced_growth

    def churn() -> None:
        clock = FakeClock()
        d = impl.TTLDict(1.0, maxsize=1500, clock=clock)
        for i in range(2000):  # grows, evicts, sweeps
            d[i] = i
            clock.now += 0.001
        del d[1999]
        d.popitem()
        d.expire(now=3.0)
        for i in range(100):
            d[i] = i
        held = d._held()
        assert d.purge(now=9.0) == held >= 100
        d[0] = 0
        d.clear()
        d[1] = 1  # and one left for the collector

    assert traced_growth(churn, 6) < 16 * 1024
