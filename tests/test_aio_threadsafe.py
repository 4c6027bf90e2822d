"""Other threads feeding the aio queues: ``aio.PriorityQueue.put_threadsafe``.

A put from another thread lands in the queue's inbox at once (``qsize``
counts it) and wakes the loop only when a ``get`` waits; after the loop
closed it raises ``RuntimeError`` and keeps nothing.  The lost-wake-up race
(a getter parking while a thread puts) is stressed on both loops; every
wait has a timeout, so a lost wake-up fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import time

import pytest

from clocks import VirtualClockLoop
from dq_core._aiowaiting import LOOP_CLOSED
from dq_core.aio import QueueShutDown
from helpers import run_together, traced_growth
from test_aio_loops import run, settle, until_waiting  # noqa: F401 -- the loop fixture


class CountingLoop(asyncio.SelectorEventLoop):
    """The default loop, counting its thread-side wake-ups (``call_soon_threadsafe``)."""

    wakeups = 0

    def call_soon_threadsafe(self, callback, *args, context=None):
        self.wakeups += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def on_counting_loop(coro):
    loop = CountingLoop()
    try:
        return loop.run_until_complete(coro), loop.wakeups
    finally:
        loop.close()


def in_thread(fn, *args, timeout=10):
    """Run ``fn(*args)`` in a fresh thread, wait for it, return its result or raise its exception."""
    out: list = []

    def target():
        try:
            out.append((True, fn(*args)))
        except BaseException as exc:  # handed back to the test's thread
            out.append((False, exc))

    t = threading.Thread(target=target)
    t.start()
    t.join(timeout)
    assert out, "the thread hung"
    ok, value = out[0]
    if not ok:
        raise value
    return value


# -- putting -------------------------------------------------------------------------


def test_items_put_from_a_thread_come_out_in_order(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        in_thread(lambda: [q.put_threadsafe((p, f"x{p}")) for p in (5, 1, 4, 2, 3)])
        assert q.qsize() == 5 and not q.empty()
        q._check()
        return [(await q.get())[0] for _ in range(5)], q.qsize(), q.empty()

    assert run(main()) == ([1, 2, 3, 4, 5], 0, True)


def test_a_queue_not_bound_yet_takes_thread_puts(impl, run):
    q = impl.aio.PriorityQueue()
    in_thread(q.put_threadsafe, 2)
    in_thread(q.put_threadsafe, 1)
    assert q.qsize() == 2 and "_inbox[2]" in repr(q)

    async def main():
        return [await q.get(), q.get_nowait()]

    assert run(main()) == [1, 2]


def test_get_many_and_get_nowait_take_thread_puts_in(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        q.put_nowait(3)
        in_thread(lambda: [q.put_threadsafe(x) for x in (2, 4, 1)])
        first = q.get_nowait()
        return first, q.get_many()

    assert run(main()) == (1, [2, 3, 4])


def test_a_parked_getter_is_woken_by_a_thread_put(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)
        in_thread(q.put_threadsafe, "hello")
        return await asyncio.wait_for(getter, 5)

    assert run(main()) == "hello"


def test_the_loop_is_woken_only_when_a_getter_waits(impl):
    async def main():
        q = impl.aio.PriorityQueue()
        loop = asyncio.get_running_loop()
        in_thread(lambda: [q.put_threadsafe(i) for i in range(1000)])  # nobody waits
        assert loop.wakeups == 0
        assert [q.get_nowait() for _ in range(1000)] == list(range(1000))
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)
        in_thread(lambda: [q.put_threadsafe(i) for i in range(1000)])  # one wakes, the rest wait
        assert loop.wakeups == 1
        assert await asyncio.wait_for(getter, 5) == 0
        assert q.qsize() == 999
        return loop.wakeups

    assert on_counting_loop(main()) == (1, 1)


def test_waiting_getters_take_one_item_each(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        getters = [asyncio.ensure_future(q.get()) for _ in range(3)]
        await until_waiting(q, getters=3)
        in_thread(q.put_threadsafe, "a")
        done, _ = await asyncio.wait(getters, timeout=5, return_when=asyncio.FIRST_COMPLETED)
        assert len(done) == 1
        in_thread(lambda: [q.put_threadsafe(x) for x in ("b", "c")])  # the other two wake too
        return sorted(await asyncio.wait_for(asyncio.gather(*getters), 5))

    assert run(main()) == ["a", "b", "c"]


def test_join_counts_thread_puts(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        q.put_nowait(1)
        in_thread(q.put_threadsafe, 2)
        q.get_nowait()
        q.task_done()  # the thread's item is put and not done: join still waits
        joined = asyncio.ensure_future(q.join())
        await settle()
        assert not joined.done()
        q.get_nowait()
        q.task_done()
        await asyncio.wait_for(joined, 5)
        in_thread(q.put_threadsafe, 3)
        joined = asyncio.ensure_future(q.join())
        await settle()
        return joined.done(), q._unfinished_tasks

    assert run(main()) == (False, 1)


# -- full, shut down, closed ---------------------------------------------------------


def test_a_full_queue_refuses_thread_puts(impl, run):
    async def main():
        q = impl.aio.PriorityQueue(maxsize=2)
        q.put_nowait(1)
        in_thread(q.put_threadsafe, 2)
        assert q.full()
        with pytest.raises(asyncio.QueueFull):
            in_thread(q.put_threadsafe, 3)
        with pytest.raises(asyncio.QueueFull):
            q.put_nowait(3)  # the thread's item counts on the loop's side too
        q.get_nowait()
        in_thread(q.put_threadsafe, 0)
        return q.qsize(), q.get_many()

    assert run(main()) == (2, [0, 2])


def test_a_shut_down_queue_refuses_thread_puts_and_delivers_the_rest(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        in_thread(lambda: [q.put_threadsafe(x) for x in (2, 1)])
        q.shutdown()
        with pytest.raises(QueueShutDown):
            in_thread(q.put_threadsafe, 3)
        got = [await q.get(), await q.get()]
        with pytest.raises(QueueShutDown):
            await q.get()
        return got

    assert run(main()) == [1, 2]


def test_an_immediate_shutdown_drops_thread_puts(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        in_thread(lambda: [q.put_threadsafe(x) for x in (2, 1)])
        q.shutdown(immediate=True)
        with pytest.raises(QueueShutDown):
            q.get_nowait()
        return q.qsize(), q._unfinished_tasks

    assert run(main()) == (0, 0)


def test_after_the_loop_closed_a_thread_put_raises_and_keeps_nothing(impl, run):
    q = impl.aio.PriorityQueue()

    async def main():
        q.put_nowait(1)
        asyncio.ensure_future(q.get())
        asyncio.ensure_future(q.get())  # parks: run() cancels it and closes the loop
        await settle()

    run(main())
    with pytest.raises(RuntimeError, match="event loop is closed"):
        in_thread(q.put_threadsafe, 2)
    assert q.qsize() == 0


def test_a_wake_up_that_fails_takes_the_item_back(impl):
    class Refusing(CountingLoop):
        refuse = False

        def call_soon_threadsafe(self, callback, *args, context=None):
            if self.refuse:
                raise RuntimeError("Event loop is closed")
            return super().call_soon_threadsafe(callback, *args, context=context)

    async def main():
        q = impl.aio.PriorityQueue()
        loop = asyncio.get_running_loop()
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)
        loop.refuse = True
        with pytest.raises(RuntimeError, match="closed"):
            in_thread(q.put_threadsafe, "lost?")
        assert q.qsize() == 0  # nothing half-done
        loop.refuse = False
        in_thread(q.put_threadsafe, "kept")  # the getter still waits, and is woken
        return await asyncio.wait_for(getter, 5)

    loop = Refusing()
    try:
        assert loop.run_until_complete(main()) == "kept"
    finally:
        loop.close()


# -- hostile items -------------------------------------------------------------------


class Grumpy:
    """Compares by ``key``; raises when compared with a Grumpy(None)."""

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        if self.key is None or other.key is None:
            raise TypeError("cannot compare")
        return self.key < other.key


def test_an_item_whose_comparison_raises_goes_to_the_exception_handler(impl, run):
    async def main():
        loop = asyncio.get_running_loop()
        seen = []
        loop.set_exception_handler(lambda loop, context: seen.append(context))
        q = impl.aio.PriorityQueue()
        q.put_nowait(Grumpy(5))
        in_thread(lambda: [q.put_threadsafe(Grumpy(k)) for k in (3, None, 1)])
        got = [q.get_nowait().key for _ in range(3)]
        q._check()
        return got, q.qsize(), q._unfinished_tasks, seen

    got, size, unfinished, seen = run(main())
    assert got == [1, 3, 5] and size == 0 and unfinished == 3
    assert len(seen) == 1 and isinstance(seen[0]["exception"], TypeError)
    assert seen[0]["item"].key is None and "put_threadsafe" in seen[0]["message"]


def test_without_a_loop_the_failed_comparison_raises(impl):
    q = impl.aio.PriorityQueue()
    q.put_nowait(Grumpy(1))
    q.put_threadsafe(Grumpy(None))
    q.put_threadsafe(Grumpy(0))
    with pytest.raises(TypeError, match="cannot compare"):
        q.get_nowait()
    assert [q.get_nowait().key, q.get_nowait().key] == [0, 1]


def test_a_comparison_may_put_from_the_loop_thread(impl, run):
    # the inbox lock is never held while items are compared: a comparison
    # calling put_threadsafe puts (the item waits for the next take-in)
    class Putting:
        def __init__(self, q, key):
            self.q, self.key = q, key

        def __lt__(self, other):
            if self.key < 99:
                self.q.put_threadsafe(Putting(self.q, 99))
            return self.key < other.key

    async def main():
        loop = asyncio.get_running_loop()
        seen = []
        loop.set_exception_handler(lambda loop, context: seen.append(context["exception"]))
        q = impl.aio.PriorityQueue()
        q.put_nowait(Putting(q, 1))
        in_thread(q.put_threadsafe, Putting(q, 2))
        got = q.get_many()
        q._check()
        later = q.get_many()
        return [x.key for x in got], {x.key for x in later}, q.qsize(), seen

    got, later, size, seen = run(main())
    assert got == [1, 2] and later == {99} and seen == []


class Reentering:
    """Compares by ``key``; the first comparison after ``arm`` calls ``q.get_nowait()``."""

    reenter = None

    def __init__(self, key):
        self.key = key

    def __lt__(self, other):
        q, Reentering.reenter = Reentering.reenter, None
        if q is not None:
            with pytest.raises(RuntimeError, match="re-entered"):
                q.get_nowait()
        return self.key < other.key


def test_a_take_in_from_a_comparison_loses_no_thread_item(impl, run):
    # a comparison re-entering get_nowait() while a thread's item waits in the
    # inbox: the take-in is refused there and the item stays for the next look
    async def main():
        loop = asyncio.get_running_loop()
        seen = []
        loop.set_exception_handler(lambda loop, context: seen.append(context))
        q = impl.aio.PriorityQueue()
        q.put_nowait(Reentering(5))
        in_thread(q.put_threadsafe, Reentering(1))
        Reentering.reenter = q
        q.put_nowait(Reentering(3))
        assert Reentering.reenter is None  # it re-entered
        got = [x.key for x in q.get_many()]
        q._check()
        return got, q.qsize(), q._unfinished_tasks, seen

    assert run(main()) == ([1, 3, 5], 0, 3, [])


@pytest.mark.parametrize("bounded", [False, True], ids=["take-in", "bounded-put"])
def test_a_thread_put_never_waits_for_the_loop_s_comparisons(impl, run, bounded):
    # A comparison runs in the loop (taking a thread's put in, or a bounded
    # put_nowait) while another thread puts: that put returns at once.  (Were
    # the inbox's lock held across the comparison, the thread would hang:
    # in_thread fails the comparison after 2 s.)
    class Probe:
        def __init__(self, q, key, probe=False):
            self.q, self.key, self.probe = q, key, probe

        def __lt__(self, other):
            if self.probe:
                self.probe = False
                in_thread(self.q.put_threadsafe, Probe(self.q, 0), timeout=2)
            return self.key < other.key

    async def main():
        loop = asyncio.get_running_loop()
        seen = []
        loop.set_exception_handler(lambda loop, context: seen.append(context["exception"]))
        q = impl.aio.PriorityQueue(maxsize=10 if bounded else 0)
        q.put_nowait(Probe(q, 3))
        probe = Probe(q, 2, probe=True)
        if bounded:
            q.put_nowait(probe)
        else:
            in_thread(q.put_threadsafe, probe)
        first = [x.key for x in q.get_many()]
        q._check()
        return first, [x.key for x in q.get_many()], seen

    if bounded:  # the put_nowait compared: the thread's item came before the get
        assert run(main()) == ([0, 2, 3], [], [])
    else:  # the take-in compared: the thread's item waits for the next one
        assert run(main()) == ([2, 3], [0], [])


# -- the race: getters parking while threads put ------------------------------------------


def test_no_wake_up_is_lost(impl, run, switch_often):
    # A consumer drains the queue and parks again and again while producer
    # threads put in small bursts: a put that slips in between the consumer's
    # last look and its parking must still wake it.  Nothing is lost.
    producers, per, burst = 4, 1500, 3

    async def main():
        q = impl.aio.PriorityQueue()
        loop = asyncio.get_running_loop()
        got = []

        def produce(p):
            for i in range(0, per, burst):
                for j in range(i, min(i + burst, per)):
                    q.put_threadsafe((j, p))
                if i % 30 == 0:
                    threading.Event().wait(0.0001)  # let the consumer catch up and park

        async def consume():
            for _ in range(producers * per):
                got.append(await asyncio.wait_for(q.get(), 5))  # a lost wake-up fails here

        consumer = asyncio.ensure_future(consume())
        await loop.run_in_executor(None, run_together, [lambda p=p: produce(p) for p in range(producers)], 30)
        await consumer
        q._check()
        return got, q.qsize()

    got, size = run(main())
    assert size == 0 and sorted(got) == sorted((j, p) for p in range(4) for j in range(1500))


def test_a_put_between_the_last_look_and_parking_wakes_the_getter(impl, run):
    # The worst moment, forced: a thread puts after the getter found the queue
    # empty and before it parks (get() looks, binds to its loop, then parks).
    class Late(impl.aio.PriorityQueue):
        armed = True

        def _get_loop(self):
            loop = super()._get_loop()
            if self.armed and self.empty():
                self.armed = False
                in_thread(self.put_threadsafe, "late")
            return loop

    async def main():
        q = Late()
        return await asyncio.wait_for(q.get(), 5)

    assert run(main()) == "late"


@pytest.mark.parametrize("kind", ["PriorityQueue", "DelayQueue"])
def test_no_wake_up_is_lost_in_ping_pong(impl, run, switch_often, kind):
    # One item at a time: the thread puts the next item right after the
    # consumer says it took the last one, that is while the consumer is on
    # its way to park again.  A put that lands after the consumer's last look
    # and before it parks, and does not wake it, is lost for good here (no
    # later put comes): wait_for fails.
    rounds = 1500

    async def main():
        q = getattr(impl.aio, kind)()
        q.get_many()  # binds it (a DelayQueue takes thread calls only once bound)
        loop = asyncio.get_running_loop()
        took = threading.Semaphore(0)

        def produce():
            for i in range(rounds):
                q.put_threadsafe(i)
                assert took.acquire(timeout=5), "the consumer stalled"

        producer = loop.run_in_executor(None, produce)
        got = []
        for _ in range(rounds):
            got.append(await asyncio.wait_for(q.get(), 2))
            took.release()
        await producer
        q._check()
        return got

    assert run(main()) == list(range(rounds))


def test_a_bound_is_kept_against_loop_and_thread_puts(impl, run, switch_often):
    # put_nowait in the loop and put_threadsafe in threads race for the last
    # slots: the queue never holds more than maxsize, and every accepted item
    # comes out
    async def main():
        q = impl.aio.PriorityQueue(maxsize=5)
        accepted = []
        lock = threading.Lock()

        def produce(p):
            for i in range(2000):
                try:
                    q.put_threadsafe((i, p))
                except asyncio.QueueFull:
                    continue
                with lock:
                    accepted.append((i, p))

        got, worst = [], 0
        loop = asyncio.get_running_loop()
        threads = loop.run_in_executor(None, run_together, [lambda p=p: produce(p) for p in range(3)], 30)
        i = 0
        while not threads.done() or not q.empty():
            worst = max(worst, q.qsize())
            try:
                q.put_nowait((i, -1))
                accepted.append((i, -1))
            except asyncio.QueueFull:
                pass
            i += 1
            worst = max(worst, q.qsize())
            got.extend(q.get_many(2))
            await asyncio.sleep(0)
        await threads
        return worst, sorted(got) == sorted(accepted)

    worst, same = run(main())
    assert worst <= 5 and same


# -- aio.DelayQueue's *_threadsafe calls -------------------------------------------------


def test_delay_queue_thread_calls_wake_the_loop_only_for_a_waiting_get(impl):
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()  # binds it
        loop = asyncio.get_running_loop()
        futures = in_thread(lambda: [dq.put_threadsafe(i) for i in range(100)])
        assert loop.wakeups == 0 and {f._state for f in futures} == {"PENDING"}  # (done() would wake)
        assert dq.get_nowait() == 0  # the loop takes the calls in when it looks
        assert [f.result(0) for f in futures] == sorted(f.result(0) for f in futures)
        assert dq.get_many() == list(range(1, 100))
        getter = asyncio.ensure_future(dq.get())
        await until_waiting(dq, getters=1)
        in_thread(lambda: [dq.put_threadsafe(i) for i in range(100, 200)])
        assert loop.wakeups == 1
        assert await asyncio.wait_for(getter, 5) == 100
        return loop.wakeups, len(dq)

    assert on_counting_loop(main()) == ((1, 99), 1)


def test_waiting_on_a_thread_call_s_future_wakes_the_loop(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()
        loop = asyncio.get_running_loop()

        def producer():
            handle = dq.put_threadsafe("x", 60).result(5)  # nobody gets: the wait wakes the loop
            other = dq.put_threadsafe("y", 60)
            done, _ = concurrent.futures.wait([other], timeout=5)
            assert done == {other}
            return handle, dq.cancel_threadsafe(handle).result(5), dq.cancel_threadsafe(handle).result(5)

        handle, first, second = await loop.run_in_executor(None, producer)
        return len(dq), first, second, isinstance(handle, int)

    assert run(main()) == (1, True, False, True)


def on_virtual_clock(coro, now=1000.0):
    """Run ``coro`` on the default loop on a virtual clock that only the test moves."""
    loop = VirtualClockLoop(now, jump=False)
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def test_a_thread_put_s_delay_counts_from_the_call_on_the_loop_s_clock(impl):
    # the deadline is the loop's time when the thread called, plus the delay,
    # whenever the loop takes the call in and however much real time passed
    # meanwhile: on a virtual clock, exactly (never early on loop.time())
    async def main():
        loop = asyncio.get_running_loop()
        dq = impl.aio.DelayQueue()
        dq.get_many()
        fut = in_thread(dq.put_threadsafe, "x", 0.2)  # called at 1000.0
        time.sleep(0.01)  # real time passes, the loop's clock stands still
        loop.now = 1000.05  # taken in later than the call
        assert dq.get_many() == [] and fut.done()
        first = dq.next_deadline()
        fut = in_thread(dq.put_threadsafe, "y", 0.1)  # called at 1000.05
        time.sleep(0.01)
        assert dq.get_many() == [] and fut.done()
        return first, dq.next_deadline()

    assert on_virtual_clock(main()) == (1000.2, 1000.15)


def test_a_thread_put_is_never_early_on_the_loop_s_clock(impl, run):
    # the loop's clock read in the thread just before and just after the
    # call bounds the deadline (asyncio's clock is time.monotonic, uvloop's
    # its own, coarser one)
    async def main():
        loop = asyncio.get_running_loop()
        dq = impl.aio.DelayQueue()
        dq.get_many()

        def put():
            before = loop.time()
            fut = dq.put_threadsafe("x", 0.5)
            return before, fut, loop.time()

        before, fut, after = in_thread(put)
        dq.get_many()
        return before + 0.5 <= dq.next_deadline() <= after + 0.5

    assert run(main())


def test_a_thread_call_cancelled_before_the_loop_took_it_does_nothing(impl, run):
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()
        fut = in_thread(dq.put_threadsafe, "x")
        assert fut.cancel()
        return dq.get_many(), len(dq)

    assert run(main()) == ([], 0)


def test_delay_queue_thread_calls_after_the_loop_closed(impl, run):
    dq = impl.aio.DelayQueue()
    pending = []

    async def main():
        dq.get_many()
        pending.append(in_thread(dq.put_threadsafe, "queued, never taken in"))

    run(main())
    with pytest.raises(RuntimeError, match="event loop is closed"):
        in_thread(dq.put_threadsafe, "late")
    with pytest.raises(RuntimeError, match="event loop is closed"):
        pending[0].result(5)  # waiting would wake the loop: it is gone, the call is withdrawn
    assert not dq._inbox.items


def test_a_delay_queue_put_between_the_last_look_and_parking_wakes_the_getter(impl, run):
    class Late(impl.aio.DelayQueue):
        armed = True

        def _get_loop(self):
            loop = super()._get_loop()
            if self.armed and self._getters is not None and not len(self):
                self.armed = False
                in_thread(self.put_threadsafe, "late")
            return loop

    async def main():
        dq = Late()
        dq.get_many()
        dq.armed = True
        return await asyncio.wait_for(dq.get(), 5)

    assert run(main()) == "late"


def test_thread_calls_run_in_order_even_when_a_callback_gets(impl, run):
    # a done-callback of one call's Future runs in the loop and may get from
    # the queue: the calls queued after it still run after it
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()
        order = []

        def calls():
            first = dq.put_threadsafe("a")
            first.add_done_callback(lambda f: order.append(("cb", dq.get_many())))
            dq.shutdown_threadsafe()
            return first, dq.put_threadsafe("refused")

        first, refused = in_thread(calls)
        await asyncio.sleep(0.01)  # add_done_callback woke the loop
        with pytest.raises(QueueShutDown):
            refused.result(5)
        return order, first.result(0) is not None

    assert run(main()) == ([("cb", ["a"])], True)


def test_thread_paths_leak_nothing(impl, run):
    # thread puts and gets through both queues, waking and not; every
    # reference taken is given back and no memory stays behind
    item, due = (1, "payload"), "due"
    item_refs, due_refs = sys.getrefcount(item), sys.getrefcount(due)

    async def main():
        q = impl.aio.PriorityQueue()
        dq = impl.aio.DelayQueue()
        dq.get_many()
        loop = asyncio.get_running_loop()

        def produce():
            for _ in range(1_000):
                q.put_threadsafe(item)
                dq.put_threadsafe(due)
            dq.put_threadsafe(due).result(5)

        producer = loop.run_in_executor(None, produce)
        for _ in range(1_000):
            await asyncio.wait_for(q.get(), 5)
        for _ in range(1_001):
            await asyncio.wait_for(dq.get(), 5)
        await producer

    growth = traced_growth(lambda: run(main()), 2)
    assert sys.getrefcount(item) == item_refs and sys.getrefcount(due) == due_refs
    assert growth < 64 * 1024, f"{growth} bytes still allocated"


def test_thread_puts_with_equal_delays_come_out_in_call_order(impl, run):
    # deadlines are the calls' times on the loop's clock: taken in over
    # several batches, equal delays still come out first-in, first-out
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()
        got = []
        for chunk in range(5):
            in_thread(lambda c=chunk: [dq.put_threadsafe((c, i), 0.002) for i in range(60)])
            got.extend(dq.get_many())  # takes this batch in, and what came due
        while len(got) < 300:
            got.append(await asyncio.wait_for(dq.get(), 5))
        return got

    assert run(main()) == [(c, i) for c in range(5) for i in range(60)]


# -- whom a thread call wakes, and what the loop sees of the calls -----------------------


@pytest.mark.parametrize("how", ["cancel", "shutdown"])
def test_a_thread_cancel_or_shutdown_wakes_a_waiting_put(impl, run, how):
    # a put waits for room; a thread's cancel (room) or shutdown (QueueShutDown)
    # ends its wait with nobody waiting on the call's Future
    async def main():
        dq = impl.aio.DelayQueue(maxsize=1)
        handle = dq.put_nowait("far", 3600)
        putter = asyncio.ensure_future(dq.put("next"))
        await until_waiting(dq, putters=1)
        if how == "cancel":
            in_thread(dq.cancel_threadsafe, handle)
        else:
            in_thread(dq.shutdown_threadsafe)
        try:
            return isinstance(await asyncio.wait_for(putter, 2), int)
        except QueueShutDown:
            return "shut down"

    assert run(main()) == (True if how == "cancel" else "shut down")


def test_a_thread_put_does_not_wake_the_loop_for_a_waiting_put(impl):
    # a put cannot make room: with only a put waiting, it wakes nothing; a
    # cancel, which can, wakes the loop once
    async def main():
        loop = asyncio.get_running_loop()
        dq = impl.aio.DelayQueue(maxsize=1)
        handle = dq.put_nowait("far", 3600)
        putter = asyncio.ensure_future(dq.put("next"))
        await until_waiting(dq, putters=1)
        refused = in_thread(dq.put_threadsafe, "more")
        await settle()
        assert loop.wakeups == 0 and not putter.done()
        in_thread(dq.cancel_threadsafe, handle)
        await asyncio.wait_for(putter, 2)
        with pytest.raises(asyncio.QueueFull):  # taken in before the cancel: no room then
            refused.result(0)
        return loop.wakeups, len(dq)

    assert on_counting_loop(main()) == ((1, 1), 1)


def test_a_loop_shutdown_keeps_what_threads_put_before(impl, run):
    # the thread's puts came long before the shutdown: they are delivered
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()
        futures = in_thread(lambda: [dq.put_threadsafe(i) for i in range(3)])
        await settle()
        dq.shutdown()
        got = [x async for x in dq]
        return got, [f.result(0) is not None for f in futures]

    assert run(main()) == ([0, 1, 2], [True, True, True])


@pytest.mark.parametrize("look", ["len", "qsize", "empty", "full", "next_deadline"])
def test_sizes_count_what_threads_put(impl, run, look):
    async def main():
        dq = impl.aio.DelayQueue(maxsize=3)
        dq.get_many()
        in_thread(lambda: [dq.put_threadsafe(i, 60) for i in range(3)])
        return len(dq) if look == "len" else getattr(dq, look)()

    got = run(main())
    assert got == {"len": 3, "qsize": 3, "empty": False, "full": True}.get(look, got)
    assert got is not None


@pytest.mark.parametrize("late", ["cancel", "reschedule"])
def test_a_loop_call_comes_after_the_thread_calls_made_before_it(impl, run, late):
    async def main():
        dq = impl.aio.DelayQueue()
        handle = dq.put_nowait("x", 60)
        first = in_thread(dq.cancel_threadsafe, handle)  # made first: it cancels
        second = dq.cancel(handle) if late == "cancel" else dq.reschedule(handle, 1)
        return first.result(0), second

    assert run(main()) == (True, False)


def test_a_shutdown_from_a_callback_keeps_the_puts_made_before_it(impl, run):
    # a done-callback of one thread call shuts the queue down while the loop
    # carries out a batch: the calls made before the shutdown (the rest of
    # the batch) are carried out first, those made after it are refused
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()
        futures = {}

        def calls():
            futures["a"] = dq.put_threadsafe("a")
            futures["b"] = dq.put_threadsafe("b")

        in_thread(calls)
        futures["a"].add_done_callback(lambda f: dq.shutdown())  # wakes the loop: it runs
        await settle()
        refused = in_thread(dq.put_threadsafe, "c")
        got = [x async for x in dq]
        with pytest.raises(QueueShutDown):
            refused.result(5)
        return got, futures["b"].exception(0)

    assert run(main()) == (["a", "b"], None)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio.eager_task_factory is 3.12+")
def test_an_eager_get_started_by_a_callback_parks(impl):
    # A done-callback of a thread call's Future runs while the loop carries
    # the calls out; it starts a get that runs at once (eager task factory)
    # while another thread's call waits in the inbox.  The get must park
    # (the take-in under way listens for it when it ends), not loop on
    # get_nowait: each look is counted, and a spin fails after 1000.  (The
    # default loop only: uvloop's create_task does not take asyncio's eager
    # task factory.)
    class Counting(impl.aio.DelayQueue):
        looks = 0

        def _take_calls(self, finish=False):
            self.looks += 1
            if self.looks > 1000:
                raise AssertionError("the get spins")
            return super()._take_calls(finish)

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_task_factory(asyncio.eager_task_factory)
        dq = Counting()
        dq.get_many()
        started = []

        def callback(fut):
            in_thread(dq.put_threadsafe, "second", 0.05)
            started.append(loop.create_task(dq.get()))

        first = in_thread(dq.put_threadsafe, "first", 60)
        first.add_done_callback(callback)  # wakes the loop, which takes the call in
        await settle()
        assert started and not started[0].done()
        return await asyncio.wait_for(started[0], 2), dq.looks < 10

    assert asyncio.run(main()) == ("second", True)


def test_a_take_in_carries_out_the_calls_queued_when_it_starts(impl, run):
    # a call made while the loop carries out a batch (here by a callback of
    # the batch's own Future) waits for the next look: a thread that keeps
    # calling never keeps one take-in going
    async def main():
        dq = impl.aio.DelayQueue()
        dq.get_many()
        later = []
        first = in_thread(dq.put_threadsafe, "a")
        first.add_done_callback(lambda f: later.append(dq.put_threadsafe("b")))
        await settle()  # the loop took "a" in, woken by add_done_callback
        assert first.done() and later and later[0]._state == "PENDING"
        return dq.get_many(), later[0].done()

    assert run(main()) == (["a", "b"], True)


def test_a_call_that_raises_a_base_exception_settles_its_future(impl, run):
    # KeyboardInterrupt out of a thread call: its Future holds it (never left
    # running), it goes on up in the loop, and the calls after it stay queued
    class Interrupting(impl.aio.DelayQueue):
        def put_at_nowait(self, item, deadline):
            if item == "boom":
                raise KeyboardInterrupt
            return super().put_at_nowait(item, deadline)

    async def main():
        dq = Interrupting()
        dq.get_many()
        boom, after = in_thread(lambda: (dq.put_threadsafe("boom"), dq.put_threadsafe("after")))
        with pytest.raises(KeyboardInterrupt):
            dq.get_many()
        assert boom._state == "FINISHED" and after._state == "PENDING"
        return type(boom.exception(0)).__name__, dq.get_many(), after.done()

    assert run(main()) == ("KeyboardInterrupt", ["after"], True)


class ClosingLoop(asyncio.SelectorEventLoop):
    """A loop that closes "between" a thread's look at is_closed() and its wake-up.

    With ``closed``, ``call_soon_threadsafe`` refuses with asyncio's own words
    and ``is_closed()`` says True, except at the first look (``closing``).
    """

    closing = closed = False

    def is_closed(self):
        if self.closing:
            self.closing = False
            return False
        return super().is_closed() or self.closed

    def call_soon_threadsafe(self, callback, *args, context=None):
        if self.closed:
            raise RuntimeError("Event loop is closed")
        return super().call_soon_threadsafe(callback, *args, context=context)


@pytest.mark.parametrize("kind", ["PriorityQueue", "DelayQueue"])
def test_a_loop_closing_meanwhile_raises_the_one_message(impl, kind):
    async def main():
        loop = asyncio.get_running_loop()
        q = getattr(impl.aio, kind)()
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)
        loop.closing = loop.closed = True
        with pytest.raises(RuntimeError) as caught:
            in_thread(q.put_threadsafe, "late")
        loop.closed = False
        getter.cancel()
        return str(caught.value), q.qsize()

    loop = ClosingLoop()
    try:
        assert loop.run_until_complete(main()) == (LOOP_CLOSED, 0)
    finally:
        loop.closed = False
        loop.close()


def test_a_queue_that_took_thread_puts_in_is_bound_to_that_loop(impl, run):
    # its consumer never waited, but took a thread's item in: after that
    # loop closed, put_threadsafe raises and keeps nothing
    q = impl.aio.PriorityQueue()

    async def main():
        in_thread(q.put_threadsafe, 1)
        return q.get_nowait()

    assert run(main()) == 1
    with pytest.raises(RuntimeError, match="event loop is closed"):
        in_thread(q.put_threadsafe, 2)
    assert q.qsize() == 0


def test_a_queue_whose_loop_closed_serves_the_next_loop(impl, run):
    # bound to a loop that is closed now: refused from threads until a new
    # loop waits on the queue or takes its thread items in, then bound to it
    q = impl.aio.PriorityQueue()

    async def first():
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)  # binds q to this loop
        in_thread(q.put_threadsafe, 1)
        return await asyncio.wait_for(getter, 2)

    async def second():
        getter = asyncio.ensure_future(q.get())
        await until_waiting(q, getters=1)  # binds q to this loop
        in_thread(q.put_threadsafe, 2)
        got = await asyncio.wait_for(getter, 2)
        in_thread(q.put_threadsafe, 3)  # nobody waits: still in the inbox at the close
        return got

    async def third():
        got = q.get_nowait()  # takes the thread's item in: binds q to this loop
        in_thread(q.put_threadsafe, 4)
        return got, q.get_nowait(), q.qsize()

    assert run(first()) == 1
    with pytest.raises(RuntimeError, match="event loop is closed"):
        in_thread(q.put_threadsafe, 0)
    assert run(second()) == 2
    assert run(third()) == (3, 4, 0)


def test_a_delay_queue_whose_loop_closed_serves_the_next_loop(impl, run):
    # its timer and waiters went with the closed loop; a call queued for it
    # and never carried out settles with RuntimeError; its items stay
    dq = impl.aio.DelayQueue()

    async def first():
        dq.put_nowait("far", 3600)
        getter = asyncio.ensure_future(dq.get())
        await until_waiting(dq, getters=1)  # binds dq, arms its timer on this loop
        in_thread(dq.put_threadsafe, "now")
        got = await asyncio.wait_for(getter, 2)
        return got, in_thread(dq.put_threadsafe, "late")  # nobody waits: still queued

    async def second():
        getter = asyncio.ensure_future(dq.get())
        await until_waiting(dq, getters=1)
        in_thread(dq.put_threadsafe, "next")
        return await asyncio.wait_for(getter, 2), len(dq)

    got, late = run(first())
    assert got == "now"
    assert run(second()) == ("next", 1)
    with pytest.raises(RuntimeError, match="event loop is closed"):
        late.result(0)


@pytest.mark.parametrize("override", ["full", "qsize"])
def test_put_threadsafe_asks_a_subclass_s_full(impl, run, override):
    class Small(impl.aio.PriorityQueue):
        if override == "full":

            def full(self):
                return self.qsize() >= 2
        else:

            def qsize(self):
                return super().qsize() * 2  # full at 1 item with maxsize 2

    async def main():
        q = Small(maxsize=0 if override == "full" else 2)
        in_thread(q.put_threadsafe, 1)
        if override == "full":
            in_thread(q.put_threadsafe, 2)
        with pytest.raises(asyncio.QueueFull):
            in_thread(q.put_threadsafe, 3)
        return q.get_many()

    assert run(main()) == ([1, 2] if override == "full" else [1])


def test_a_subclass_s_full_is_asked_under_the_inbox_s_lock(impl, run):
    # the loop's put_nowait asks full(), then pushes: a thread's put between
    # the two must not overfill the queue (it waits for the look, then finds
    # the queue full)
    class Small(impl.aio.PriorityQueue):
        racing = None

        def full(self):
            answer = self.qsize() >= 2
            racer = self.racing
            if racer is not None and threading.current_thread() is not racer:
                self.racing = None
                racer.start()
                racer.join(0.3)  # it waits for our lock: it cannot put before our push
            return answer

    async def main():
        q = Small()
        q.put_nowait(1)
        outcome = []

        def race():
            try:
                q.put_threadsafe(2)
                outcome.append("put")
            except asyncio.QueueFull:
                outcome.append("full")

        racer = q.racing = threading.Thread(target=race)
        q.put_nowait(3)
        racer.join(5)
        return outcome, q.qsize(), sorted(q.get_many())

    assert run(main()) == (["full"], 2, [1, 3])


def test_a_take_in_interrupted_keeps_every_item(impl, run):
    # KeyboardInterrupt out of a comparison while the loop takes thread puts
    # in: what it pushed stays, the rest (a failed one too) go back in order
    class Key:
        interrupt = False

        def __init__(self, key):
            self.key = key

        def __lt__(self, other):
            if self.key is None or other.key is None:
                raise TypeError("cannot compare")
            if Key.interrupt and 4 in (self.key, other.key):
                Key.interrupt = False
                raise KeyboardInterrupt
            return self.key < other.key

    async def main():
        loop = asyncio.get_running_loop()
        seen = []
        loop.set_exception_handler(lambda loop, context: seen.append(context["item"].key))
        q = impl.aio.PriorityQueue(maxsize=6)
        q.put_nowait(Key(2))
        in_thread(lambda: [q.put_threadsafe(Key(k)) for k in (3, None, 4, 1)])
        Key.interrupt = True
        with pytest.raises(KeyboardInterrupt):
            q.get_many()
        size, full = q.qsize(), q.full()
        q._check()
        return size, full, [x.key for x in q.get_many()], seen, q._unfinished_tasks

    assert run(main()) == (5, False, [1, 2, 3, 4], [None], 4)
