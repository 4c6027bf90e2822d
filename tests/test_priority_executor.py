"""PriorityExecutor: a concurrent.futures Executor with priorities and a rate limit."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import BrokenExecutor, CancelledError

import pytest


def test_results_exceptions_and_map(impl):
    with impl.PriorityExecutor(max_workers=3) as ex:
        assert ex.submit(pow, 2, 8).result(5) == 256
        f = ex.submit_with_priority(-1, divmod, 7, 0)
        with pytest.raises(ZeroDivisionError):
            f.result(5)
        assert list(ex.map(lambda x: x * x, range(10))) == [x * x for x in range(10)]
        assert ex.submit(lambda *a, **k: (a, k), 1, fn=2).result(5) == ((1,), {"fn": 2})


def test_start_order_follows_priority_then_submission(impl):
    rng = random.Random(4)
    gate = threading.Event()
    started = []
    with impl.PriorityExecutor(max_workers=1) as ex:
        ex.submit(gate.wait, 10)  # holds the only worker while we queue up
        time.sleep(0.05)
        expected = []
        for i in range(200):
            p = rng.randrange(10)
            ex.submit_with_priority(p, started.append, (p, i))
            expected.append((p, i))
        gate.set()
    assert started == sorted(expected)


def test_never_more_than_max_workers(impl):
    running = 0
    peak = 0
    lock = threading.Lock()

    def task():
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.01)
        with lock:
            running -= 1

    with impl.PriorityExecutor(max_workers=3) as ex:
        futures = [ex.submit(task) for _ in range(30)]
    assert all(f.done() for f in futures)
    assert peak == 3
    assert len(ex._threads) == 3


def test_rate_is_held_in_real_time(impl):
    starts = []
    rate, n = 40, 20
    with impl.PriorityExecutor(max_workers=4, rate=rate, burst=2) as ex:
        for _ in range(n):
            ex.submit(lambda: starts.append(time.monotonic()))
    starts.sort()
    # A start is recorded a little after its permit, and a loaded machine
    # can hold a worker in between: allow 100 ms of such lag.
    lag = 0.1
    span = starts[-1] - starts[0]
    assert span >= (n - 2) / rate - lag  # after the burst, never faster than rate
    for i in range(len(starts) - 10):  # no window holds more than burst + rate * width
        assert starts[i + 10] - starts[i] >= (10 - 2) / rate - lag


def test_shutdown_waits_and_refuses_new_work(impl):
    done = []
    ex = impl.PriorityExecutor(max_workers=2)
    for i in range(5):
        ex.submit(lambda i=i: (time.sleep(0.01), done.append(i)))
    ex.shutdown(wait=True)
    assert sorted(done) == list(range(5))
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(print)


def test_shutdown_cancel_futures(impl):
    gate = threading.Event()
    ex = impl.PriorityExecutor(max_workers=1)
    first = ex.submit(gate.wait, 10)
    time.sleep(0.05)
    pending = [ex.submit(time.sleep, 0) for _ in range(5)]
    ex.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert first.result(5) is True
    assert all(f.cancelled() for f in pending)
    with pytest.raises(CancelledError):
        pending[0].result()


def test_thread_names_and_initializer(impl):
    seen = []
    with impl.PriorityExecutor(
        max_workers=2, thread_name_prefix="poller", initializer=seen.append, initargs=("init",)
    ) as ex:
        name = ex.submit(lambda: threading.current_thread().name).result(5)
    assert name.startswith("poller_")
    assert seen and set(seen) == {"init"}


def test_failing_initializer_breaks_the_pool(impl):
    def boom():
        raise RuntimeError("no")

    ex = impl.PriorityExecutor(max_workers=1, initializer=boom)
    f = ex.submit(print)
    with pytest.raises(BrokenExecutor):
        f.result(5)
    with pytest.raises(BrokenExecutor):
        ex.submit(print)
    ex.shutdown()


def test_len_counts_the_tasks_not_started(impl):
    gate, running = threading.Event(), threading.Event()
    with impl.PriorityExecutor(max_workers=1) as ex:
        assert len(ex) == 0
        ex.submit(lambda: (running.set(), gate.wait(10)))
        assert running.wait(10)
        for _ in range(5):
            ex.submit(int)
        assert len(ex) == 5
        gate.set()
    assert len(ex) == 0


def test_bad_arguments(impl):
    with pytest.raises(ValueError, match="max_workers"):
        impl.PriorityExecutor(max_workers=0)
    for bad in ("x", 1.5):
        with pytest.raises(TypeError, match=f"^max_workers must be an int, not {type(bad).__name__!r}$"):
            impl.PriorityExecutor(max_workers=bad)
    with pytest.raises(TypeError, match="initializer"):
        impl.PriorityExecutor(initializer=3)
    with impl.PriorityExecutor() as ex:
        with pytest.raises(ValueError, match="priority must not be NaN"):
            ex.submit_with_priority(float("nan"), print)
        with pytest.raises(TypeError, match="priority must be a real number"):
            ex.submit_with_priority("high", print)


# -- issue #18: submit runs at priority 0 ----------------------------------------------------


def test_submit_runs_at_priority_zero(impl):
    gate = threading.Event()
    started = []
    with impl.PriorityExecutor(max_workers=1) as ex:
        ex.submit(gate.wait, 10)
        time.sleep(0.05)
        ex.submit_with_priority(1, started.append, "after")
        ex.submit(started.append, "submit")
        ex.submit_with_priority(-1, started.append, "before")
        ex.submit_with_priority(0, started.append, "zero, later")
        gate.set()
    assert started == ["before", "submit", "zero, later", "after"]


# -- issue #10 --------------------------------------------------------------------------------


def test_impossible_rate_settings_are_refused(impl):
    for burst in (0.5, 0.999):
        with pytest.raises(ValueError, match="^burst must be at least 1"):
            impl.PriorityExecutor(rate=10, burst=burst)
    with pytest.raises(ValueError, match="^burst must not be NaN$"):
        impl.PriorityExecutor(rate=10, burst=float("nan"))
    with pytest.raises(ValueError, match="^rate must be a positive finite number"):
        impl.PriorityExecutor(rate=0)
    with pytest.raises(TypeError, match="^rate must be a real number, not 'str'$"):
        impl.PriorityExecutor(rate="10")


def test_a_worker_survives_its_own_machinery_failing(impl):
    # Not the task but the worker's permit-taking raises: the future it was
    # for gets the error, none stays pending, and the worker goes on.
    class FlakyLimiter:
        calls = 0

        def acquire(self):
            self.calls += 1
            if self.calls == 2:
                raise OSError("limiter broke")
            return True

    ex = impl.PriorityExecutor(max_workers=1, rate=1000, burst=1)
    ex._limiter = FlakyLimiter()  # before the first worker starts
    futures = [ex.submit(pow, 2, i) for i in range(4)]
    with pytest.raises(OSError, match="limiter broke"):
        futures[1].result(5)
    assert [futures[i].result(5) for i in (0, 2, 3)] == [1, 4, 8]
    ex.shutdown()
    assert not any(t.is_alive() for t in ex._threads)


def test_a_dropped_executor_drains_and_its_workers_exit(impl):
    import gc
    import weakref

    gate = threading.Event()
    ex = impl.PriorityExecutor(max_workers=2)
    futures = [ex.submit(gate.wait, 10)] + [ex.submit(pow, 2, i) for i in range(10)]
    threads = list(ex._threads)
    ref = weakref.ref(ex)
    del ex
    gc.collect()
    assert ref() is None  # the workers hold no strong reference to it
    gate.set()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert [f.result(0) for f in futures[1:]] == [2**i for i in range(10)]


def test_interpreter_exit_runs_pending_work_and_joins_workers(impl):
    import os
    import subprocess
    import sys

    # One os.write per line: two workers' print() calls may interleave
    # ("1", "2", "\n", "\n"), and the test would count a lost task.
    code = (
        "import os, dq_core\n"
        "print(dq_core.implementation, flush=True)\n"
        "ex = dq_core.PriorityExecutor(max_workers=2, rate=200, burst=1)\n"
        "for i in range(20):\n"
        "    ex.submit(lambda i=i: os.write(1, b'%d\\n' % i))\n"
    )
    env = dict(os.environ)
    env.pop("DQ_CORE_NO_EXTENSIONS", None)
    if impl.name == "py":
        env["DQ_CORE_NO_EXTENSIONS"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    assert lines[0] == {"c": "cython", "py": "python"}[impl.name]
    assert sorted(map(int, lines[1:])) == list(range(20))


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copy_and_pickle_are_refused(impl, how):
    import copy
    import pickle

    fn = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickle.dumps}[how]
    with impl.PriorityExecutor(max_workers=1) as ex:
        with pytest.raises(TypeError, match="^cannot pickle or copy 'PriorityExecutor' object"):
            fn(ex)
