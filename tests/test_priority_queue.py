"""PriorityQueue: a drop-in for queue.PriorityQueue, checked against the stdlib itself."""

from __future__ import annotations

import queue
import random
import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dq_core
from helpers import bounded

HAS_STDLIB_SHUTDOWN = hasattr(queue.Queue, "shutdown")


def start(fn, *args):
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


def test_exception_classes_are_the_stdlibs():
    assert dq_core.Empty is queue.Empty
    assert dq_core.Full is queue.Full
    if HAS_STDLIB_SHUTDOWN:
        assert dq_core.ShutDown is queue.ShutDown
    else:
        assert issubclass(dq_core.ShutDown, Exception)


def test_public_class_is_the_selected_core(impl):
    q = dq_core.PriorityQueue()
    assert type(q).__name__ == "PriorityQueue"
    assert isinstance(q, dq_core._priorityqueue.PriorityQueue) and type(q) is dq_core.PriorityQueue


# -- same behaviour as the stdlib, step by step ----------------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "put_nowait",
                "get_nowait",
                "put0",
                "get0",
                "qsize",
                "full",
                "empty",
                "task_done",
                "put_many",
                "get_many",
            ]
        ),
        st.integers(0, 4),
        st.text(alphabet="ab", max_size=1),
    ),
    max_size=60,
)


@given(st.integers(0, 4), ops)
@settings(max_examples=300)
def test_matches_stdlib_step_by_step(impl, maxsize, program):
    ours = impl.PriorityQueue(maxsize)
    ref = queue.PriorityQueue(maxsize)

    def apply(q, op, n, s, stdlib):
        try:
            if op == "put_nowait":
                return q.put_nowait((n, s))
            if op == "get_nowait":
                return q.get_nowait()
            if op == "put0":
                return q.put((n, s), True, 0)
            if op == "get0":
                return q.get(True, 0)
            if op == "put_many":  # the stdlib has none: emulate with put_nowait
                if stdlib:
                    if maxsize and q.qsize() + 2 > maxsize:
                        raise queue.Full
                    q.put_nowait((n, s))
                    q.put_nowait((n, "z"))
                    return None
                return q.put_many([(n, s), (n, "z")])
            if op == "get_many":
                if stdlib:
                    return [q.get_nowait() for _ in range(min(n, q.qsize()))]
                return q.get_many(n)
            return getattr(q, op)()
        except (queue.Empty, queue.Full, ValueError) as exc:
            return type(exc)

    for op, n, s in program:
        assert apply(ours, op, n, s, False) == apply(ref, op, n, s, True), op
        assert ours.unfinished_tasks == ref.unfinished_tasks
        assert sorted(ours.queue) == sorted(ref.queue)
    assert ours.queue == ref.queue  # same heap layout, not just the same items


@pytest.mark.skipif(not HAS_STDLIB_SHUTDOWN, reason="the stdlib has shutdown from 3.13")
@pytest.mark.parametrize("immediate", [False, True])
def test_shutdown_matches_stdlib(impl, immediate):
    ours, ref = impl.PriorityQueue(), queue.PriorityQueue()
    for q in (ours, ref):
        for i in range(5):
            q.put((i, "x"))
        q.get()
        q.task_done()
        q.get()
        q.shutdown(immediate)
    assert ours.unfinished_tasks == ref.unfinished_tasks
    assert ours.qsize() == ref.qsize()
    assert ours.is_shutdown and ref.is_shutdown
    for q in (ours, ref):
        with pytest.raises(queue.ShutDown):
            q.put((9, "late"))
    drained = [[], []]
    for out, q in zip(drained, (ours, ref)):
        while True:
            try:
                out.append(q.get_nowait())
            except queue.ShutDown:
                break
    assert drained[0] == drained[1]


def test_negative_timeout(impl):
    q = impl.PriorityQueue(2)
    q.put((1, "a"))
    msg = "'timeout' must be a non-negative number"
    with pytest.raises(ValueError, match=msg):
        q.get(timeout=-1)  # even with an item there, as the stdlib does
    with pytest.raises(ValueError, match=msg):
        q.put((2, "b"), timeout=-1)
    unbounded = impl.PriorityQueue()
    unbounded.put((1, "a"), timeout=-1)  # the stdlib ignores it when unbounded
    assert q.qsize() == 1 and unbounded.qsize() == 1


def test_task_done_too_many_times(impl):
    q = impl.PriorityQueue()
    with pytest.raises(ValueError, match="task_done"):
        q.task_done()
    assert q.unfinished_tasks == 0


def test_generic_alias_and_repr(impl):
    assert impl.PriorityQueue[int].__origin__ is impl.PriorityQueue
    q = impl.PriorityQueue(3)
    assert repr(q) == "<PriorityQueue len=0 maxsize=3>"
    q.put((2, "b"))
    q.put((1, "a"))
    assert repr(q) == "<PriorityQueue len=2 maxsize=3 next=(1, 'a')>"


@pytest.mark.parametrize("maxsize", [1.3, 2.0, 0.5, -1.5, 0, 3], ids=repr)
def test_put_many_takes_all_exactly_when_put_nowait_would_take_each(impl, maxsize):
    # queue's put waits while qsize() >= maxsize > 0: a float 1.3 holds two items
    for held in range(4):
        for k in range(4):
            ref, q = queue.PriorityQueue(maxsize), impl.PriorityQueue(maxsize)
            for i in range(held):
                try:
                    ref.put_nowait(i)
                    q.put_nowait(i)
                except queue.Full:
                    with pytest.raises(queue.Full):
                        q.put_nowait(i)
                    break
            want = True
            try:
                for i in range(k):
                    ref.put_nowait(i)
            except queue.Full:
                want = False
            before = q.qsize()
            try:
                q.put_many(range(k))
                took = True
            except queue.Full:
                took = False
            assert took is want, (held, k)
            assert q.qsize() == before + (k if took else 0)


def test_put_many_get_many_clear(impl):
    q = impl.PriorityQueue(4)
    q.put_many([(3, "c"), (1, "a"), (2, "b")])
    with pytest.raises(queue.Full):
        q.put_many([(0, "x"), (0, "y")])
    assert q.qsize() == 3 and q.unfinished_tasks == 3
    assert q.get_many(2) == [(1, "a"), (2, "b")]
    assert q.get_many() == [(3, "c")]
    assert q.get_many() == []
    with pytest.raises(ValueError, match="max_items"):
        q.get_many(-1)
    with pytest.raises(TypeError, match="max_items"):
        q.get_many("2")
    q.put_many([(5, "e"), (4, "d")])
    assert q.unfinished_tasks == 5
    q.clear()
    assert q.empty() and q.unfinished_tasks == 3
    q.shutdown()
    with pytest.raises(dq_core.ShutDown):
        q.get_many()
    with pytest.raises(dq_core.ShutDown):
        q.put_many([(1, "x")])


# -- blocking paths ---------------------------------------------------------------


def test_get_timeout_raises_empty(impl):
    q = impl.PriorityQueue()
    t0 = time.monotonic()
    with pytest.raises(queue.Empty):
        q.get(timeout=0.05)
    assert time.monotonic() - t0 >= 0.05
    with pytest.raises(queue.Empty):
        q.get(False)
    with pytest.raises(queue.Empty):
        q.get_nowait()


def test_put_timeout_raises_full(impl):
    q = impl.PriorityQueue(1)
    q.put((1, "a"))
    t0 = time.monotonic()
    with pytest.raises(queue.Full):
        q.put((2, "b"), timeout=0.05)
    assert time.monotonic() - t0 >= 0.05
    with pytest.raises(queue.Full):
        q.put_nowait((2, "b"))
    with pytest.raises(queue.Full):
        q.put((2, "b"), block=False)
    assert q.full() and q.qsize() == 1


def test_blocking_get_wakes_on_put(impl):
    q = impl.PriorityQueue()
    got = []
    t = start(lambda: got.append(q.get()))
    time.sleep(0.05)
    assert not got
    q.put((1, "a"))
    t.join(5)
    assert got == [(1, "a")]


def test_blocking_put_wakes_on_get(impl):
    q = impl.PriorityQueue(1)
    q.put((1, "a"))
    done = threading.Event()
    t = start(lambda: (q.put((2, "b")), done.set()))
    time.sleep(0.05)
    assert not done.is_set()
    assert q.get() == (1, "a")
    assert done.wait(5)
    t.join(5)
    assert q.get_nowait() == (2, "b")


def test_join_waits_for_task_done(impl):
    q = impl.PriorityQueue()
    for i in range(3):
        q.put((i, "x"))
    joined = threading.Event()
    t = start(lambda: (q.join(), joined.set()))
    for _ in range(3):
        q.get()
        assert not joined.wait(0.02)
        q.task_done()
    assert joined.wait(5)
    t.join(5)


REFUSED = "^the queue is shut down: it takes no more items$"
DRAINED = "^the queue is shut down and holds no more items$"


@pytest.mark.parametrize("kind", ["PriorityQueue", "DelayQueue"])
def test_shut_down_says_so(impl, kind):
    # The standard library raises ShutDown with no message at all.
    q = getattr(impl, kind)(maxsize=1)
    q.put((1, "a"))
    outcome = []

    def blocked(fn):
        try:
            fn()
        except dq_core.ShutDown as exc:
            outcome.append(str(exc))

    t = start(blocked, lambda: q.put((2, "b")))  # waits for room until the shutdown
    end = time.monotonic() + 10
    while not q._putters:
        assert time.monotonic() < end, "the put never waited"
        time.sleep(0.001)
    q.shutdown()
    t.join(5)
    assert outcome == ["the queue is shut down: it takes no more items"]
    for put in (
        lambda: q.put((3, "c")),
        lambda: q.put((3, "c"), block=False),
        lambda: q.put_nowait((3, "c")) if kind == "PriorityQueue" else q.put((3, "c"), 0),
        lambda: q.put_many([(3, "c")]) if kind == "PriorityQueue" else q.put_at((3, "c"), 0),
    ):
        with pytest.raises(dq_core.ShutDown, match=REFUSED):
            put()
    assert q.get_nowait() == (1, "a")  # a plain shutdown lets what is held out
    for get in (q.get_nowait, lambda: q.get(timeout=5), lambda: q.get(block=False), q.get_many):
        with pytest.raises(dq_core.ShutDown, match=DRAINED):
            get()

    q = getattr(impl, kind)()
    t = start(blocked, q.get)  # waits for an item until the shutdown
    end = time.monotonic() + 10
    while not q._getters:
        assert time.monotonic() < end, "the get never waited"
        time.sleep(0.001)
    q.shutdown(immediate=True)
    t.join(5)
    assert outcome[1:] == ["the queue is shut down and holds no more items"]


@pytest.mark.parametrize("immediate", [False, True])
def test_shutdown_wakes_blocked_getters_and_putters(impl, immediate):
    q = impl.PriorityQueue(1)
    empty = impl.PriorityQueue()
    q.put((1, "a"))
    results = []

    def blocked(fn):
        try:
            fn()
            results.append("returned")
        except dq_core.ShutDown:
            results.append("shutdown")

    threads = [start(blocked, lambda: q.put((2, "b"))) for _ in range(2)]
    threads += [start(blocked, empty.get) for _ in range(2)]
    time.sleep(0.05)
    q.shutdown(immediate)
    empty.shutdown(immediate)
    for t in threads:
        t.join(5)
    assert results == ["shutdown"] * 4
    if immediate:
        assert q.qsize() == 0 and q.unfinished_tasks == 0
        with pytest.raises(dq_core.ShutDown):
            q.get()
    else:
        assert q.get() == (1, "a")  # items still come out
        with pytest.raises(dq_core.ShutDown):
            q.get()


def test_immediate_shutdown_releases_join(impl):
    q = impl.PriorityQueue()
    for i in range(3):
        q.put((i, "x"))
    joined = threading.Event()
    start(lambda: (q.join(), joined.set()))
    time.sleep(0.02)
    assert not joined.is_set()
    q.shutdown(immediate=True)
    assert joined.wait(5)


# -- hostile comparisons ------------------------------------------------------------


class Bad:
    def __init__(self, key, raise_on=None):
        self.key = key
        self.raise_on = raise_on

    def __lt__(self, other):
        if self.raise_on is not None or getattr(other, "raise_on", None) is not None:
            raise ArithmeticError("no order")
        return self.key < other.key


def test_raising_comparison_propagates_and_queue_stays_usable(impl):
    q = impl.PriorityQueue()
    for k in [5, 1, 3, 2, 4]:
        q.put(Bad(k))
    before = [b.key for b in q.queue]
    with pytest.raises(ArithmeticError):
        q.put(Bad(0, raise_on=True))
    with pytest.raises(ArithmeticError):
        q.put_nowait(Bad(0, raise_on=True))
    assert [b.key for b in q.queue] == before
    assert q.unfinished_tasks == 5
    last = q.queue[-1]
    last.raise_on = True  # moved to the top by get, it refuses to compare
    with pytest.raises(ArithmeticError):
        q.get()
    assert [b.key for b in q.queue] == before  # nothing lost, nothing moved
    last.raise_on = None
    assert [q.get().key for _ in range(5)] == [1, 2, 3, 4, 5]


def test_comparison_that_reenters_the_queue(impl):
    q = impl.PriorityQueue()
    seen = []

    class Meddler:
        def __init__(self, key):
            self.key = key

        def __lt__(self, other):
            assert q.qsize() >= 1  # reading is fine
            try:
                q.put_nowait(Meddler(-1))
            except RuntimeError as exc:
                seen.append(str(exc))
                raise
            return self.key < other.key

    q.put(Meddler(2))
    with pytest.raises(RuntimeError, match="re-entered"):
        bounded(lambda: q.put(Meddler(1)))  # a deadlock fails in seconds
    assert seen and q.qsize() == 1
    q2 = q.get()
    assert q2.key == 2
    # the lock was released: other threads and later calls proceed
    t = start(lambda: q.put_nowait(Meddler(7)))
    t.join(5)
    assert q.qsize() == 1


# -- many threads -------------------------------------------------------------------


def test_stress_producers_consumers_task_done_join(impl):
    n_producers, n_consumers, per_producer = 4, 4, 50_000 if impl.name == "c" else 12_500
    q = impl.PriorityQueue(maxsize=64)
    got: list[list[int]] = [[] for _ in range(n_consumers)]
    stop = object()

    def produce(p):
        rng = random.Random(p)
        for i in range(per_producer):
            q.put((rng.random(), p * per_producer + i))

    def consume(c):
        out = got[c]
        while True:
            item = q.get()
            q.task_done()
            if item[1] is stop:
                return
            out.append(item[1])

    producers = [start(produce, p) for p in range(n_producers)]
    consumers = [start(consume, c) for c in range(n_consumers)]
    for t in producers:
        t.join(120)
    q.join()
    assert q.unfinished_tasks == 0
    for _ in consumers:
        q.put((2.0, stop))
    for t in consumers:
        t.join(60)
    assert not any(t.is_alive() for t in producers + consumers)
    everything = sorted(x for out in got for x in out)
    assert everything == list(range(n_producers * per_producer))  # nothing lost or doubled


def test_stress_timeouts_under_contention(impl):
    q = impl.PriorityQueue(maxsize=4)
    taken = []
    lock = threading.Lock()

    def worker(w):
        rng = random.Random(w)
        for i in range(2000):
            if rng.random() < 0.5:
                try:
                    q.put((rng.random(), (w, i)), timeout=0.001)
                except queue.Full:
                    pass
            else:
                try:
                    item = q.get(timeout=0.001)
                except queue.Empty:
                    continue
                with lock:
                    taken.append(item)

    threads = [start(worker, w) for w in range(6)]
    for t in threads:
        t.join(60)
    rest = q.get_many()
    tags = [x[1] for x in taken + rest]
    assert len(tags) == len(set(tags))
    assert q.unfinished_tasks == len(tags)


# -- memory -------------------------------------------------------------------------


def test_no_reference_leak_over_a_million_operations(impl):
    payload = object()
    q = impl.PriorityQueue()
    items = [(i % 97, i, payload) for i in range(200)]
    base = sys.getrefcount(payload)
    rounds = 2500 if impl.name == "c" else 500
    for _ in range(rounds):  # c: 1 million puts and gets
        for x in items:
            q.put_nowait(x)
        for _ in items:
            q.get_nowait()
        q.put_many(items)
        q.get_many()
    assert sys.getrefcount(payload) == base
    assert q.qsize() == 0


def test_refs_survive_raising_comparisons(impl):
    class Bad:
        def __lt__(self, other):
            raise KeyError("no")

    q = impl.PriorityQueue()
    first, second = Bad(), Bad()
    base = sys.getrefcount(first), sys.getrefcount(second)
    q.put(first)
    for _ in range(1000):
        with pytest.raises(KeyError):
            q.put(second)
    assert q.get() is first
    assert (sys.getrefcount(first), sys.getrefcount(second)) == base


def test_garbage_collected_with_items_and_cycles(impl):
    import gc
    import weakref

    class Job:
        def __init__(self, q):
            self.q = q  # cycle: the queue holds the job, the job the queue

        def __lt__(self, other):
            return id(self) < id(other)

    q = impl.PriorityQueue()
    jobs = [Job(q) for _ in range(100)]
    for j in jobs:
        q.put(j)
    refs = [weakref.ref(q)] + [weakref.ref(j) for j in jobs]
    del q, jobs, j
    gc.collect()
    assert all(r() is None for r in refs)


@pytest.mark.parametrize("maxsize", [0, 2, -1, True, 2.5, 10**30, -(10**30)])
def test_room_check_matches_the_stdlib_for_any_maxsize(impl, maxsize):
    # the compiled core checks an exact int maxsize in C: same answers as the
    # stdlib's Python comparison for every kind of maxsize, set at init or later
    for late in (False, True):
        ours, ref = (
            (impl.PriorityQueue(), queue.PriorityQueue())
            if late
            else (impl.PriorityQueue(maxsize), queue.PriorityQueue(maxsize))
        )
        if late:
            ours.maxsize = ref.maxsize = maxsize
        for i in range(4):
            expect = queue.Full if ref.full() else None
            assert ours.full() == ref.full()
            if expect:
                with pytest.raises(queue.Full):
                    ours.put_nowait(i)
                with pytest.raises(queue.Full):
                    ref.put_nowait(i)
            else:
                ours.put_nowait(i)
                ref.put_nowait(i)
        assert ours.qsize() == ref.qsize()
