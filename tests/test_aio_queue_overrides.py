"""What put and get call, and which clock the DelayQueue reads, when user code overrides them.

The compiled cores take C paths for ``put_nowait``/``get_nowait`` inside
``put``/``get`` and for ``loop.time()``, but only where the Python call
would reach the very same code: a subclass or an instance that overrides
them, or a loop whose ``time`` is replaced (on its class, on the instance,
through ``__getattribute__``), is called as ``asyncio.Queue`` calls it.
Both implementations (``impl``), both loops (``run``) where the loop allows.
"""

from __future__ import annotations

import asyncio

import pytest

from clocks import FakeClock
from test_aio_loops import run  # noqa: F401 -- the loop fixture

FAKE_NOW = 1.0e6  # a loop clock far from the real one


def test_put_and_get_call_a_subclass_s_put_nowait_and_get_nowait(impl, run):
    log = []

    class Spy(impl.aio.PriorityQueue):
        def put_nowait(self, item):
            log.append(("put", item))
            super().put_nowait(item)

        def get_nowait(self):
            item = super().get_nowait()
            log.append(("get", item))
            return item

    async def main():
        q = Spy()
        await q.put(2)
        await q.put(1)
        return [await q.get(), await q.get()]

    assert run(main()) == [1, 2]
    assert log == [("put", 2), ("put", 1), ("get", 1), ("get", 2)]


def test_put_and_get_call_methods_set_on_the_instance(impl, run):
    log = []

    async def main():
        q = impl.aio.PriorityQueue()
        q.put_nowait(7)  # not empty: get calls get_nowait at once
        q.put_nowait = lambda item: log.append(("put", item))
        q.get_nowait = lambda: "from the instance"
        await q.put(5)
        return await q.get(), q.qsize()

    assert run(main()) == ("from the instance", 1)
    assert log == [("put", 5)]


@pytest.mark.parametrize("queue", ["PriorityQueue", "DelayQueue"])
def test_put_and_get_obey_methods_a_subclass_gets_after_use(impl, run, queue):
    # the compiled paths remember, per call site, a face type found to have
    # the core's own put_nowait/empty/get_nowait; a class changed after that
    # (here: methods set on the subclass, then deleted again) is obeyed at once
    log = []

    class Sub(getattr(impl.aio, queue)):
        pass

    def spy_put(self, item, *delay):
        log.append(("put", item))
        return super(Sub, self).put_nowait(item, *delay)

    def spy_get(self):
        item = super(Sub, self).get_nowait()
        log.append(("get", item))
        return item

    def gated(self):
        log.append("empty")
        return super(Sub, self).empty()

    async def main():
        q, other = Sub(), getattr(impl.aio, queue)()
        for _ in range(3):  # both types seen: each call site remembers the last, Sub
            await other.put(1)
            await q.put(1)
            await other.get()
            await q.get()
        Sub.put_nowait = spy_put
        Sub.get_nowait = spy_get
        if queue == "PriorityQueue":
            Sub.empty = gated
        await q.put(2)
        await other.put(3)
        got = [await q.get(), await other.get()]
        del Sub.put_nowait, Sub.get_nowait
        if queue == "PriorityQueue":
            del Sub.empty
        await q.put(4)
        return got + [await q.get()]

    assert run(main()) == [2, 3, 4]
    # asyncio's put calls put_nowait, and its get asks empty() once when an
    # item is there; DelayQueue.put adds at its deadline (no put_nowait)
    expected = [("put", 2), "empty", ("get", 2)] if queue == "PriorityQueue" else [("get", 2)]
    assert log == expected


@pytest.mark.parametrize("who", ["asyncio", "dq_core"])
def test_get_asks_an_overriding_empty_as_asyncio_does(impl, run, who):
    # asyncio's get waits while self.empty() is true and only then calls
    # get_nowait: a subclass (or an instance) that overrides empty is obeyed
    base = asyncio.PriorityQueue if who == "asyncio" else impl.aio.PriorityQueue
    log = []

    class Gated(base):  # type: ignore[valid-type, misc]
        closed = True

        def empty(self):
            log.append("empty")
            return self.closed or super().empty()

    async def main():
        q = Gated()
        q.put_nowait(1)
        getter = asyncio.ensure_future(q.get())
        await asyncio.sleep(0)
        waited = not getter.done()
        q.closed = False
        await q.put(2)  # wakes the getter, which asks empty() again
        got = await getter
        q.empty = lambda: True  # on the instance as well
        late = asyncio.ensure_future(q.get())
        await asyncio.sleep(0)
        waited_again = not late.done()
        late.cancel()
        return waited, got, waited_again, q.qsize()

    assert run(main()) == (True, 1, True, 1)
    assert log[:2] == ["empty", "empty"]


def test_delay_get_calls_an_overriding_get_nowait(impl, run):
    log = []

    class Spy(impl.aio.DelayQueue):
        def get_nowait(self):
            item = super().get_nowait()
            log.append(item)
            return item

    async def main():
        dq = Spy()
        dq.put_nowait("a")
        first = await dq.get()
        other = impl.aio.DelayQueue()
        other.put_nowait("b")
        other.get_nowait = lambda: "from the instance"
        return first, await other.get(), other.qsize()

    assert run(main()) == ("a", "from the instance", 1)
    assert log == ["a"]


def test_delay_get_passes_on_a_get_nowait_that_raises_queue_empty(impl, run):
    # an override raising QueueEmpty makes get wait, as the pure twin's try/except does
    calls = []

    class Shy(impl.aio.DelayQueue):
        def get_nowait(self):
            calls.append(1)
            if len(calls) == 1:
                raise asyncio.QueueEmpty
            return super().get_nowait()

    async def main():
        dq = Shy()
        dq.put_nowait("a")
        return await asyncio.wait_for(dq.get(), 10)  # waits, is woken: "a" is due

    assert run(main()) == "a"
    assert len(calls) == 2


class _FakeTimeLoop(asyncio.SelectorEventLoop):
    def time(self):
        return FAKE_NOW + super().time()


class _GetattributeLoop(asyncio.SelectorEventLoop):
    def __getattribute__(self, name):
        if name == "time":
            return lambda: FAKE_NOW + asyncio.SelectorEventLoop.time(self)
        return super().__getattribute__(name)


def _on(loop, coro):
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


async def _deadline_and_take(impl):
    dq = impl.aio.DelayQueue()
    dq.put_nowait("x", 5.0)
    deadline = dq.next_deadline()
    with pytest.raises(asyncio.QueueEmpty):
        dq.get_nowait()
    return deadline


@pytest.mark.parametrize("make", [_FakeTimeLoop, _GetattributeLoop], ids=["subclass", "getattribute"])
def test_delay_queue_reads_a_loop_time_its_class_overrides(impl, make):
    deadline = _on(make(), _deadline_and_take(impl))
    assert FAKE_NOW < deadline < FAKE_NOW + 1e5  # the loop's own clock, not time.monotonic()


def test_delay_queue_reads_a_loop_time_set_on_the_instance(impl):
    async def main():
        loop = asyncio.get_running_loop()
        dq = impl.aio.DelayQueue()
        dq.put_nowait("soon", 5.0)
        real = dq.next_deadline()
        loop.time = lambda: FAKE_NOW  # replaces the method on this loop only
        try:
            taken = dq.get_nowait()  # due on the replaced clock
            dq.put_nowait("later", 1.0)
            replaced = dq.next_deadline()
        finally:
            del loop.time
        return real, taken, replaced

    real, taken, replaced = _on(asyncio.new_event_loop(), main())
    assert real < FAKE_NOW / 2 and taken == "soon" and replaced == FAKE_NOW + 1.0


@pytest.mark.parametrize("how", ["time", "__getattribute__", "base time"])
def test_delay_queue_reads_a_loop_time_its_class_gets_after_use(impl, how):
    # the loop's class (or a base) changed after the queue read asyncio's own
    # clock through it (and remembered the class as unchanged)
    class Base(asyncio.SelectorEventLoop):
        pass

    class Loop(Base):
        pass

    def fake_time(self):
        return FAKE_NOW

    def fake_getattribute(self, name):
        return fake_time.__get__(self) if name == "time" else object.__getattribute__(self, name)

    target, name, value = {
        "time": (Loop, "time", fake_time),
        "__getattribute__": (Loop, "__getattribute__", fake_getattribute),
        "base time": (Base, "time", fake_time),
    }[how]

    async def main():
        dq = impl.aio.DelayQueue()
        for _ in range(3):
            dq.put_nowait("real")
            await dq.get()
        setattr(target, name, value)
        try:
            h = dq.put_nowait("soon", 5.0)
            changed = dq.next_deadline()
        finally:
            delattr(target, name)
        dq.cancel(h)
        dq.put_nowait("later", 5.0)
        return changed, dq.next_deadline()

    changed, restored = _on(Loop(), main())
    assert changed == FAKE_NOW + 5.0 and restored < FAKE_NOW / 2


def test_delay_queue_reads_time_monotonic_replaced_after_use(impl):
    # asyncio's loop.time() calls time.monotonic(): replaced after the queue
    # has read the real one (and made up its mind about it once), the new one
    # runs; put back, the real one again
    import time

    real_monotonic = time.monotonic

    async def main():
        dq = impl.aio.DelayQueue()
        for _ in range(3):
            dq.put_nowait("real")
            await dq.get()
        time.monotonic = lambda: FAKE_NOW
        try:
            h = dq.put_nowait("soon", 5.0)
            replaced = dq.next_deadline()
        finally:
            time.monotonic = real_monotonic
        dq.cancel(h)
        dq.put_nowait("later", 5.0)
        return replaced, dq.next_deadline()

    replaced, restored = _on(asyncio.new_event_loop(), main())
    assert replaced == FAKE_NOW + 5.0 and restored < FAKE_NOW / 2


class _StaticTimeLoop(asyncio.SelectorEventLoop):
    time = staticmethod(lambda: FAKE_NOW)


class _CallableTimeLoop(asyncio.SelectorEventLoop):
    time = FakeClock(FAKE_NOW)  # a plain callable object: loop.time is it, unbound


@pytest.mark.parametrize("make", [_StaticTimeLoop, _CallableTimeLoop], ids=["staticmethod", "callable"])
def test_delay_queue_calls_a_time_that_is_no_method_as_python_does(impl, make):
    # loop.time() of such a class passes no loop: the core calls it as Python would
    async def main():
        dq = impl.aio.DelayQueue()
        dq.put_nowait("a", 1.0)
        first = dq.next_deadline()
        dq.put_nowait("b", -1.0)
        return first, dq.get_nowait()

    assert _on(make(), main()) == (FAKE_NOW + 1.0, "b")


def _uvloop_class():
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        pytest.skip("uvloop is not installed")
    return uvloop.Loop


def test_delay_queue_on_uvloop_reads_a_time_set_on_the_instance_after_use(impl):
    # uvloop's clock is a method call; the queue remembers its last reading (a
    # head due by then is due now), but only while the loop reads that clock:
    # replaced by one that is behind, an item due on it by the old reading is
    # not let out early; replaced by one ahead, an item is due at once
    async def main():
        loop = asyncio.get_running_loop()
        dq = impl.aio.DelayQueue()
        for _ in range(3):
            dq.put_nowait("real")
            await dq.get()
        real = loop.time()
        loop.time = lambda: 0.0  # far behind the real clock
        try:
            dq.put_nowait("early", 1.0)  # due at 1.0: long past on the old reading
            with pytest.raises(asyncio.QueueEmpty):
                dq.get_nowait()
            loop.time = lambda: FAKE_NOW  # far ahead
            taken = dq.get_nowait()
        finally:
            del loop.time
        dq.put_nowait("later", 5.0)
        return real, taken, dq.next_deadline()

    real, taken, later = _on(_uvloop_class()(), main())
    assert taken == "early" and real < later < FAKE_NOW / 2


@pytest.mark.parametrize("how", ["time", "base time"])
def test_delay_queue_on_uvloop_reads_a_time_its_class_gets_after_use(impl, how):
    base_cls = _uvloop_class()

    class Base(base_cls):  # type: ignore[misc, valid-type]
        pass

    class Loop(Base):
        pass

    def behind(self):
        return 0.0

    target = Loop if how == "time" else Base

    async def main():
        dq = impl.aio.DelayQueue()
        for _ in range(3):
            dq.put_nowait("real")
            await dq.get()
        target.time = behind
        try:
            dq.put_nowait("early", 1.0)
            changed = dq.next_deadline()
            with pytest.raises(asyncio.QueueEmpty):
                dq.get_nowait()  # the remembered real reading no longer counts
        finally:
            del target.time
        return changed, dq.get_nowait()  # the real clock again: long due

    changed, taken = _on(Loop(), main())
    assert changed == 1.0 and taken == "early"


def refs_and_growth(impl, cycle, warm, settle, n, new_loop=asyncio.new_event_loop):
    """Run ``cycle(q, dq, k)`` on a fresh PriorityQueue and DelayQueue: warm, settle, then n rounds.

    Returns the reference counts of the item-free objects (loop, q, dq) and of
    ``cycle.item`` before and after, and the memory tracemalloc saw grow over
    the n rounds.
    """
    import gc
    import sys
    import tracemalloc

    async def main():
        loop = asyncio.get_running_loop()
        q, dq = impl.aio.PriorityQueue(), impl.aio.DelayQueue()
        await cycle(q, dq, warm)  # warm up (the loop's instance dict, caches)
        gc.collect()
        objs = (cycle.item, loop, q, dq)
        counts = [sys.getrefcount(o) for o in objs]
        tracemalloc.start()
        try:
            await cycle(q, dq, settle)
            gc.collect()
            start = tracemalloc.get_traced_memory()[0]
            await cycle(q, dq, n)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        return counts, [sys.getrefcount(o) for o in objs], grown

    return _on(new_loop(), main())


def test_the_c_paths_hold_no_reference_and_leak_nothing(impl):
    # put/get (through the core's own put_nowait/get_nowait) and the DelayQueue's
    # clock (loop.time() read in C) keep no reference to items, loop or queue
    item = (1, "an item")

    async def cycle(q, dq, n):
        for _ in range(n):
            await q.put(item)
            await q.get()
            dq.put_nowait(item)
            await dq.get()

    cycle.item = item
    counts, after, grown = refs_and_growth(impl, cycle, 100, 200, 5000)
    assert after == counts
    assert grown < 64 * 1024, grown  # 5,000 rounds of 4 calls: nothing kept per call


def test_the_uvloop_clock_path_holds_no_reference_and_leaks_nothing(impl):
    # uvloop's time() is called through the method the queue keeps for the loop
    # type, and its reading remembered: no reference to loop, queue or item
    item = (2, "an item")

    async def cycle(q, dq, n):
        for _ in range(n):
            dq.put_nowait(item)
            await dq.get()
            dq.put_nowait(item, 0.0)
            dq.get_nowait()

    cycle.item = item
    counts, after, grown = refs_and_growth(impl, cycle, 100, 200, 5000, _uvloop_class())
    assert after == counts
    assert grown < 64 * 1024, grown


class _InfiniteTimeLoop(asyncio.SelectorEventLoop):
    """A loop whose clock reads ``inf``: ``loop.time() + (-inf)`` is NaN."""

    def time(self):
        return float("inf")


@pytest.mark.parametrize("maxsize", [0, 3])
@pytest.mark.parametrize("how", ["put_nowait", "put"])
def test_delay_queue_refuses_a_nan_deadline_and_keeps_its_items(impl, maxsize, how):
    # a delay of -inf on a clock at inf sums to NaN: both cores refuse it with
    # the same ValueError before anything is held (a NaN key would sit
    # anywhere in the heap's order)
    async def main():
        dq = impl.aio.DelayQueue(maxsize)
        dq.put_nowait("a", 1.0)
        with pytest.raises(ValueError, match=r"^deadline must not be NaN \(loop.time\(\) \+ delay\)$"):
            if how == "put":
                await dq.put("nan", float("-inf"))
            else:
                dq.put_nowait("nan", float("-inf"))
        return dq.qsize(), dq.next_deadline(), dq.get_nowait()

    assert _on(_InfiniteTimeLoop(), main()) == (1, float("inf"), "a")


@pytest.mark.parametrize("override", ["full", "qsize"])
def test_a_subclass_s_full_and_qsize_are_obeyed_as_asyncio_does(impl, run, override):
    # asyncio's put and put_nowait ask self.full(), and its full() asks
    # self.qsize(): a subclass that says "never full" is never full.
    def subclass(base):
        if override == "full":

            class Sub(base):
                def full(self):
                    return False
        else:

            class Sub(base):
                def qsize(self):
                    return 0

        return Sub

    async def main(cls):
        q = cls(maxsize=1)
        await q.put(3)
        await asyncio.wait_for(q.put(1), 5)
        q.put_nowait(2)
        return [q.get_nowait() for _ in range(3)]

    theirs = run(main(subclass(asyncio.PriorityQueue)))
    assert run(main(subclass(impl.aio.PriorityQueue))) == theirs == [1, 2, 3]


def test_a_subclass_that_is_always_full_refuses_and_waits_as_asyncio_does(impl, run):
    def subclass(base):
        class Closed(base):
            closed = True

            def full(self):
                return self.closed

        return Closed

    async def main(cls):
        q = cls()
        with pytest.raises(asyncio.QueueFull):
            q.put_nowait(1)
        putter = asyncio.ensure_future(q.put(2))
        await asyncio.sleep(0.01)
        waited = not putter.done()
        q.closed = False
        q.put_nowait(1)
        q.get_nowait()  # wakes the putter, which asks full() again
        await asyncio.wait_for(putter, 5)
        return waited, q.qsize()

    theirs = run(main(subclass(asyncio.PriorityQueue)))
    assert run(main(subclass(impl.aio.PriorityQueue))) == theirs == (True, 1)


def test_a_put_nowait_override_is_obeyed_after_get_cached_the_type(impl, run):
    # The core's get remembers that a type holds its own get_nowait; put
    # must not take that for "its own put_nowait" too (on 3.10/3.11 a plain
    # await q.get() reaches the cache first).
    log = []

    class OnlyPut(impl.aio.PriorityQueue):
        def put_nowait(self, item):
            log.append(item)
            super().put_nowait(item)

    async def main():
        q = OnlyPut()
        q.put_many([1])  # no put_nowait
        first = await q.get()  # the core's get caches OnlyPut
        await q.put(2)
        await q.put(3)
        return first, [q.get_nowait(), q.get_nowait()]

    assert run(main()) == (1, [2, 3])
    assert log == [2, 3]
