"""TTLRing under hostile user code, on both implementations.

Finalisers run by the garbage collector in the middle of a change, keys
released while the ring is replaced, and bad arguments: nothing crashes,
nothing is lost, errors name the argument.
"""

from __future__ import annotations

import gc
import math
import sys

import pytest

from clocks import FakeClock
from helpers import collecting_constantly, recorded
from ttl_helpers import Finaliser, PushOnDel, bad_clock_readings, eager_gc  # noqa: F401 (a fixture)

# -- item 3: finalisers run by the garbage collector mid-change ----------------


def test_finaliser_pushing_while_push_grows_the_ring(impl, eager_gc):
    r = impl.TTLRing(10, segment_size=4)
    errors: list[str] = []
    pushed = []
    for i in range(200):
        Finaliser(lambda i=i: (r.push(("fin", i), float(i)), pushed.append(("fin", i))), errors)
        r.push(i, float(i))
        pushed.append(i)
    gc.collect()
    r._check()
    assert sorted(map(str, r.expire(math.inf))) == sorted(map(str, pushed))
    r._check()
    assert all(e == "RuntimeError: TTLRing was re-entered while it was being changed" for e in errors)


def test_finaliser_expiring_while_push_grows_the_ring(impl, eager_gc):
    r = impl.TTLRing(1, segment_size=3)
    errors: list[str] = []
    out: list = []
    n = 0
    for i in range(200):
        Finaliser(lambda: out.extend(r.expire(math.inf)), errors)
        r.push(i, float(i))
        n += 1
    gc.collect()
    assert all(e == "RuntimeError: TTLRing was re-entered while it was being changed" for e in errors)
    r._check()
    out.extend(r.expire(math.inf))
    assert sorted(out) == list(range(n))
    r._check()


@pytest.mark.parametrize("read", ["__getstate__", "copy", "_check"])
def test_push_from_a_collection_while_the_state_is_read_is_refused(impl, read):
    # Reading the state allocates (one tuple per entry), so a collection may
    # run a finaliser or a gc callback, or switch to another thread, halfway
    # through; a push there used to land in the middle, and the state's
    # counters no longer matched its entries (a copy then raised ValueError).
    import copy

    r = impl.TTLRing(10, segment_size=4)
    for i in range(50):
        r.push(i, float(i))
    outcomes: list[str] = []

    push = recorded(lambda: r.push("gc", 0.0), "pushed", outcomes)
    with collecting_constantly(push):
        if read == "__getstate__":
            state = r.__getstate__()
        elif read == "copy":
            state = copy.copy(r).__getstate__()
        else:
            r._check()
            state = r.__getstate__()
    assert state[4] - state[5] == len(state[7])  # pushed - expired == entries
    r._check()
    assert len(r) == 50 + outcomes.count("pushed")
    if impl.name == "py" or sys.version_info < (3, 12):
        # a collection runs inside the read (from 3.12 a compiled read has
        # none: the collector waits for the interpreter's next bytecode)
        assert "TTLRing was re-entered while it was being changed" in outcomes
    assert set(outcomes) <= {"pushed", "TTLRing was re-entered while it was being changed"}


# -- item 5: the number rules, once for both -----------------------------------


@pytest.mark.parametrize(
    "bad, exc, msg",
    [
        (1.5, TypeError, "max_items must be an int, not 'float'"),
        ("2", TypeError, "max_items must be an int, not 'str'"),
    ],
)
def test_ring_expire_max_items_must_be_an_int(impl, bad, exc, msg):
    r = impl.TTLRing(1)
    for i in range(3):
        r.push(i, 0.0)
    with pytest.raises(exc, match=msg):
        r.expire(10, max_items=bad)
    assert len(r) == 3
    assert r.expire(10, max_items=True) == [0]
    assert r.expire(10, max_items=2**70) == [1, 2]
    r._check()


def test_infinite_ttl_from_minus_infinity_never_expires(impl):
    r = impl.TTLRing(math.inf)
    r.push("a", created_at=-math.inf)
    assert r.expire(now=math.inf) == [] and r.next_expiry() == math.inf
    assert r.popleft() == "a"
    r._check()


# -- item 6: setters and arguments ---------------------------------------------


def test_clock_must_be_callable(impl):
    with pytest.raises(TypeError, match="clock must be callable, not 'int'"):
        impl.TTLRing(5, clock=5)


@bad_clock_readings
def test_a_bad_clock_reading_names_the_clock(impl, reading, exc, msg):
    clock = FakeClock()
    r = impl.TTLRing(5, clock=clock)
    r.push("a")
    clock.now = reading
    for call in (lambda: r.push("b"), r.expire):
        with pytest.raises(exc, match=msg):
            call()
    clock.now = 1.0
    assert len(r) == 1
    r._check()


# -- the same class of bug: user code run while several fields change -----------


@pytest.mark.parametrize("how", ["setstate", "init"])
def test_old_keys_are_released_after_the_ring_is_replaced(impl, how):
    r = impl.TTLRing(1, segment_size=2)
    log: list[str] = []
    r.push(PushOnDel(r, log), 0.0)
    r.push("b", 0.0)
    if how == "setstate":
        r.__setstate__(impl.TTLRing(3, segment_size=3).__getstate__())
    else:
        r.__init__(3, segment_size=3)
    assert log == ["done"]
    r._check()
    assert r.expire(math.inf) == ["from __del__"] and r.ttl == 3.0
    r._check()
