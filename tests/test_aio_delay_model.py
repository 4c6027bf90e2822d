"""aio.DelayQueue against a plain model, on an event loop with a fake clock.

``VirtualClockLoop(jump=False)`` is asyncio's own loop with ``time()`` read
from a number the test moves forward, so timers fire exactly when the model
says the clock reached them, and never because real time passed.  Hypothesis drives
puts, cancels, reschedules, ``get_nowait``/``get_many``, getter tasks that
are started and cancelled, and clock advances; after each step the loop
runs until idle and the queue must agree with the model:

- every item a getter received was due when it received it, and was the
  earliest (deadline, then first-in) among the due items at that moment;
- no getter is left waiting while a due item is held (each due item goes
  to a waiter; none is stranded by a cancelled or timed-out waiter);
- nothing is lost or duplicated: at the end, the items received plus those
  left equal the items put minus the ones cancelled;
- the invariants of ``_check`` (one timer, armed no later than the head,
  only while someone waits).
"""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from clocks import VirtualClockLoop
from dq_core.aio import QueueEmpty

DELAYS = st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.0, 2.5, -1.0, float("inf")])
STEPS = st.sampled_from([0.0, 0.25, 0.5, 1.0, 3.0])


class DelayQueueModel(RuleBasedStateMachine):
    DelayQueue: type = None  # set per implementation below

    def __init__(self):
        super().__init__()
        self.loop = VirtualClockLoop(1000.0, jump=False)
        self.dq = self.loop.run_until_complete(self._new())
        self.model = {}  # handle -> [deadline, seq, item]
        self.seq = itertools.count()
        self.items = itertools.count()
        self.getters = []  # tasks of dq.get()
        self.seen = set()  # getter tasks already accounted for
        self.received = []
        self.cancelled_items = []
        self.unsettled = False  # a getter was cancelled and the loop has not run since

    async def _new(self):
        dq = self.DelayQueue()
        dq.get_many()  # bind it to the loop
        return dq

    def do(self, fn, *args):
        async def call():
            return fn(*args)

        return self.loop.run_until_complete(call())

    def settle(self):
        async def idle():
            for _ in range(1000):
                await asyncio.sleep(0)
                if not self.loop.busy():
                    return
            raise AssertionError("the loop never went idle")

        self.loop.run_until_complete(idle())
        self.unsettled = False
        now = self.loop.now
        done_now = [g for g in self.getters if g.done() and g not in self.seen]
        got = []
        for g in done_now:
            self.seen.add(g)
            if not g.cancelled():
                got.append(g.result())
        if got:
            # the earliest due items, as many as were handed out
            due = sorted((v for v in self.model.values() if v[0] <= now), key=lambda v: v[:2])
            expected = [v[2] for v in due[: len(got)]]
            assert sorted(got) == sorted(expected), (got, expected)
            for h in [h for h, v in self.model.items() if v[2] in got]:
                del self.model[h]
            self.received += got

    def teardown(self):
        for g in self.getters:
            g.cancel()
        self.settle()
        self.dq._check()
        left = self.do(self.dq._heap.pop_many, len(self.dq))
        assert sorted(left) == sorted(v[2] for v in self.model.values())
        n = next(self.items)
        assert sorted(self.received + left + self.cancelled_items) == list(range(n))
        self.loop.close()

    # -- rules ---------------------------------------------------------------------------

    @rule(delay=DELAYS, data=st.data(), cancel=st.booleans())
    def put(self, delay, data, cancel):
        # with ``cancel``, a waiting getter is cancelled in the same loop step,
        # so one woken by this put may be cancelled before it runs: the item
        # must then go to another waiter
        item = next(self.items)
        waiting = [g for g in self.getters if not g.done()]
        victim = data.draw(st.sampled_from(waiting)) if cancel and waiting else None

        def put_and_cancel():
            h = self.dq.put_nowait(item, delay)
            if victim is not None:
                victim.cancel()
            return h

        h = self.do(put_and_cancel)
        assert h not in self.model
        self.model[h] = [self.loop.now + delay, next(self.seq), item]
        self.settle()

    @rule(data=st.data())
    def cancel(self, data):
        handles = sorted(self.model) + [10**9]
        h = data.draw(st.sampled_from(handles))
        assert self.do(self.dq.cancel, h) is (h in self.model)
        if h in self.model:
            self.cancelled_items.append(self.model.pop(h)[2])
        self.settle()

    @precondition(lambda self: self.model)
    @rule(data=st.data(), delay=DELAYS)
    def reschedule(self, data, delay):
        h = data.draw(st.sampled_from(sorted(self.model)))
        assert self.do(self.dq.reschedule, h, delay) is True
        self.model[h][:2] = [self.loop.now + delay, next(self.seq)]
        self.settle()

    @rule()
    def get_nowait(self):
        due = sorted((v for v in self.model.values() if v[0] <= self.loop.now), key=lambda v: v[:2])
        try:
            item = self.do(self.dq.get_nowait)
        except QueueEmpty:
            assert not due
        else:
            assert due and item == due[0][2]
            self.model = {h: v for h, v in self.model.items() if v[2] != item}
            self.received.append(item)
        self.settle()

    @rule(k=st.integers(0, 3))
    def get_many(self, k):
        due = sorted((v for v in self.model.values() if v[0] <= self.loop.now), key=lambda v: v[:2])
        got = self.do(self.dq.get_many, k)
        assert got == [v[2] for v in due[:k]]
        self.model = {h: v for h, v in self.model.items() if v[2] not in got}
        self.received += got
        self.settle()

    @rule()
    def start_getter(self):
        self.getters.append(self.loop.create_task(self.dq.get()))
        self.settle()

    @precondition(lambda self: any(not g.done() for g in self.getters))
    @rule(data=st.data(), settle=st.booleans())
    def cancel_getter(self, data, settle):
        waiting = [g for g in self.getters if not g.done()]
        waiting[data.draw(st.integers(0, len(waiting) - 1))].cancel()
        if settle:
            self.settle()
        else:
            self.unsettled = True

    @rule(dt=STEPS)
    def advance(self, dt):
        self.loop.now += dt
        self.settle()

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def no_waiter_beside_a_due_item(self):
        if self.unsettled:
            return  # a step that did not let the loop run yet
        waiting = [g for g in self.getters if not g.done()]
        due = [v for v in self.model.values() if v[0] <= self.loop.now]
        assert not (waiting and due), (len(waiting), due)

    @invariant()
    def checks_and_sizes(self):
        if not self.unsettled:
            self.dq._check()
        assert len(self.dq) == len(self.model)


def test_delay_queue_model(impl):
    machine = type("Model", (DelayQueueModel,), {"DelayQueue": impl.aio.DelayQueue})
    machine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
    machine.TestCase().runTest()
