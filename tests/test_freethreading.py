"""Many threads on one object: written to mean something on a free-threaded build.

On free-threaded CPython (3.14t, 3.15t) no GIL makes a compiled method
atomic: each compiled class runs its methods under a critical section on
itself instead.  These tests share one structure between threads that start
together (a barrier) and hammer it:

- Heap, TimingWheel, TTLRing and TTLDict are not thread-safe by contract,
  yet misuse must never crash or corrupt them: every call either works or
  raises the documented error, ``_check()`` holds afterwards, and every item
  that went in comes out exactly once.  TTLDict's changes are each atomic
  in both implementations: a key whose ``__hash__`` sleeps keeps a change
  under way while other threads run (the GIL is released, or the critical
  section suspended); their changes wait for it, their reads are answered.
- PriorityQueue, DelayQueue, Timer and PriorityExecutor are thread-safe:
  nothing lost, nothing delivered or run twice.

With the GIL the switch interval is cut to a microsecond, so that threads
interleave inside every short Python-level sequence; on a free-threaded
build they run truly at once.  The 3.14t job of the test workflow runs this
file with the GIL off (and the per-structure tests under pytest-run-parallel).
"""

from __future__ import annotations

import copy
import functools
import pickle
import random
import sys
import threading
import time
from typing import Any, Callable

import pytest

from helpers import run_together

pytestmark = pytest.mark.usefixtures("switch_often")

THREADS = 6
ROUNDS = 250
JOIN_TIMEOUT = 120.0  # generous: a loaded 2-core machine; a hang fails the test, never slows it


def run_threads(work: Callable[[int], None], n: int = THREADS) -> None:
    """Run ``work(i)`` in ``n`` threads released together; re-raise the first failure."""
    run_together([functools.partial(work, i) for i in range(n)], JOIN_TIMEOUT)


def per_thread() -> list[list[Any]]:
    """One list for each thread to record in (no two threads append to one)."""
    return [[] for _ in range(THREADS)]


def refused(exc: RuntimeError) -> bool:
    """A change refused because another one was under way (nothing changed)."""
    return "re-entered" in str(exc)


def exactly_once(went_in: list[list[Any]], came_out: list[Any]) -> None:
    """Every item that went in came out once: none lost, none twice, none made up."""
    everything = [x for part in went_in for x in part]
    assert len(set(everything)) == len(everything)
    assert sorted(came_out) == sorted(everything)


# -- not thread-safe, but never broken: the compiled cores --------------------
#
# Each compiled method runs whole under the object's critical section (or the
# GIL), so a structure shared by threads is used one call at a time, and a
# call that meets another's change under way is refused.  The pure twins are
# plain Python: shared by threads they can raise anything and lose track, as
# heapq on a shared list can (and, being Python, cannot crash), so these
# tests ask the compiled cores only.


@pytest.fixture(scope="module")
def compiled() -> Any:
    from conftest import compiled_or_skip

    return compiled_or_skip()


def test_heap_shared_by_threads(compiled: Any) -> None:
    impl = compiled
    h = impl.Heap()
    pushed: list[list[Any]] = per_thread()
    popped: list[list[Any]] = per_thread()

    def work(i: int) -> None:
        rng = random.Random(i)
        mine: list[tuple[int, Any]] = []
        for r in range(ROUNDS):
            item = (i, r)
            try:
                mine.append((h.push(rng.randrange(50), item), item))
                pushed[i].append(item)
                op = rng.random()
                if op < 0.25:
                    popped[i].append(h.pop())
                elif op < 0.4 and mine:
                    popped[i].append(h.remove(mine.pop(rng.randrange(len(mine)))[0]))
                elif op < 0.55 and mine:
                    h.update(mine[-1][0], rng.randrange(50))
                elif op < 0.65:
                    popped[i].extend(h.pop_many(rng.randrange(4)))
                elif op < 0.7:
                    popped[i].append(h.popitem()[1])
                elif op < 0.8:
                    h.peekitem(), len(h), bool(h), repr(h)
                    if mine:
                        mine[-1][0] in h  # noqa: B015 -- the lookup is the point
                        h.priority(mine[-1][0])
                elif op < 0.83:
                    copy.copy(h)._check()
                elif op < 0.85:
                    h2 = pickle.loads(pickle.dumps(h))
                    h2._check()
                elif op < 0.87:
                    h._check()
            except (IndexError, KeyError):
                pass  # emptied or removed by another thread meanwhile
            except RuntimeError as exc:
                if not refused(exc):
                    raise

    run_threads(work)
    h._check()
    rest = h.pop_many(len(h))
    exactly_once(pushed, [x for part in popped for x in part] + rest)
    assert len(h) == 0
    h._check()


def test_heap_push_many_and_clear_shared_by_threads(compiled: Any) -> None:
    impl = compiled
    # bulk pushes against pops and clears: a clear drops what it finds
    h = impl.Heap()
    cleared = threading.Event()

    def work(i: int) -> None:
        rng = random.Random(i)
        for r in range(ROUNDS // 5):
            try:
                h.push_many([rng.random() for _ in range(20)], [(i, r, k) for k in range(20)])
                h.pop_many(15)
                h._check()
            except RuntimeError as exc:
                if not refused(exc):
                    raise
            while i == 0 and r % 10 == 9:  # until it finds no other change under way
                try:
                    h.clear()
                    cleared.set()
                    break
                except RuntimeError as exc:
                    if not refused(exc):
                        raise

    run_threads(work)
    h._check()
    assert cleared.is_set()
    out = h.pop_many(len(h))
    assert len(set(out)) == len(out) and len(h) == 0


def test_timing_wheel_shared_by_threads(compiled: Any) -> None:
    impl = compiled
    w = impl.TimingWheel(tick=1.0, wheel_size=4, clock=lambda: 0.0)
    scheduled: list[list[Any]] = per_thread()
    out: list[list[Any]] = per_thread()
    now = [0.0]
    now_lock = threading.Lock()

    def work(i: int) -> None:
        rng = random.Random(i)
        mine: list[tuple[int, Any]] = []
        for r in range(ROUNDS):
            item = (i, r)
            try:
                # deadlines over several levels, so advancing cascades
                mine.append((w.schedule_at(item, rng.random() * 200.0), item))
                scheduled[i].append(item)
                op = rng.random()
                if op < 0.25:
                    with now_lock:
                        now[0] += 0.5
                        t = now[0]
                    out[i].extend(w.advance(t))
                elif op < 0.45 and mine:
                    handle, it = mine.pop(rng.randrange(len(mine)))
                    if w.cancel(handle):
                        out[i].append(it)
                elif op < 0.6:
                    w.next_deadline(), len(w), repr(w), w.stats(), w.wheel_time
                    if mine:
                        mine[-1][0] in w  # noqa: B015 -- the lookup is the point
                elif op < 0.63:
                    copy.copy(w)._check()
                elif op < 0.65:
                    w._check()
            except RuntimeError as exc:
                if not refused(exc):
                    raise

    run_threads(work)
    w._check()
    rest = w.drain()
    exactly_once(scheduled, [x for part in out for x in part] + rest)
    assert len(w) == 0
    w._check()


def test_a_wheel_initialised_while_its_init_reads_the_clock_refuses_the_late_init(impl: Any) -> None:
    # Another thread (or the clock itself, here, deterministically) runs
    # __init__ and schedules timers while an earlier __init__ waits for its
    # clock: the late one must not set up the wheel again under those timers
    # (a compiled wheel would index its slot lists with the wrong size).
    w = impl.TimingWheel.__new__(impl.TimingWheel)
    first = []

    def clock() -> float:
        if not first:
            first.append(True)
            w.__init__(tick=1.0, wheel_size=2, clock=lambda: 0.0)
            for i in range(50):
                w.schedule_at(i, i * 3.0)  # up to six levels of two slots
        return 0.0

    with pytest.raises(RuntimeError, match="may run only once"):
        w.__init__(tick=1.0, wheel_size=256, clock=clock)
    assert w.wheel_size == 2
    w._check()
    assert w.drain() == list(range(50))


def test_ttl_ring_shared_by_threads(compiled: Any) -> None:
    impl = compiled
    ring = impl.TTLRing(ttl=10.0, segment_size=4, clock=lambda: 0.0)  # small segments: many hand-overs
    pushed: list[list[Any]] = per_thread()
    out: list[list[Any]] = per_thread()

    def work(i: int) -> None:
        rng = random.Random(i)
        for r in range(ROUNDS):
            item = (i, r)
            try:
                ring.push(item, created_at=float(r))
                pushed[i].append(item)
                op = rng.random()
                if op < 0.3:
                    out[i].extend(ring.expire(now=float(r), max_items=rng.randrange(-1, 5)))
                elif op < 0.45:
                    out[i].append(ring.popleft())
                elif op < 0.6:
                    ring.next_expiry(), len(ring), ring.stats(), repr(ring), ring.ttl
                elif op < 0.63:
                    copy.copy(ring)._check()
                elif op < 0.65:
                    ring._check()
            except IndexError:
                pass  # emptied by another thread
            except RuntimeError as exc:
                if not refused(exc):
                    raise

    run_threads(work)
    ring._check()
    rest = ring.expire(now=1e9)
    exactly_once(pushed, [x for part in out for x in part] + rest)
    assert len(ring) == 0
    ring._check()


def test_ttl_dict_shared_by_threads(compiled: Any) -> None:
    impl = compiled
    evicted: list[Any] = []
    d = impl.TTLDict(ttl=100.0, maxsize=40, clock=lambda: 0.0, on_expire=lambda k, v: evicted.append(k))
    written: list[list[Any]] = per_thread()
    taken: list[list[Any]] = per_thread()

    def work(i: int) -> None:
        rng = random.Random(i)
        mine: list[Any] = []
        for r in range(ROUNDS):
            key = (i, r)
            try:
                d[key] = r
                written[i].append(key)
                mine.append(key)
                op = rng.random()
                if op < 0.2 and mine:
                    k = mine.pop(rng.randrange(len(mine)))
                    d.pop(k)
                    taken[i].append(k)
                elif op < 0.3:
                    taken[i].append(d.popitem()[0])
                elif op < 0.5:
                    k = mine[-1] if mine else key
                    k in d, d.get(k), len(d), repr(d), d.next_expiry()  # noqa: B018
                    list(d.items())
                elif op < 0.55:
                    d.expire()
                elif op < 0.58:
                    copy.copy(d)._check()
                elif op < 0.6:
                    d._check()
            except KeyError:
                pass  # evicted or taken by another thread meanwhile
            except RuntimeError as exc:
                # refused, or a view iterated while another thread changed the dict
                if not (refused(exc) or "during iteration" in str(exc)):
                    raise

    run_threads(work)
    d._check()
    rest = list(d)
    exactly_once(written, [k for part in taken for k in part] + evicted + rest)
    assert len(d) == len(rest) <= 40


class SlowKey:
    """A key whose ``__hash__`` sleeps: a change holding it stays under way while others run."""

    def __init__(self, i: int) -> None:
        self.i = i

    def __hash__(self) -> int:
        time.sleep(0.0005)  # releases the GIL / suspends the critical section
        return hash(self.i)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlowKey) and other.i == self.i

    def __lt__(self, other: SlowKey) -> bool:
        return self.i < other.i


def test_ttl_dict_change_under_way_makes_other_threads_wait(impl: Any) -> None:
    d = impl.TTLDict(ttl=100.0, clock=lambda: 0.0)
    written: list[list[int]] = [[] for _ in range(4)]
    deleted: list[list[int]] = [[] for _ in range(4)]
    refusals = [0]

    def work(i: int) -> None:
        for r in range(40):
            n = i * 1000 + r
            try:
                d[SlowKey(n)] = n  # the key's hash runs while the change is under way
                written[i].append(n)
                if r % 3 == 0:
                    del d[SlowKey(n)]
                    deleted[i].append(n)
                SlowKey(n) in d  # noqa: B015 -- reads are answered, never refused
            except RuntimeError as exc:
                assert refused(exc), exc
                refusals[0] += 1
            except KeyError:
                pytest.fail("a key written by this thread went missing")

    run_threads(work, 4)
    d._check()
    held = sorted(k.i for k in d)
    assert held == sorted(set(sum(written, [])) - set(sum(deleted, [])))
    for k in held:
        assert d[SlowKey(k)] == k
    # the sleeps make overlapping changes certain: they waited, none was refused
    assert refusals[0] == 0


# -- thread-safe: nothing lost, nothing twice ----------------------------------


def consume(q: Any, into: list[Any], is_stop: Callable[[Any], bool]) -> None:
    """Take items from ``q`` into ``into`` until a stop item."""
    while True:
        item = q.get(timeout=JOIN_TIMEOUT)
        if is_stop(item):
            return
        into.append(item)


def test_priority_queue_producers_and_consumers(impl: Any) -> None:
    q = impl.PriorityQueue()
    produced: list[list[Any]] = per_thread()
    consumed: list[list[Any]] = per_thread()
    producers = THREADS // 2

    def work(i: int) -> None:
        if i < producers:
            rng = random.Random(i)
            for r in range(ROUNDS * 2):
                item = (rng.randrange(10), i, r)
                q.put(item)
                produced[i].append(item)
            q.put((99, -1, i))  # one stop per consumer
        else:
            consume(q, consumed[i], lambda item: item[1] == -1)

    run_threads(work)
    assert q.empty()
    exactly_once(produced, [x for part in consumed for x in part])


def test_delay_queue_producers_and_consumers(impl: Any) -> None:
    q = impl.DelayQueue()
    produced: list[list[Any]] = per_thread()
    consumed: list[list[Any]] = per_thread()
    cancelled: list[list[Any]] = per_thread()
    producers = THREADS // 2

    def work(i: int) -> None:
        if i < producers:
            rng = random.Random(i)
            for r in range(ROUNDS):
                item = (i, r)
                handle = q.put(item, rng.random() * 0.002)
                produced[i].append(item)
                if r % 7 == 0 and q.cancel(handle):
                    cancelled[i].append(item)
            q.put((-1, i), 0.01)  # one stop per consumer, due after this producer's items
        else:
            consume(q, consumed[i], lambda item: item[0] == -1)

    run_threads(work)
    rest = [q.get(timeout=JOIN_TIMEOUT) for _ in range(len(q))]  # another producer's late ones
    exactly_once(produced, [x for part in consumed + cancelled for x in part] + rest)


def test_timer_scheduled_from_threads_runs_each_once(impl: Any) -> None:
    ran: list[int] = []
    handles: list[list[tuple[int, Any]]] = [[] for _ in range(4)]
    cancelled: list[int] = []
    with impl.Timer(tick=0.001) as timer:

        def work(i: int) -> None:
            rng = random.Random(i)
            for r in range(100):
                n = i * 1000 + r
                h = timer.call_later(rng.random() * 0.02, ran.append, n)
                handles[i].append((n, h))
                if r % 4 == 0:
                    n2, h2 = handles[i][rng.randrange(len(handles[i]))]
                    if h2.cancel():
                        cancelled.append(n2)

        run_threads(work, 4)
        expected = {n for part in handles for n, _ in part} - set(cancelled)
        deadline = time.monotonic() + JOIN_TIMEOUT
        while len(ran) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert timer.stop() == []
    assert len(cancelled) == len(set(cancelled))
    assert sorted(ran) == sorted(expected)  # each ran once; none cancelled ran


def test_priority_executor_submitted_from_threads_runs_each_once(impl: Any) -> None:
    ran: list[int] = []
    futures: list[list[Any]] = [[] for _ in range(4)]
    with impl.PriorityExecutor(max_workers=4) as ex:

        def work(i: int) -> None:
            rng = random.Random(i)
            for r in range(100):
                n = i * 1000 + r
                futures[i].append((n, ex.submit_with_priority(rng.random(), ran.append, n)))

        run_threads(work, 4)
        for part in futures:
            for _, f in part:
                assert f.result(JOIN_TIMEOUT) is None
    assert sorted(ran) == sorted(n for part in futures for n, _ in part)


# -- the build -------------------------------------------------------------------


def test_compiled_cores_keep_the_gil_off() -> None:
    """On a free-threaded build, importing every compiled core leaves the GIL off."""
    import importlib
    import os
    import sysconfig

    from conftest import compiled_or_skip
    from dq_core._assemble import CORE_MODULES

    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        pytest.skip("a build with the GIL: nothing to turn off (the 3.14t job runs this)")
    if os.environ.get("PYTHON_GIL") == "1" or sys._xoptions.get("gil") == "1":
        pytest.skip("the GIL was forced on (PYTHON_GIL=1 or -X gil=1)")
    compiled_or_skip()
    for name in CORE_MODULES:
        importlib.import_module(f"dq_core.{name}")
    assert not sys._is_gil_enabled(), "importing a compiled core turned the GIL back on"


def test_a_collected_timer_wakes_its_thread_even_while_the_lock_is_held(impl: Any) -> None:
    # The finaliser of a collected Timer may run on any thread, at any moment:
    # here while the timer thread holds the lock, between its last look at
    # ``stopped`` and its wait.  It must not give up on the wake-up (the
    # thread would sleep for good), nor deadlock on a thread holding the lock.
    t = impl.Timer(tick=0.01)
    shared = t._shared
    holding = threading.Event()
    woken: list[bool] = []

    def timer_thread_about_to_wait() -> None:
        with shared.cond:
            holding.set()
            time.sleep(0.2)  # the finaliser arrives meanwhile, and must wait for the lock
            woken.append(shared.cond.wait(JOIN_TIMEOUT))

    waiter = threading.Thread(target=timer_thread_about_to_wait, daemon=True)
    waiter.start()
    assert holding.wait(JOIN_TIMEOUT)
    shared.abandon()
    waiter.join(JOIN_TIMEOUT)
    assert woken == [True] and shared.stopped
    with shared.lock:
        shared.abandon()  # from a thread that holds the lock: no deadlock


def test_the_free_threaded_ci_runs_without_the_gil() -> None:
    # what checks the free-threaded builds this machine lacks: the 3.14t test
    # job and the cp314t/cp315t wheels, with the GIL left off
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    workflow = root / ".github" / "workflows" / "tests.yml"
    if not workflow.is_file():
        pytest.skip("no source tree next to the tests")
    tests_yml = workflow.read_text()
    pyproject = (root / "pyproject.toml").read_text()
    assert "PYTHON_GIL" not in tests_yml and "PYTHON_GIL" not in pyproject
    assert "sys._is_gil_enabled()" in tests_yml
    assert "--parallel-threads=" in tests_yml and "pytest-run-parallel" in pyproject
    assert '"freethreading_compatible": True' in (root / "setup.py").read_text()
