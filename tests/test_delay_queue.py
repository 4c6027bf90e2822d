"""DelayQueue: never early, precise wake-ups, each item to exactly one consumer."""

from __future__ import annotations

import random
import sys
import threading
import time

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from clocks import FakeClock
from dq_core import Empty, Full, ShutDown
from helpers import bounded, check_the_run_s_head, take_first_without_waiting, traced_growth


def start(fn, *args):
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


# -- fake clock: order and never early --------------------------------------------


def test_never_early_and_earliest_first(impl):
    clock = FakeClock(100.0)
    dq = impl.DelayQueue(clock=clock)
    dq.put("b", 2.0)
    dq.put("a", 1.0)
    dq.put_at("c", 103.0)
    assert dq.next_deadline() == 101.0
    with pytest.raises(Empty):
        dq.get_nowait()
    clock.now = 100.999
    with pytest.raises(Empty):
        dq.get(block=False)
    assert dq.get_many() == []
    clock.now = 101.0
    assert dq.get_nowait() == "a"
    clock.now = 110.0
    assert dq.get_many() == ["b", "c"]
    assert dq.next_deadline() is None and len(dq) == 0


def test_equal_deadlines_fifo_and_past_delays_due_now(impl):
    clock = FakeClock(100.0)
    dq = impl.DelayQueue(clock=clock)
    for i in range(5):
        dq.put(i, 1.0)
    dq.put("now", 0)
    dq.put("past", -5)
    assert dq.get_many() == ["past", "now"]
    clock.now += 1
    assert dq.get_many(3) == [0, 1, 2]
    assert dq.get_many() == [3, 4]


def test_bad_delays_name_the_argument(impl):
    dq = impl.DelayQueue(clock=FakeClock(100.0))
    dq.put("x", 1)
    for bad, exc, msg in [
        (float("nan"), ValueError, "delay must not be NaN"),
        ("1", TypeError, "delay must be a real number"),
        (2**60, OverflowError, "delay"),
    ]:
        with pytest.raises(exc, match=msg):
            dq.put("y", bad)
        h = dq.put("z", 5)
        with pytest.raises(exc, match=msg):
            dq.reschedule(h, bad)
        assert dq.cancel(h)
    with pytest.raises(ValueError, match="deadline must not be NaN"):
        dq.put_at("y", float("nan"))
    with pytest.raises(ValueError, match="'timeout' must be a non-negative number"):
        dq.get(timeout=-1)
    with pytest.raises(ValueError, match="max_items"):
        dq.get_many(-1)
    assert len(dq) == 1


def test_cancel_and_reschedule(impl):
    clock = FakeClock(100.0)
    dq = impl.DelayQueue(clock=clock)
    a = dq.put("a", 1)
    b = dq.put("b", 2)
    c = dq.put("c", 3)
    assert dq.cancel(b) is True
    assert dq.cancel(b) is False
    assert dq.reschedule(b, 0) is False
    assert dq.reschedule(c, 0.5) is True
    assert dq.next_deadline() == 100.5
    clock.now = 101
    assert dq.get_many() == ["c", "a"]
    assert dq.cancel(a) is False  # delivered
    with pytest.raises(TypeError, match="handle"):
        dq.cancel("a")


def test_another_queue_s_handles_cancel_and_reschedule_nothing(impl):
    # two queues fed alike hold their items in the same heap slots: only the
    # container id in a handle tells whose it is
    clock = FakeClock(100.0)
    d1, d2 = impl.DelayQueue(clock=clock), impl.DelayQueue(clock=clock)
    h1 = [d1.put(f"one{i}", i) for i in range(5)]
    h2 = [d2.put(f"two{i}", i) for i in range(5)]
    for h in h1:
        assert d2.cancel(h) is False and d2.reschedule(h, 50) is False
    for h in h2:
        assert d1.cancel(h) is False and d1.reschedule(h, 50) is False
    assert len(d1) == len(d2) == 5 and d1.next_deadline() == d2.next_deadline() == 100.0
    clock.now = 104
    assert d2.get_many() == [f"two{i}" for i in range(5)]
    assert d1.cancel(h1[2]) is True and d1.reschedule(h1[3], 0) is True  # its own still work
    assert d1.get_many() == ["one0", "one1", "one4", "one3"]


def test_maxsize_bounds_held_items(impl):
    dq = impl.DelayQueue(maxsize=2, clock=FakeClock(100.0))
    dq.put("a", 10)
    h = dq.put("b", 10)
    with pytest.raises(Full):
        dq.put("c", 0, block=False)
    with pytest.raises(Full):
        dq.put("c", 0, timeout=0.01)
    dq.cancel(h)
    dq.put("c", 0, block=False)
    assert len(dq) == 2


def test_repr_and_generic(impl):
    dq = impl.DelayQueue(clock=FakeClock(0.0))
    assert repr(dq) == "<DelayQueue len=0>"
    dq.put("x", 1.5)
    assert repr(dq) == "<DelayQueue len=1 next_deadline=1.5>"
    assert impl.DelayQueue[int].__origin__ is impl.DelayQueue


def test_shutdown_keeps_delivering_then_raises(impl):
    clock = FakeClock(100.0)
    dq = impl.DelayQueue(clock=clock)
    dq.put("a", 1)
    dq.put("b", 2)
    dq.shutdown()
    assert dq.is_shutdown
    with pytest.raises(ShutDown):
        dq.put("c", 0)
    with pytest.raises(Empty):  # still holds items, none due
        dq.get_nowait()
    clock.now = 102
    assert dq.get() == "a"
    assert dq.get_many() == ["b"]
    with pytest.raises(ShutDown):
        dq.get_nowait()
    with pytest.raises(ShutDown):
        dq.get_many()


def test_immediate_shutdown_drops_items(impl):
    dq = impl.DelayQueue(clock=FakeClock(100.0))
    dq.put("a", 0)
    dq.shutdown(immediate=True)
    assert len(dq) == 0
    with pytest.raises(ShutDown):
        dq.get()


def test_iteration_until_shutdown(impl):
    dq = impl.DelayQueue()
    for i in range(3):
        dq.put(i, 0.01 * (3 - i))
    dq.shutdown()
    assert list(dq) == [2, 1, 0]


# -- real time: blocking and wake-ups ---------------------------------------------


def test_blocking_get_never_early(impl):
    dq = impl.DelayQueue()
    t0 = time.monotonic()
    dq.put("x", 0.05)
    assert dq.get(timeout=5) == "x"
    assert time.monotonic() - t0 >= 0.05


def test_get_timeout(impl):
    dq = impl.DelayQueue()
    dq.put("late", 10)
    t0 = time.monotonic()
    with pytest.raises(Empty):
        dq.get(timeout=0.05)
    assert 0.05 <= time.monotonic() - t0 < 5


def test_earlier_item_wakes_a_waiting_get(impl):
    dq = impl.DelayQueue()
    dq.put("late", 30)
    got = []
    t = start(lambda: got.append((dq.get(timeout=20), time.monotonic())))
    time.sleep(0.05)
    t0 = time.monotonic()
    dq.put("soon", 0.05)
    t.join(10)
    assert got and got[0][0] == "soon"
    assert 0.05 <= got[0][1] - t0 < 5


def wait_for(predicate, limit=10.0):
    end = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.005)


@pytest.mark.parametrize("how", ["cancel", "reschedule"])
def test_head_change_wakes_the_sleeping_leader(impl, how):
    # The leader sleeps 30 s (real time) until the head; the clock then
    # jumps past the second item, so only a wake-up on the head change lets
    # the leader see that item due: without it, the get sleeps 30 s.
    clock = FakeClock(0.0)
    dq = impl.DelayQueue(clock=clock)
    head = dq.put_at("head", 30.0)
    dq.put_at("second", 31.0)
    got = []
    t = start(lambda: got.append(dq.get(timeout=60)))
    wait_for(lambda: dq._leader is not None)  # the getter sleeps until the head
    clock.now = 31.0
    if how == "cancel":
        assert dq.cancel(head)
    else:
        assert dq.reschedule(head, 100)
    t.join(10)
    assert got == ["second"]
    dq.shutdown(immediate=True)


def test_reschedule_to_earlier_wakes_a_waiting_get(impl):
    dq = impl.DelayQueue()
    dq.put("head", 30)
    soon = dq.put("soon", 40)
    got = []
    t = start(lambda: got.append(dq.get(timeout=20)))
    time.sleep(0.05)
    assert dq.reschedule(soon, 0.05)
    t.join(10)
    assert got == ["soon"]


def test_shutdown_wakes_waiting_getters(impl):
    dq = impl.DelayQueue()
    out = []

    def getter():
        try:
            out.append(dq.get())
        except ShutDown:
            out.append("shutdown")

    threads = [start(getter) for _ in range(3)]
    time.sleep(0.05)
    dq.shutdown()
    for t in threads:
        t.join(5)
    assert out == ["shutdown"] * 3

    dq2 = impl.DelayQueue()
    dq2.put("far", 60)

    def immediate_getter():
        try:
            dq2.get()
        except ShutDown:
            out.append("immediate")

    t = start(immediate_getter)
    time.sleep(0.05)
    dq2.shutdown(immediate=True)
    t.join(5)
    assert out[-1] == "immediate"


def test_one_leader_among_many_waiting_getters(impl):
    # A fake clock: the getters wait (in real time) until the state below
    # is reached, however slowly a loaded machine starts them.
    clock = FakeClock(0.0)
    dq = impl.DelayQueue(clock=clock)
    dq.put_at("x", 5.0)  # due within the getters' timeout: one leads
    got = []

    def getter():
        try:
            got.append(dq.get(timeout=10))
        except ShutDown:
            pass

    threads = [start(getter) for _ in range(6)]
    wait_for(lambda: len(dq._getters) == 6 and dq._leader is not None)
    assert dq._leader is not None  # exactly one sleeps until the head ...
    assert len(dq._getters) == 6  # ... the other five until woken
    clock.now = 6.0
    dq.put_at("y", 4.0)  # an earlier head wakes the leader: both are due now
    wait_for(lambda: len(got) == 2)
    assert sorted(got) == ["x", "y"]
    dq.shutdown(immediate=True)
    for t in threads:
        t.join(5)


def test_stress_producers_and_consumers_with_cancels(impl):
    # Many threads put, cancel and get at once: every item is either
    # delivered exactly once or cancelled, never early, never lost.
    n_producers, n_consumers, per_producer = 4, 4, 2_000
    dq = impl.DelayQueue(maxsize=500)
    cancelled: set[int] = set()
    deadlines: dict[int, float] = {}
    lock = threading.Lock()
    got: list[list[tuple[int, float]]] = [[] for _ in range(n_consumers)]

    def produce(p):
        rng = random.Random(p)
        mine = []
        for i in range(per_producer):
            item = p * per_producer + i
            delay = rng.random() * 0.05
            with lock:
                deadlines[item] = time.monotonic() + delay
            mine.append((item, dq.put(item, delay, timeout=30)))
            if rng.random() < 0.2:
                victim, h = mine.pop(rng.randrange(len(mine)))
                if dq.cancel(h):
                    with lock:
                        cancelled.add(victim)

    def consume(c):
        out = got[c]
        for item in dq:
            out.append((item, time.monotonic()))

    consumers = [start(consume, c) for c in range(n_consumers)]
    producers = [start(produce, p) for p in range(n_producers)]
    for t in producers:
        t.join(60)
    assert not any(t.is_alive() for t in producers)
    dq.shutdown()
    for t in consumers:
        t.join(60)
    assert not any(t.is_alive() for t in consumers)
    taken = [i for out in got for i, _ in out]
    assert len(taken) == len(set(taken))  # nothing doubled
    assert set(taken) | cancelled == set(range(n_producers * per_producer))  # nothing lost
    assert not set(taken) & cancelled
    assert not [i for out in got for i, at in out if at < deadlines[i]]  # never early
    dq._check()


def test_stress_consumers_drain_exactly_once(impl):
    n_items, n_consumers = 20_000, 4
    dq = impl.DelayQueue()
    rng = random.Random(7)
    deadlines = {}
    for i in range(n_items):
        delay = rng.random() * 0.2
        deadlines[i] = time.monotonic() + delay  # at or before the deadline put sets
        dq.put(i, delay)
    got: list[list[tuple[int, float]]] = [[] for _ in range(n_consumers)]

    def consume(c):
        out = got[c]
        for item in dq:
            out.append((item, time.monotonic()))

    threads = [start(consume, c) for c in range(n_consumers)]
    while len(dq):
        time.sleep(0.01)
    dq.shutdown()
    for t in threads:
        t.join(30)
    taken = [x for out in got for x in out]
    assert sorted(i for i, _ in taken) == list(range(n_items))  # none lost or doubled
    early = [i for i, at in taken if at < deadlines[i]]
    assert not early


# -- model-based ----------------------------------------------------------------------


def test_stateful_against_model(impl):
    class DelayMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clock = FakeClock(0.0)
            self.dq = impl.DelayQueue(clock=self.clock)
            self.model: dict[int, tuple[float, int, int]] = {}
            self.seq = 0
            self.handles: list[int] = []

        def _add(self, handle, deadline, item):
            self.model[handle] = (deadline, self.seq, item)
            self.seq += 1

        @rule(delay=st.floats(-5, 50, allow_nan=False), item=st.integers())
        def put(self, delay, item):
            h = self.dq.put(item, delay)
            self.handles.append(h)
            self._add(h, self.clock.now + delay, item)

        @rule(deadline=st.integers(-5, 60), item=st.integers())
        def put_at(self, deadline, item):
            h = self.dq.put_at(item, deadline)
            self.handles.append(h)
            self._add(h, float(deadline), item)

        @rule(i=st.integers(0, 50))
        def cancel(self, i):
            if self.handles:
                h = self.handles[i % len(self.handles)]
                assert self.dq.cancel(h) == (h in self.model)
                self.model.pop(h, None)

        @rule(i=st.integers(0, 50), delay=st.floats(-5, 50, allow_nan=False))
        def reschedule(self, i, delay):
            if self.handles:
                h = self.handles[i % len(self.handles)]
                assert self.dq.reschedule(h, delay) == (h in self.model)
                if h in self.model:
                    self._add(h, self.clock.now + delay, self.model[h][2])

        @rule(step=st.floats(0, 20, allow_nan=False))
        def advance(self, step):
            self.clock.now += step

        def _due(self):
            return sorted((v for v in self.model.values() if v[0] <= self.clock.now), key=lambda v: v[:2])

        @rule()
        def get_nowait(self):
            due = self._due()
            if not due:
                with pytest.raises(Empty):
                    self.dq.get_nowait()
                return
            assert self.dq.get_nowait() == due[0][2]
            self.model = {h: v for h, v in self.model.items() if v is not due[0]}

        @rule(n=st.integers(0, 5))
        def get_many(self, n):
            due = self._due()[:n]
            assert self.dq.get_many(n) == [v[2] for v in due]
            ids = {id(v) for v in due}
            self.model = {h: v for h, v in self.model.items() if id(v) not in ids}

        @invariant()
        def consistent(self):
            assert len(self.dq) == len(self.model)
            expected = min((v[0] for v in self.model.values()), default=None)
            assert self.dq.next_deadline() == expected
            self.dq._heap._check()

    run_state_machine_as_test(DelayMachine, settings=settings(max_examples=100, stateful_step_count=50))


def test_garbage_collected_with_items_and_cycles(impl):
    import gc
    import weakref

    class Job:
        pass

    dq = impl.DelayQueue()
    jobs = []
    for i in range(100):
        j = Job()
        j.dq = dq
        jobs.append(j)
        dq.put(j, i)
    refs = [weakref.ref(dq)] + [weakref.ref(j) for j in jobs]
    del dq, jobs, j
    gc.collect()
    assert all(r() is None for r in refs)


def test_millions_of_operations_leak_nothing(impl):
    # every path that takes an item in or hands one out: put, put_at, cancel
    # (held and stale), reschedule (held and stale), get_nowait, get_many
    payload = object()
    clock = FakeClock(0.0)
    dq = impl.DelayQueue(clock=clock)
    rounds = 2_000 if impl.name == "c" else 200  # x ~130 operations each

    def churn():
        for _ in range(rounds):
            hs = [dq.put(payload, i % 7) for i in range(40)]
            hs.append(dq.put_at(payload, 3.0))
            for h in hs[::3]:
                assert dq.cancel(h)
                assert not dq.cancel(h)
                assert not dq.reschedule(h, 1.0)
            for h in hs[1::3]:
                assert dq.reschedule(h, 0.5)
            assert dq.get_nowait() is payload
            clock.now += 10.0
            dq.get_many()
            assert len(dq) == 0

    base = sys.getrefcount(payload)
    grown = traced_growth(churn, 3)
    assert sys.getrefcount(payload) == base
    assert grown < 64 * 1024, grown


# -- waits of any length (issue #10) -------------------------------------------------------


@pytest.mark.parametrize("delay", [float("inf"), 1e300, threading.TIMEOUT_MAX * 2, 2**53])
def test_a_far_or_infinite_delay_is_held_and_not_due(impl, delay):
    clock = FakeClock(100.0)
    dq = impl.DelayQueue(clock=clock)
    h = dq.put("far", delay)
    assert dq.next_deadline() == 100.0 + delay and len(dq) == 1
    clock.now = 1e9
    assert dq.get_many() == []
    with pytest.raises(Empty):
        dq.get(timeout=0.05)  # a capped real wait on a far head times out normally
    assert dq.reschedule(h, float("inf"))
    assert dq.next_deadline() == float("inf")
    clock.now = 1e308  # an infinite deadline is never due
    assert dq.get_many() == []
    assert dq.cancel(h) and len(dq) == 0
    dq._check()


@pytest.mark.parametrize("timeout", [float("inf"), 1e300, threading.TIMEOUT_MAX * 2, 10**400])
def test_a_huge_timeout_waits_until_an_item_comes(impl, timeout):
    dq = impl.DelayQueue()
    dq.put("never", float("inf"))
    timer = threading.Timer(0.1, dq.put, ("soon", 0.01))
    timer.start()
    assert dq.get(timeout=timeout) == "soon"
    timer.join()


def test_long_waits_sleep_in_chunks_and_recheck(impl, monkeypatch):
    from dq_core import _waiting

    monkeypatch.setattr(_waiting, "MAX_WAIT", 0.02)
    dq = impl.DelayQueue()
    dq.put("x", 0.15)  # the leader sleeps in 0.02 s chunks, never early
    t0 = time.monotonic()
    assert dq.get(timeout=float("inf")) == "x"
    assert 0.15 <= time.monotonic() - t0 < 5
    dq.put("late", 30)
    t0 = time.monotonic()
    with pytest.raises(Empty):  # chunked, it still times out on time
        dq.get(timeout=0.2)
    assert 0.2 <= time.monotonic() - t0 < 5


def test_bad_timeouts_are_refused_before_waiting(impl):
    dq = impl.DelayQueue(maxsize=1)
    dq.put("x", 10)
    for bad in (float("nan"), -1, -1e-9, float("-inf"), -(10**400)):
        with pytest.raises(ValueError, match="^'timeout' must be a non-negative number$"):
            dq.get(timeout=bad)
        with pytest.raises(ValueError, match="^'timeout' must be a non-negative number$"):
            dq.put("y", timeout=bad)
    with pytest.raises(TypeError, match="^timeout must be a real number, not 'str'$"):
        dq.get(timeout="1")
    with pytest.raises(TypeError, match="^timeout must be a real number, not 'str'$"):
        dq.put("y", timeout="1")
    with pytest.raises(Empty):  # as queue.Queue: a non-blocking get ignores the timeout
        dq.get(block=False, timeout=float("nan"))
    assert len(dq) == 1
    dq._check()


# -- constructor, setters, clock (issue #10) ----------------------------------------------


def test_clock_must_be_callable_and_its_readings_sane(impl):
    with pytest.raises(TypeError, match="^clock must be callable, not 'int'$"):
        impl.DelayQueue(clock=5)
    reading = [0.0]
    dq = impl.DelayQueue(clock=lambda: reading[0])
    h = dq.put("x", 1)
    for bad, exc, msg in [
        (float("nan"), ValueError, r"^clock\(\) must return a finite number, got nan$"),
        (float("inf"), ValueError, r"^clock\(\) must return a finite number, got inf$"),
        ("soon", TypeError, r"^clock\(\) must be a real number, not 'str'$"),
        (None, TypeError, r"^clock\(\) must be a real number, not 'NoneType'$"),
    ]:
        reading[0] = bad
        for call in (
            lambda: dq.put("y", 1),
            dq.get_nowait,
            dq.get_many,
            lambda: dq.reschedule(h, 1),
            lambda: dq.get(timeout=0),
        ):
            with pytest.raises(exc, match=msg):
                call()
            dq._check()  # the lock was released
    assert len(dq) == 1
    reading[0] = 5.0
    assert dq.get_many() == ["x"]


def test_maxsize_is_validated_and_settable(impl):
    with pytest.raises(TypeError, match="^maxsize must be an int, not 'str'$"):
        impl.DelayQueue(maxsize="3")
    with pytest.raises(TypeError, match="^maxsize must be an int, not 'float'$"):
        impl.DelayQueue(maxsize=2.0)
    dq = impl.DelayQueue(maxsize=1, clock=FakeClock(100.0))
    dq.put("a", 5)
    with pytest.raises(TypeError, match="^maxsize must be an int, not 'NoneType'$"):
        dq.maxsize = None
    assert dq.maxsize == 1
    done = []
    t = start(lambda: done.append(dq.put("b", 5, timeout=20)))
    wait_for(lambda: dq._putters)
    dq.maxsize = 2  # room now: the waiting put goes through
    t.join(10)
    assert len(done) == 1 and len(dq) == 2


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copy_and_pickle_are_refused(impl, how):
    import copy
    import pickle

    dq = impl.DelayQueue()
    dq.put("x", 1)
    fn = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickle.dumps}[how]
    with pytest.raises(TypeError, match="^cannot pickle or copy 'DelayQueue' object"):
        fn(dq)
    assert len(dq) == 1


# -- user code that misbehaves -------------------------------------------------------------


def test_a_clock_that_raises_leaks_no_lock_and_loses_no_item(impl):
    state = {"now": 0.0, "fail": False}

    def clock():
        if state["fail"]:
            state["fail"] = False
            raise OSError("clock broke")
        return state["now"]

    dq = impl.DelayQueue(clock=clock)
    dq.put("a", 1)
    state["now"] = 2.0
    for call in (dq.get_nowait, dq.get_many, lambda: dq.get(timeout=1), lambda: dq.put("b", 0)):
        state["fail"] = True
        with pytest.raises(OSError, match="clock broke"):
            call()
        dq._check()
    assert dq.get(timeout=1) == "a" and len(dq) == 0


def test_an_item_finaliser_may_use_the_queue(impl):
    # A cancelled or dropped item's __del__ runs after the lock is released,
    # so it can put into the queue (under the lock it would hit re-entry).
    dq = impl.DelayQueue(clock=FakeClock(100.0))
    outcome = []

    class Phoenix:
        def __del__(self):
            try:
                outcome.append(dq.put("reborn", 0))
            except Exception as exc:
                outcome.append(exc)

    h = dq.put(Phoenix(), 5)
    assert dq.cancel(h)
    assert len(outcome) == 1 and isinstance(outcome[0], int), outcome
    assert dq.get_many() == ["reborn"]
    dq.put(Phoenix(), 0)
    dq.shutdown(immediate=True)
    assert len(outcome) == 2 and isinstance(outcome[1], ShutDown), outcome
    dq._check()


# -- the cores (issue #15) -----------------------------------------------------------------


def test_the_default_clock_is_time_monotonic(impl):
    # The compiled core reads it in C; both must agree with time.monotonic.
    dq = impl.DelayQueue()
    before = time.monotonic()
    dq.put("x", 0.5)
    after = time.monotonic()
    assert before + 0.5 <= dq.next_deadline() <= after + 0.5
    assert before <= dq._now() and dq._now() <= time.monotonic()
    with pytest.raises(Empty):
        dq.get_nowait()


def test_core_twins_look_the_same(both):
    import inspect

    c, py = (impl.delaycore.DelayCore for impl in both)
    assert inspect.getdoc(c) == inspect.getdoc(py)
    # the public methods, and those the face calls (the others are cdef in C)
    names = {
        n for n, v in vars(py).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))
    }
    assert {
        "put",
        "put_at",
        "get",
        "get_nowait",
        "get_many",
        "cancel",
        "reschedule",
        "next_deadline",
        "qsize",
        "maxsize",
    } <= names
    hooks = {"_check", "_lock", "_unlock", "_now", "_wait_due", "_wait_for_room"}
    for name in sorted(names | hooks):
        assert hasattr(c, name), name
        assert inspect.getdoc(getattr(c, name)) == inspect.getdoc(getattr(py, name)), name


def test_a_clock_that_reenters_the_queue_is_refused(impl):
    def clock():
        dq.next_deadline()  # under get's lock: refused, not a deadlock
        return 100.0

    dq = impl.DelayQueue(clock=clock)
    dq.put_at("a", 0.0)
    with pytest.raises(RuntimeError, match="re-entered"):
        bounded(dq.get_nowait)  # a deadlock fails in seconds
    with pytest.raises(RuntimeError, match="re-entered"):
        bounded(dq.get_many)
    dq._check()
    assert len(dq) == 1


def test_repr_from_the_queues_own_clock(impl):
    # repr takes the lock to read length and head together, except from the
    # thread that holds it (here: the clock, read under get's lock)
    seen = []

    def clock():
        seen.append(repr(dq))
        return 100.0

    dq = impl.DelayQueue(clock=clock)
    dq.put_at("a", 5.0)
    assert bounded(dq.get_nowait) == "a"  # a deadlock fails in seconds
    assert seen[-1] == "<DelayQueue len=1 next_deadline=5.0>"
    assert repr(dq) == "<DelayQueue len=0>"
    dq._check()


# -- direct tests of edges the fuzzers and stress tests found slowly --------------------------


def test_a_zero_delay_item_is_due_at_once_on_a_frozen_clock(impl):
    # A clock that has not moved since the put (Windows' coarse clock: the
    # common case) still makes a delay <= 0 due now.
    clock = FakeClock(5.0)
    dq = impl.DelayQueue(clock=clock)
    dq.put("zero", 0)
    dq.put("negative", -1.0)
    dq.put_at("deadline now", 5.0)
    assert dq.get_nowait() == "negative"
    assert dq.get_nowait() == "zero"
    assert dq.get(timeout=0) == "deadline now"
    with pytest.raises(Empty):
        dq.get_nowait()


def test_the_head_after_pops_from_a_sorted_run_is_the_run_s_start(impl):
    clock = FakeClock(0.0)
    dq = impl.DelayQueue(clock=clock)
    check_the_run_s_head(dq, dq.put, lambda now: setattr(clock, "now", now), Empty)
    assert dq.cancel(dq.put(0, delay=1.5))  # an earlier one, cancelled
    clock.now = 3.0
    assert dq.get_many() == [3]
    assert dq.next_deadline() == 4.0 and dq.qsize() == 2


@pytest.mark.parametrize("how", ["get", "get_nowait", "get_many", "cancel"])
def test_taking_an_item_wakes_a_put_blocked_on_maxsize(impl, how):
    dq = impl.DelayQueue(maxsize=1)
    handle = dq.put("first")
    done = threading.Event()

    def blocked():
        dq.put("second")  # no timeout: only a wake-up ends it
        done.set()

    t = start(blocked)
    assert not done.wait(0.05)
    if how == "get":
        assert dq.get(timeout=5) == "first"
    else:
        take_first_without_waiting(dq, how, handle)
    assert done.wait(5), "the blocked put was not woken"
    t.join(5)
    assert dq.get(timeout=5) == "second"
