"""DelayQueue: compiled and pure cores in lockstep, under bad input and hostile user code.

Single-threaded, on a fake clock: every operation runs on both queues and
must give the same result, or raise the same exception type with the same
message; after every step both pass ``_check()`` (heap order, the lock not
left held, no stray leader) and agree on size, head and repr.
"""

from __future__ import annotations

import gc

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from clocks import FakeClock
from dq_core import Full, ShutDown
from helpers import twin_ids


class BadFloat:
    """A number whose conversion raises."""

    def __float__(self):
        raise ZeroDivisionError("no float today")


class Clock(FakeClock):
    """A fake clock that can be told to misbehave on its next reading."""

    def __init__(self) -> None:
        super().__init__()
        self.next_bad: object = None  # an exception to raise, or a bad reading
        self.reenter = None  # a callable run from inside the next reading

    def __call__(self):
        bad, self.next_bad = self.next_bad, None
        if isinstance(bad, BaseException):
            raise bad
        if self.reenter is not None:
            fn, self.reenter = self.reenter, None
            fn()
        return self.now if bad is None else bad


LOST: list[BaseException] = []  # what a finaliser's put raised, but Full or ShutDown


class Item:
    """A payload that may put into its queue when it dies, and may sit in a cycle."""

    def __init__(self, ident: int, queue=None, cyclic: bool = False) -> None:
        self.ident = ident
        self.queue = queue
        if cyclic:
            self.me = self

    def __del__(self):
        q = self.queue
        if q is not None:
            try:
                q.put(("reborn", self.ident), 0, block=False)
            except (Full, ShutDown):
                pass  # the same on both sides
            except BaseException as exc:  # e.g. re-entry: it died under the lock
                LOST.append(exc)


def key(value):
    """What a result is, comparably across the two queues."""
    if isinstance(value, Item):
        return ("item", value.ident)
    if isinstance(value, list):
        return [key(v) for v in value]
    return value


def outcome(fn):
    try:
        return ("ok", key(fn()))
    except Exception as exc:
        return ("raised", type(exc), str(exc))


numbers = st.one_of(
    st.floats(-5, 50, allow_nan=False),
    st.integers(-5, 50),
    st.sampled_from(
        [float("nan"), float("inf"), float("-inf"), 2**53, 2**53 + 1, -(2**60), 10**400, 1e300, True]
    ),
    st.sampled_from(["1", None, b"x", 1j]),
    st.builds(BadFloat),
)
counts = st.one_of(st.none(), st.integers(-2, 6), st.sampled_from(["2", 2.0, 10**30]))
timeouts = st.sampled_from([None, 0, 0.0, -1, float("nan"), float("-inf"), "1", -(10**400)])


def test_compiled_and_pure_delay_queues_agree(both):
    c_impl, p_impl = both

    class Lockstep(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.clocks = (Clock(), Clock())
            self.queues = (
                c_impl.DelayQueue(maxsize=6, clock=self.clocks[0]),
                p_impl.DelayQueue(maxsize=6, clock=self.clocks[1]),
            )
            self.handles: list[object] = [-1, "h", 2**70, None]
            self.idents = 0

        def both(self, fn):
            c, p = (outcome(lambda q=q: fn(q)) for q in self.queues)
            assert c == p, (c, p)
            return c

        def items(self, kind):
            self.idents += 1
            if kind == "int":
                return (self.idents, self.idents)
            return tuple(
                Item(self.idents, q if kind != "plain" else None, kind == "cyclic") for q in self.queues
            )

        # -- operations ---------------------------------------------------------

        @rule(delay=numbers, kind=st.sampled_from(["int", "plain", "phoenix", "cyclic"]))
        def put(self, delay, kind):
            it = iter(self.items(kind))
            r = self.both(lambda q: q.put(next(it), delay, block=False))
            if r[0] == "ok":
                self.handles.append(r[1])

        @rule(deadline=numbers, timeout=timeouts)
        def put_at(self, deadline, timeout):
            # Only waits that cannot block: non-blocking, 0, or bad timeouts.
            it = iter(self.items("int"))
            r = self.both(lambda q: q.put_at(next(it), deadline, block=timeout is not None, timeout=timeout))
            if r[0] == "ok":
                self.handles.append(r[1])

        @rule()
        def get_nowait(self):
            self.both(lambda q: q.get_nowait())

        @rule(timeout=timeouts)
        def get(self, timeout):
            self.both(lambda q: q.get(block=timeout is not None, timeout=timeout))

        @rule(n=counts)
        def get_many(self, n):
            self.both(lambda q: q.get_many(n))

        @rule(i=st.integers(0, 200))
        def cancel(self, i):
            h = self.handles[i % len(self.handles)]
            self.both(lambda q: q.cancel(h))

        @rule(i=st.integers(0, 200), delay=numbers)
        def reschedule(self, i, delay):
            h = self.handles[i % len(self.handles)]
            self.both(lambda q: q.reschedule(h, delay))

        @rule(step=st.floats(0, 20, allow_nan=False))
        def advance(self, step):
            for clock in self.clocks:
                clock.now += step

        @rule(bad=st.sampled_from(["raise", float("nan"), float("inf"), "noon", 2**60]))
        def clock_misbehaves_once(self, bad):
            for clock in self.clocks:
                clock.next_bad = OSError("clock broke") if bad == "raise" else bad

        @rule(what=st.sampled_from(["next_deadline", "qsize", "put"]))
        def clock_reenters_once(self, what):
            for clock, q in zip(self.clocks, self.queues):
                fn = {
                    "next_deadline": q.next_deadline,
                    "qsize": q.qsize,
                    "put": lambda q=q: q.put_at("from clock", 0, block=False),
                }[what]

                def reenter(fn=fn):
                    try:
                        fn()
                    except (RuntimeError, ShutDown, Full):  # re-entered under the lock
                        pass

                clock.reenter = reenter

        @rule()
        def collect(self):
            gc.collect(1)  # cyclic items die now, and their finalisers put

        @rule(roll=st.integers(0, 9), immediate=st.booleans())
        def shutdown(self, roll, immediate):
            if roll == 0:  # rarely: most runs should stay open
                self.both(lambda q: q.shutdown(immediate))

        # -- what must hold after every step --------------------------------------

        @invariant()
        def agree(self):
            for clock in self.clocks:
                clock.next_bad = None
                clock.reenter = None
            c, p = self.queues
            c._check()
            p._check()
            assert not LOST, LOST
            assert len(c) == len(p) == c.qsize() == p.qsize()
            assert c.next_deadline() == p.next_deadline()
            assert repr(c) == repr(p)
            assert c.is_shutdown == p.is_shutdown

        def teardown(self):
            for q in self.queues:
                q.shutdown(immediate=True)

    Lockstep.TestCase.settings = settings(max_examples=150, stateful_step_count=40)
    # Finalisers of cyclic items must run at the same step on both sides:
    # only at the explicit collections, never when allocation triggers one.
    gc.disable()
    try:
        with twin_ids():  # the twins' heaps issue the very same handles
            Lockstep.TestCase().runTest()
    finally:
        gc.enable()
        gc.collect()
