"""The coroutines that ``put()`` and ``get()`` of the aio queues return.

The compiled cores return a small C coroutine (``src/_await.pxd``) that runs
the fast path at its first send and otherwise hands over to the face's
Python coroutine; the pure cores return plain coroutines.  Both must behave
as coroutines do: nothing happens until awaited, the send/throw/close
protocol and its messages, the warning when never awaited, cycles collected,
nothing kept.  Both implementations (``impl``), both loops (``run``).
"""

from __future__ import annotations

import asyncio
import collections.abc
import gc
import warnings
import weakref

import pytest

from test_aio_loops import run, settle  # noqa: F401 -- the loop fixture
from test_aio_queue_overrides import refs_and_growth

ITEM = (1, "an item")  # a tuple: a StopIteration must carry it whole


def _makers(aio):
    """(label, queue, make the coroutine, what awaiting it returns) of each put and get."""
    q = aio.PriorityQueue()
    q.put_nowait(ITEM)
    room = aio.PriorityQueue(maxsize=2)
    dq = aio.DelayQueue()
    dq.put_nowait(ITEM)
    q2 = aio.PriorityQueue()
    q2.put_nowait(ITEM)
    dq2 = aio.DelayQueue()
    dq2.put_nowait(ITEM)
    return [
        ("PriorityQueue.get", q, q.get, ITEM),
        ("PriorityQueue.put", room, lambda: room.put(ITEM), None),
        ("DelayQueue.get", dq, dq.get, ITEM),
        # the cores' own get (the faces' from 3.12 is a Python coroutine)
        ("core get", q2, lambda: _core(q2).get(q2), ITEM),
        ("core delay get", dq2, lambda: _core(dq2).get(dq2), ITEM),
    ]


def _core(queue):
    """The core class that a public queue class is assembled from."""
    return next(k for k in type(queue).__mro__ if k.__name__ in ("AioQueueCore", "AioDelayCore"))


def test_nothing_is_taken_or_put_until_the_coroutine_runs(impl, run):
    async def main():
        for label, queue, make, result in _makers(impl.aio):
            before = queue.qsize()
            coro = make()
            await settle(1)
            assert queue.qsize() == before, label  # made, not awaited: nothing done
            assert await coro == result, label
            assert queue.qsize() == before + (1 if result is None else -1), label
            coro = make()
            coro.close()  # never started: closed quietly, nothing done
            assert queue.qsize() == before + (1 if result is None else -1), label

    run(main())


def test_a_task_cancelled_before_its_first_step_takes_and_puts_nothing(impl, run):
    async def main():
        for label, queue, make, _ in _makers(impl.aio):
            before = queue.qsize()
            task = asyncio.create_task(make())
            task.cancel()  # thrown in before the coroutine starts
            with pytest.raises(asyncio.CancelledError):
                await task
            assert queue.qsize() == before, label

    run(main())


def _protocol(aio):
    # what the coroutine protocol answers, step by step, as comparable values
    out = []

    def attempt(fn, *args):
        try:
            return ("value", fn(*args))
        except StopIteration as exc:
            return ("StopIteration", exc.value)
        except BaseException as exc:
            return (type(exc).__name__, str(exc))

    for i in range(5):

        def make():  # each on a queue of its own, holding an item (or room)
            label, _, maker, _ = _makers(aio)[i]
            return label, maker()

        label, coro = make()
        out.append((label, "fresh send(1)", attempt(coro.send, 1)))  # stays fresh
        out.append((label, "send(None)", attempt(coro.send, None)))  # the result, at once
        out.append((label, "again", attempt(coro.send, None)))
        out.append((label, "throw when done", attempt(coro.throw, KeyError("k"))))
        out.append((label, "close when done", attempt(coro.close)))
        label, coro = make()
        out.append((label, "fresh throw", attempt(coro.throw, KeyError("k"))))
        out.append((label, "after throw", attempt(coro.send, None)))
        label, coro = make()
        out.append((label, "throw a type", attempt(coro.throw, ValueError)))
        label, coro = make()
        out.append((label, "close", attempt(coro.close)))
        out.append((label, "after close", attempt(coro.send, None)))
        label, coro = make()
        out.append((label, "iter", attempt(lambda: next(coro.__await__()))))
        label, coro = make()
        out.append(
            (label, "is a coroutine", asyncio.iscoroutine(coro), isinstance(coro, collections.abc.Coroutine))
        )
        coro.close()
    return out


def test_the_coroutine_protocol_is_a_coroutine_s_in_both_implementations(both, run):
    c, py = both

    async def main():
        return _protocol(c.aio), _protocol(py.aio)

    compiled, pure = run(main())
    assert compiled == pure
    assert ("PriorityQueue.get", "send(None)", ("StopIteration", ITEM)) in compiled
    assert ("DelayQueue.get", "iter", ("StopIteration", ITEM)) in compiled
    assert ("PriorityQueue.get", "fresh throw", ("KeyError", "'k'")) in compiled


def test_a_coroutine_driven_by_hand_waits_and_takes_as_a_task_would(impl, run):
    async def main():
        q = impl.aio.PriorityQueue()
        coro = q.get()
        waiter = coro.send(None)  # empty: it parks a future and yields it
        assert isinstance(waiter, asyncio.Future) and list(q._getters) == [waiter]
        q.put_nowait(ITEM)
        assert waiter.done()
        with pytest.raises(StopIteration) as stop:
            coro.send(None)
        assert stop.value.value == ITEM and q.empty()
        coro = q.get()
        coro.send(None)
        q.put_nowait(ITEM)  # woken, then cancelled: the item stays, the wake-up is passed on
        with pytest.raises(asyncio.CancelledError):
            coro.throw(asyncio.CancelledError())
        assert q.qsize() == 1 and not q._getters
        with pytest.raises(RuntimeError, match="cannot reuse already awaited coroutine"):
            coro.send(None)
        coro = q.get()  # an item there: returns at once
        with pytest.raises(StopIteration):
            coro.send(None)
        coro = q.get()
        coro.send(None)
        coro.close()  # closed while waiting: leaves the line
        assert not q._getters
        coro.close()

    run(main())


def test_a_coroutine_never_awaited_warns_as_a_coroutine_does(impl):
    for label, _, make, _ in _makers_outside_a_loop(impl.aio):
        coro = make()
        with pytest.warns(RuntimeWarning, match="was never awaited"):
            del coro
            gc.collect()


def test_every_coroutine_never_awaited_warns_also_among_awaited_ones(impl, run):
    # the compiled cores reuse the objects of finished puts and gets (a
    # freelist): a reused one that is never awaited still warns, each time
    async def main():
        q = impl.aio.PriorityQueue()
        warned = 0
        for i in range(40):
            if i % 3 == 0:
                await q.put(i)  # finished ones go back to the freelist
                await q.get()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                coro = q.put(i) if i % 2 else q.get()
                del coro
            warned += sum("was never awaited" in str(w.message) for w in caught)
        return warned, q.qsize()

    assert run(main()) == (40, 0)


def _makers_outside_a_loop(aio):
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_in_loop(aio))
    finally:
        loop.close()


async def _in_loop(aio):
    return _makers(aio)


def test_a_cycle_through_an_unstarted_put_is_collected(impl):
    class Job:
        pass

    q = impl.aio.PriorityQueue()
    job = Job()
    job.coro = q.put(job)  # the item holds its own put coroutine
    gone = weakref.ref(job)
    del job
    with pytest.warns(RuntimeWarning, match="was never awaited"):
        gc.collect()
    # The warning names the coroutine as its source, so while pytest holds the
    # record the coroutine (and through its frame, the job) is resurrected:
    # gone only once the record is.  Collectors before 3.15 cleared the weak
    # reference of such a resurrected object anyway, which hid that.
    gc.collect()
    assert gone() is None and q.empty()


def test_waiting_cancelled_and_closed_coroutines_keep_nothing(impl):
    # the C coroutine's every path (done at once, waiting then done, thrown
    # into while waiting, closed while waiting or before starting) leaks nothing
    item = (1, "an item")

    async def cycle(q, dq, n):
        for _ in range(n):
            getter = asyncio.ensure_future(q.get())  # waits: the slow coroutine
            await asyncio.sleep(0)
            await q.put(item)
            assert await getter == item
            getter = asyncio.ensure_future(q.get())
            await asyncio.sleep(0)
            getter.cancel()  # thrown into while waiting
            await asyncio.sleep(0)
            coro = q.get()
            coro.send(None)
            coro.close()  # closed while waiting
            q.get().close()  # closed before starting
            dq_getter = asyncio.ensure_future(dq.get())
            await asyncio.sleep(0)
            dq.put_nowait(item)
            assert await dq_getter == item

    cycle.item = item
    counts, after, grown = refs_and_growth(impl, cycle, 50, 100, 2000)
    assert after == counts
    assert grown < 64 * 1024, grown  # 2,000 rounds: nothing kept per round
