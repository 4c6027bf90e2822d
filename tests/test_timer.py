"""Timer: callbacks on a thread, in real time, with generous bounds; both implementations."""

from __future__ import annotations

import copy
import gc
import logging
import math
import pickle
import random
import threading
import time
import weakref
from types import SimpleNamespace

import pytest

from conftest import IMPLEMENTATIONS
from dq_core._assemble import assemble, cores

# Bounds for a loaded 2-core machine: what must happen soon gets this long.
SOON = 5.0


def test_callbacks_run_in_deadline_order_never_early(impl):
    ran: list[tuple[int, float, float]] = []
    done = threading.Event()
    with impl.Timer(tick=0.005) as t:
        start = time.monotonic()
        delays = [0.09, 0.01, 0.05, 0.03, 0.07, 0.0, 0.031, 0.1]
        handles = [
            t.call_later(d, lambda i=i: ran.append((i, time.monotonic()))) for i, d in enumerate(delays)
        ]
        t.call_later(0.15, done.set)
        assert done.wait(SOON)
    # Each deadline is read when call_later runs: on a loaded machine the
    # loop above can take longer than the gaps between the delays, so the
    # order to expect is that of the handles' deadlines (FIFO among equal).
    order = [i for i, _ in ran]
    assert order == sorted(range(len(delays)), key=lambda i: (handles[i].when, i))
    for i, at in ran:
        assert at >= handles[i].when >= start + delays[i]  # never early
        assert at < handles[i].when + SOON


def test_call_at_and_arguments(impl):
    got = []
    done = threading.Event()
    with impl.Timer(tick=0.001) as t:
        when = time.monotonic() + 0.02
        h = t.call_at(when, lambda *a, **k: (got.append((a, k)), done.set()), 1, 2, fn=3)
        assert h.when == when and not h.cancelled
        assert done.wait(SOON)
    assert got == [((1, 2), {"fn": 3})]
    assert time.monotonic() >= when


def test_a_callback_runs_at_its_deadline_not_at_its_tick_s_end(impl):
    # ticks of 60 s: run at the end of its tick, a 20 ms timer would wait up to a
    # minute; run at its deadline, it is done in well under SOON
    done = threading.Event()
    order = []
    with impl.Timer(tick=60.0) as t:
        now = time.monotonic()
        t.call_at(now + 0.03, order.append, "b")
        t.call_at(now + 0.02, lambda: (order.append("a"), t.call_at(0.0, order.append, "past")))
        t.call_at(now + 0.04, done.set)
        assert done.wait(SOON)
    assert order == ["a", "past", "b"]


def test_an_earlier_timer_wakes_the_sleeping_thread(impl):
    done = threading.Event()
    with impl.Timer(tick=0.01) as t:
        t.call_later(3600, lambda: None)
        time.sleep(0.05)  # the thread is asleep until an hour from now
        start = time.monotonic()
        t.call_later(0.05, done.set)
        assert done.wait(SOON)
        assert time.monotonic() - start >= 0.05


def test_an_idle_timer_does_not_tick(impl):
    with impl.Timer(tick=0.001) as t:
        t.call_later(3600, lambda: None)
        time.sleep(0.05)
        before = t._shared.wakeups
        time.sleep(0.5)
        # a loop ticking every 1 ms would have woken ~500 times
        assert t._shared.wakeups - before <= 2


def test_an_exception_is_logged_and_the_thread_goes_on(impl, caplog):
    done = threading.Event()

    def boom():
        raise ValueError("boom")

    with caplog.at_level(logging.ERROR, logger="dq_core"):
        with impl.Timer(tick=0.001) as t:
            t.call_later(0.0, boom)
            t.call_later(0.01, done.set)
            assert done.wait(SOON)
    records = [r for r in caplog.records if r.name == "dq_core"]
    assert len(records) == 1
    assert "exception in timer callback" in records[0].getMessage()
    assert records[0].exc_info[0] is ValueError


def test_cancel(impl):
    ran = []
    done = threading.Event()
    with impl.Timer(tick=0.001) as t:
        h = t.call_later(0.03, ran.append, "cancelled")
        keep = t.call_later(0.03, ran.append, "kept")
        assert h.cancel() is True and h.cancelled
        assert h.cancel() is False
        t.call_later(0.06, done.set)
        assert done.wait(SOON)
        assert keep.cancel() is False and not keep.cancelled
        assert len(t) == 0
    assert ran == ["kept"]


def test_cancel_of_a_due_timer_from_an_earlier_callback(impl):
    ran = []
    release = threading.Event()
    done = threading.Event()
    with impl.Timer(tick=0.001) as t:
        when = time.monotonic() + 0.02
        later = []

        def first():
            ran.append("first")
            release.wait(SOON)
            later.append(second.cancel())  # due, not started yet

        t.call_at(when, first)
        second = t.call_at(when, ran.append, "second")
        t.call_at(when + 0.001, done.set)
        time.sleep(0.1)
        release.set()
        assert done.wait(SOON)
    assert ran == ["first"] and later == [True] and second.cancelled


def test_stop_returns_the_timers_not_run(impl):
    t = impl.Timer(tick=0.01)
    hs = [t.call_later(d, lambda: None) for d in (50, 10, 30, 3600)]
    assert len(t) == 4
    assert "running" in repr(t) and "pending=4" in repr(t)
    unrun = t.stop()
    assert unrun == [hs[1], hs[2], hs[0], hs[3]]
    assert not t._shared.thread.is_alive()
    assert t.stop() == [] and t.stopped and len(t) == 0
    assert all(h.cancel() is False and not h.cancelled for h in unrun)
    with pytest.raises(RuntimeError, match="after stop"):
        t.call_later(1, print)


def test_stop_waits_for_the_running_callback(impl):
    started = threading.Event()
    finished = []

    def slow():
        started.set()
        time.sleep(0.2)
        finished.append(True)

    t = impl.Timer(tick=0.001)
    t.call_later(0, slow)
    after = t.call_later(0, print)  # due, but queued behind slow
    assert started.wait(SOON)
    assert t.stop() == [after]
    assert finished == [True]


def test_stop_from_a_callback(impl):
    t = impl.Timer(tick=0.001)
    result = []
    done = threading.Event()
    scheduled = threading.Event()

    def stop():
        # The thread starts with the first timer and may run this at once:
        # wait until the main thread has scheduled the one stop() returns.
        scheduled.wait(SOON)
        result.append(t.stop())
        done.set()

    t.call_later(0, stop)
    pending = t.call_later(60, print)
    scheduled.set()
    assert done.wait(SOON)
    assert result == [[pending]]
    t._shared.thread.join(SOON)
    assert not t._shared.thread.is_alive()


def test_bad_arguments(impl):
    with impl.Timer() as t:
        with pytest.raises(TypeError, match="delay must be a real number, not 'str'"):
            t.call_later("1", print)
        with pytest.raises(ValueError, match="deadline must not be NaN"):
            t.call_at(float("nan"), print)
        with pytest.raises(TypeError, match="fn must be callable, not 'int'"):
            t.call_later(1, 5)
        with pytest.raises(TypeError, match="handle must be a TimerHandle"):
            t.cancel(5)
        assert len(t) == 0 and t._shared.thread is None  # nothing started
    with pytest.raises(ValueError, match="tick must be a positive"):
        impl.Timer(tick=0)


def test_many_threads_schedule_and_cancel(impl):
    runs: dict[int, int] = {}
    lock = threading.Lock()
    n_threads, per_thread = 4, 3000 if impl.name == "c" else 1500

    def record(key):
        with lock:
            runs[key] = runs.get(key, 0) + 1

    with impl.Timer(tick=0.001) as t:
        kept: list[int] = []

        def producer(base):
            rnd = random.Random(base)
            mine = []
            for i in range(per_thread):
                key = base + i
                h = t.call_later(rnd.random() * 0.2, record, key)
                if rnd.random() < 0.5 and h.cancel():
                    continue
                mine.append(key)
            with lock:
                kept.extend(mine)

        threads = [threading.Thread(target=producer, args=(k * 10**6,)) for k in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        deadline = time.monotonic() + SOON * 4
        while len(t) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(t) == 0
    # leaving the block joined the thread: the last callback has finished
    assert sorted(runs) == sorted(kept)
    assert set(runs.values()) == {1}


def test_a_dropped_timer_still_runs_its_pending_callbacks(impl):
    # As threading.Timer: nothing keeps the Timer, yet its callback runs.
    done = threading.Event()
    h = impl.Timer(tick=0.001).call_later(0.05, done.set)
    gc.collect()
    assert done.wait(SOON)
    assert not h.cancelled


def test_a_dropped_timer_goes_once_its_callbacks_ran(impl):
    go, done = threading.Event(), threading.Event()
    t = impl.Timer(tick=0.001)
    t.call_later(0.02, lambda: go.wait(SOON) and done.set())
    thread, ref = t._shared.thread, weakref.ref(t)
    del t
    gc.collect()
    assert ref() is not None  # held by its thread while the callback is pending
    go.set()
    assert done.wait(SOON)
    thread.join(SOON)
    assert not thread.is_alive()
    gc.collect()
    assert ref() is None


def test_a_dropped_timer_goes_once_its_callbacks_are_cancelled(impl):
    t = impl.Timer(tick=0.01)
    handles = [t.call_later(3600, print), t.call_later(7200, print)]
    thread, ref = t._shared.thread, weakref.ref(t)
    del t
    gc.collect()
    assert ref() is not None
    assert handles[0].cancel()
    gc.collect()
    assert ref() is not None  # one still pending
    assert handles[1].cancel()
    gc.collect()
    assert ref() is None
    thread.join(SOON)
    assert not thread.is_alive()


def test_a_dropped_timer_runs_the_callbacks_already_due_when_another_is_cancelled(impl):
    # Taken from the wheel, "second" waits its turn while "first" runs; the
    # wheel is empty once "far" is cancelled, but the Timer must stay (its
    # thread holds it) until "second" has run.
    go, started, second = threading.Event(), threading.Event(), threading.Event()
    t = impl.Timer(tick=0.001)
    when = time.monotonic() + 0.01
    t.call_at(when, lambda: (started.set(), go.wait(SOON)))
    h2 = t.call_at(when, second.set)
    far = t.call_later(3600, print)
    ref = weakref.ref(t)
    del t
    assert started.wait(SOON)
    assert h2._state == "due"  # in the thread's batch, not in the wheel
    assert far.cancel()
    gc.collect()
    assert ref() is not None, "dropped with a callback still due"
    go.set()
    assert second.wait(SOON), "the callback already due never ran"


def test_a_stopped_timer_is_not_kept(impl):
    t = impl.Timer(tick=0.01)
    h = t.call_later(3600, print)
    thread, ref = t._shared.thread, weakref.ref(t)
    assert t.stop() == [h]
    del t
    gc.collect()
    assert ref() is None and not thread.is_alive()


def test_a_past_deadline_waits_behind_an_earlier_one_of_the_same_tick(impl):
    ran = []
    done = threading.Event()
    with impl.Timer(tick=0.3) as t:
        wheel = t._shared.wheel
        first = t.call_at(time.monotonic(), ran.append, "first")
        limit = time.monotonic() + SOON
        while wheel.wheel_time <= first.when and time.monotonic() < limit:
            time.sleep(0.001)  # until the thread has advanced past it (not to its tick)
        assert wheel.wheel_time > first.when
        # between the two: already past (for the wheel too), later than "first"
        t.call_at((first.when + time.monotonic()) / 2, ran.append, "second")
        t.call_later(0.01, done.set)
        assert done.wait(SOON)
    assert ran == ["first", "second"]


@pytest.mark.parametrize("delay", [math.inf, threading.TIMEOUT_MAX * 2, 1e300])
def test_a_deadline_past_timeout_max_does_not_kill_the_thread(impl, delay):
    done = threading.Event()
    with impl.Timer(tick=0.01) as t:
        far = t.call_later(delay, print)
        far_at = t.call_at(math.inf, print)
        time.sleep(0.05)  # the thread is asleep towards the far deadline
        t.call_later(0.01, done.set)
        assert done.wait(SOON)
        assert t._shared.thread.is_alive() and "running" in repr(t)
        assert t.stop() == [far, far_at]


def _faulty_wheel_class(inner_class):
    class FaultyWheel:
        """A TimingWheel whose advance() fails (the thread's own code fails)."""

        def __init__(self, tick, wheel_size, clock):
            self.inner = inner_class(tick, wheel_size, clock=clock)

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def __len__(self):
            return len(self.inner)

        def advance(self, now=None):
            raise MemoryError("injected")

    return FaultyWheel


def test_a_failure_of_the_thread_itself_is_logged_and_refuses_new_timers(impl, caplog):
    # The Timer of an implementation whose wheel core fails, built as dq_core builds its own.
    modules = cores(IMPLEMENTATIONS[impl.name])
    modules["_wheelcore"] = SimpleNamespace(TimingWheel=_faulty_wheel_class(impl.TimingWheel))
    timer = assemble(modules).Timer
    with caplog.at_level(logging.ERROR, logger="dq_core"):
        t = timer(tick=0.001)
        h = t.call_later(0, print)
        limit = time.monotonic() + SOON
        while t._shared.failed is None and time.monotonic() < limit:
            time.sleep(0.001)
    assert isinstance(t._shared.failed, MemoryError)
    [record] = [r for r in caplog.records if r.name == "dq_core"]
    assert "timer thread" in record.getMessage() and record.exc_info[0] is MemoryError
    # never a Timer that takes timers and runs none
    with pytest.raises(RuntimeError, match="timer thread failed") as info:
        t.call_later(0, print)
    assert isinstance(info.value.__cause__, MemoryError)
    assert "failed" in repr(t)
    assert t.stop() == [h]


def test_stop_returns_deadline_order_within_a_tick(impl):
    t = impl.Timer(tick=100.0)
    base = time.monotonic() + 1000.0
    hs = [t.call_at(base + d, print) for d in (3.0, 1.0, 2.0, 1.0, 0.5)]
    assert t.stop() == [hs[4], hs[1], hs[3], hs[2], hs[0]]


def test_callbacks_in_one_tick_run_in_deadline_order(impl):
    # Both deadlines fall in one 0.5 s tick: the wheel hands them over
    # together, first in first out; the Timer must run them by deadline.
    ran = []
    done = threading.Event()
    with impl.Timer(tick=0.5) as t:
        base = (math.floor(time.monotonic() / 0.5) + 2) * 0.5  # a tick boundary ahead
        t.call_at(base + 0.3, ran.append, "later")
        t.call_at(base + 0.1, ran.append, "earlier")
        t.call_at(base + 0.4, done.set)
        assert done.wait(SOON)
    assert ran == ["earlier", "later"]


def test_timer_and_handles_refuse_copy_and_pickle(impl):
    with impl.Timer(tick=0.01) as t:
        h = t.call_later(60, print)
        for obj, name in ((t, "Timer"), (h, "TimerHandle")):
            for op in (copy.copy, copy.deepcopy, pickle.dumps):
                with pytest.raises(TypeError, match=f"cannot copy or pickle '{name}'"):
                    op(obj)
