"""Many threads on one PriorityQueue, DelayQueue or ItemHeap (issue #17).

Written for a free-threaded build (3.14t), where no GIL makes a compiled
method atomic and these tests are where a missing lock or critical section
shows (a crash, a lost or doubled item, broken invariants); on a GIL build
the switch interval is cut so that threads still interleave between and,
for the pure twins, inside the methods.  Each test starts its threads
together, finishes in well under a second here, and then checks
conservation (every item taken exactly once, or still held) and ``_check()``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from dq_core import Empty
from helpers import run_together

pytestmark = pytest.mark.usefixtures("switch_often")

THREADS = 4
PER_THREAD = 1500
JOIN_TIMEOUT = 60.0


def start_together(*targets):
    """Run every target in its own thread, started at once; re-raise the first error."""
    run_together(targets, JOIN_TIMEOUT)


def assert_unlocked(q):
    q._lock()  # would block (the test would hang) if a lock had leaked
    q._unlock()


# -- the lock ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["PriorityQueue", "DelayQueue"])
def test_the_lock_excludes_and_hands_over(impl, kind):
    # Every thread waits for the lock most of the time: the hand-over path.
    q = getattr(impl, kind)()
    count = [0]

    def bump():
        for _ in range(300):
            q._lock()
            try:
                n = count[0]
                time.sleep(0)  # let another thread try the lock now
                count[0] = n + 1
            finally:
                q._unlock()

    start_together(*[bump] * THREADS)
    assert count[0] == 300 * THREADS
    assert_unlocked(q)


@pytest.mark.parametrize("kind", ["PriorityQueue", "DelayQueue"])
def test_unlocking_a_free_lock_raises_and_breaks_nothing(impl, kind):
    q = getattr(impl, kind)()
    with pytest.raises(RuntimeError, match="release unlocked lock"):
        q._unlock()
    q._lock()
    q._unlock()
    with pytest.raises(RuntimeError, match="release unlocked lock"):
        q._unlock()
    q.put_nowait((1, "a")) if kind == "PriorityQueue" else q.put((1, "a"))
    assert q.get_nowait() == (1, "a")
    assert_unlocked(q)


# -- PriorityQueue -------------------------------------------------------------------------


def test_priority_queue_many_producers_and_consumers(impl):
    q = impl.PriorityQueue()
    taken = [[] for _ in range(THREADS)]
    stop = threading.Event()

    def producer(t):
        def run():
            for i in range(PER_THREAD):
                q.put((i % 97, t, i))

        return run

    def consumer(t):
        def run():
            while len(taken[t]) < PER_THREAD:
                try:
                    taken[t].append(q.get(timeout=0.05))
                except Empty:
                    pass

        return run

    def reader():
        # the paths that take no lock, and maxsize replaced under them
        while not stop.is_set():
            q.qsize(), q.empty(), q.full(), len(q.queue), q.queue[:1], list(q.queue)[:1], repr(q)
            q.maxsize = 0 if q.maxsize else 10**9

    readers = threading.Thread(target=reader, daemon=True)
    readers.start()
    try:
        start_together(*[producer(t) for t in range(THREADS)], *[consumer(t) for t in range(THREADS)])
    finally:
        stop.set()
        readers.join(10)
    got = Counter(x for part in taken for x in part)
    assert got == Counter((i % 97, t, i) for t in range(THREADS) for i in range(PER_THREAD))
    assert q.qsize() == 0 and q.unfinished_tasks == THREADS * PER_THREAD
    q._heap._check()
    assert_unlocked(q)


def test_priority_queue_each_consumer_sees_its_own_order(impl):
    # One thread's successive gets never go backwards while no put runs
    # between them: fill first, then drain from many threads.
    q = impl.PriorityQueue()
    for i in range(THREADS * PER_THREAD):
        q.put_nowait((i * 7919 % 1000, i))
    taken = [[] for _ in range(THREADS)]

    def drain(t):
        def run():
            while True:
                try:
                    taken[t].append(q.get_nowait())
                except Empty:
                    return

        return run

    start_together(*[drain(t) for t in range(THREADS)])
    for part in taken:
        assert part == sorted(part)
    assert sorted(x for part in taken for x in part) == sorted(
        (i * 7919 % 1000, i) for i in range(THREADS * PER_THREAD)
    )
    q._heap._check()


# -- DelayQueue ----------------------------------------------------------------------------


def test_delay_queue_many_producers_consumers_cancels_and_reschedules(impl):
    dq = impl.DelayQueue()
    cancelled = [[] for _ in range(THREADS)]
    taken = [[] for _ in range(THREADS)]
    stop = threading.Event()

    def producer(t):
        def run():
            for i in range(PER_THREAD):
                h = dq.put((t, i), -((i * 31) % 7) / 1000)  # due at once
                if i % 5 == 0 and dq.cancel(h):
                    cancelled[t].append((t, i))
                elif i % 7 == 0:
                    dq.reschedule(h, -0.5)  # False if a consumer got it first

        return run

    def consumer(t):
        def run():
            n = 0
            while not stop.is_set():
                if n % 3 == 0:
                    got = dq.get_many(16)
                else:
                    try:
                        got = [dq.get(timeout=0.01) if n % 3 == 1 else dq.get_nowait()]
                    except Empty:
                        got = []
                taken[t].extend(got)
                n += 1

        return run

    def reader():
        # repr read the length and the head apart once: emptied in between, it raised
        while not stop.is_set():
            dq.qsize(), len(dq), dq.next_deadline(), repr(dq)
            dq.maxsize = 0 if dq.maxsize else 10**9
            dq._now()

    def produce_then_stop():
        # stop is set however this ends: a producer's error (or a queue that
        # never drains) fails the test with its own message, never hangs it
        try:
            start_together(*[producer(t) for t in range(THREADS)])
            end = time.monotonic() + 30
            while len(dq) and time.monotonic() < end:  # the consumers drain what is left
                time.sleep(0.001)
        finally:
            stop.set()

    start_together(produce_then_stop, reader, *[consumer(t) for t in range(THREADS)])
    got = Counter(x for part in taken for x in part)
    gone = Counter(x for part in cancelled for x in part)
    assert max(got.values()) == 1 and not (set(got) & set(gone))  # nothing twice
    assert got + gone == Counter((t, i) for t in range(THREADS) for i in range(PER_THREAD))
    assert len(dq) == 0
    dq._check()


# -- ItemHeap: not thread-safe, but never broken by threads --------------------------------


class Slow:
    """An item whose comparison may let other threads run mid-sift."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        if self.key % 13 == 0:
            time.sleep(0)
        return self.key < other.key

    def __repr__(self):
        return f"Slow({self.key})"


def test_item_heap_misused_from_threads_loses_nothing(impl):
    heap = impl.ItemHeap()
    pushed = [[] for _ in range(THREADS)]
    popped = [[] for _ in range(THREADS)]
    cleared = []
    refused = Counter()

    def hammer(t):
        def run():
            for i in range(PER_THREAD // 3):
                item = Slow(t * PER_THREAD + i)
                try:
                    heap.push(item)
                    pushed[t].append(item)
                except RuntimeError as exc:  # another thread was mid-operation
                    assert "re-entered" in str(exc)
                    refused["push"] += 1
                try:
                    if i % 3:
                        popped[t].append(heap.pop())
                    else:
                        heap.peek(), heap.snapshot()[:1], len(heap), bool(heap)
                except IndexError:
                    pass
                except RuntimeError as exc:
                    assert "re-entered" in str(exc)
                    refused["pop"] += 1
                if i % 97 == 0:
                    try:
                        cleared.extend(heap.clear())
                    except RuntimeError as exc:
                        assert "re-entered" in str(exc)

        return run

    start_together(*[hammer(t) for t in range(THREADS)])
    heap._check()
    left = heap.snapshot()
    ids = Counter(id(x) for x in [*left, *cleared, *(x for p in popped for x in p)])
    assert max(ids.values()) == 1  # nothing came out twice
    assert set(ids) == {id(x) for p in pushed for x in p}  # nothing lost
