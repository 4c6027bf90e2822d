"""RateLimiter: a token bucket, exact under a fake clock, fair under threads."""

from __future__ import annotations

import threading
import time

import pytest

from clocks import FakeClock as Clock
from dq_core import RateLimiter


def test_starts_full_and_refills_exactly():
    clock = Clock()
    lim = RateLimiter(3, burst=1, clock=clock)
    assert lim.try_acquire() and not lim.try_acquire()
    granted = 0
    for i in range(1, 100_001):  # a million-ish float steps would drift if added up
        clock.now = i / 3 - 1e-7
        assert not lim.try_acquire(), i
        clock.now = i / 3
        granted += lim.try_acquire()
    assert granted == 100_000


def test_len_is_the_whole_tokens_try_acquire_would_take():
    clock = Clock()
    lim = RateLimiter(4, burst=2.5, clock=clock)
    assert len(lim) == 2
    assert lim.try_acquire(0.5) and len(lim) == 2
    assert lim.try_acquire() and len(lim) == 1
    clock.now = 0.125  # +0.5 token: 1.5 held
    assert len(lim) == 1
    n = len(lim)
    taken = 0
    while lim.try_acquire():
        taken += 1
    assert taken == n and len(lim) == 0
    clock.now = 10.0
    assert len(lim) == 2  # burst caps it


def test_burst_caps_what_idle_time_banks():
    clock = Clock()
    lim = RateLimiter(10, burst=5, clock=clock)
    clock.now = 3600.0  # an hour idle banks only burst tokens
    assert [lim.try_acquire() for _ in range(7)] == [True] * 5 + [False] * 2
    clock.now += 0.1
    assert lim.try_acquire() and not lim.try_acquire()
    assert lim.try_acquire(0.0001) is False
    clock.now += 0.5
    assert lim.try_acquire(5) and not lim.try_acquire()


@pytest.mark.parametrize(
    "kwargs, msg",
    [
        ({"rate": 0}, "rate must be a positive"),
        ({"rate": -1}, "rate must be a positive"),
        ({"rate": float("nan")}, "rate must not be NaN"),
        ({"rate": 1, "burst": 0}, "burst must be a positive"),
        ({"rate": 1, "burst": float("nan")}, "burst must not be NaN"),
    ],
)
def test_bad_parameters(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        RateLimiter(**kwargs)


def test_bad_token_counts():
    lim = RateLimiter(1, burst=2, clock=Clock())
    with pytest.raises(ValueError, match="must not exceed burst"):
        lim.try_acquire(3)
    with pytest.raises(ValueError, match="must not exceed burst"):
        lim.acquire(3)
    with pytest.raises(ValueError, match="tokens must be a positive"):
        lim.try_acquire(0)
    with pytest.raises(TypeError, match="tokens must be a real number"):
        lim.try_acquire("1")
    with pytest.raises(ValueError, match="'timeout' must be a non-negative number"):
        lim.acquire(timeout=-1)
    assert lim.try_acquire(2)  # nothing was taken by the failed calls


def test_acquire_returns_false_at_once_when_the_wait_exceeds_timeout():
    clock = Clock()
    lim = RateLimiter(0.05, clock=clock)  # a token every 20 s
    assert lim.acquire()
    # It returns at once: a waiting acquire would sleep the 10 s timeout
    # (the fake clock never moves), so the join below would find it alive.
    result = []
    t = threading.Thread(target=lambda: result.append(lim.acquire(timeout=10)), daemon=True)
    t.start()
    t.join(5)
    assert result == [False]  # would need 20 s, more than the 10 s allowed
    clock.now = 20.0
    assert lim.acquire(timeout=0)


def test_acquire_timeout_counts_the_tokens_of_the_waiters_ahead(monkeypatch):
    from dq_core import _waiting

    monkeypatch.setattr(_waiting, "MAX_WAIT", 0.01)  # waiters re-read the fake clock often
    clock = Clock()
    lim = RateLimiter(1, burst=5, clock=clock)
    assert lim.acquire(5)  # empty now; a token a second
    ahead = threading.Thread(target=lim.acquire, args=(5,), daemon=True)  # 5 s of tokens
    ahead.start()
    end = time.monotonic() + 10
    while not lim._line:
        assert time.monotonic() < end, "the first waiter never queued"
        time.sleep(0.001)
    # Alone, 1 token would come within 3 s; behind the 5 s of the waiter
    # ahead, it takes 6: refused at once (a wait would outlast the join).
    result = []
    late = threading.Thread(target=lambda: result.append(lim.acquire(1, timeout=3)), daemon=True)
    late.start()
    late.join(5)
    assert result == [False]
    clock.now = 5.0
    ahead.join(5)
    assert not ahead.is_alive()
    assert not lim.try_acquire()  # the waiter ahead took the five


def test_acquire_waits_in_real_time_and_serves_in_arrival_order():
    lim = RateLimiter(20, burst=1)  # real clock
    assert lim.acquire()
    order = []
    lock = threading.Lock()

    def taker(i):
        lim.acquire()
        with lock:
            order.append((i, time.monotonic()))

    t0 = time.monotonic()
    threads = []
    for i in range(6):
        threads.append(threading.Thread(target=taker, args=(i,)))
        threads[-1].start()
        time.sleep(0.005)  # arrive in order
    for t in threads:
        t.join(10)
    elapsed = time.monotonic() - t0
    assert [i for i, _ in order] == list(range(6))
    assert elapsed >= 6 / 20 * 0.9  # 6 more tokens at 20/s: never faster
    assert elapsed < 5


def test_repr():
    lim = RateLimiter(2, burst=4, clock=Clock())
    assert repr(lim) == "<RateLimiter rate=2.0 burst=4.0 available=4>"


# -- issue #10: impossible settings, waits of any length, setters, clock, copies ------------


@pytest.mark.parametrize("rate", [1e-12, 1e-300, 5e-324])
def test_a_tiny_rate_never_overflows(rate):
    clock = Clock()
    lim = RateLimiter(rate, clock=clock)
    assert lim.try_acquire() and not lim.try_acquire()
    clock.now = 1e6  # refills next to nothing: still no token
    assert not lim.try_acquire()
    for timeout in (0, 1.0, 1e11):
        assert lim.acquire(timeout=timeout) is False  # the wait exceeds it: at once
    assert "available=" in repr(lim)


def test_an_endless_wait_sleeps_in_chunks(monkeypatch):
    from dq_core import _waiting

    monkeypatch.setattr(_waiting, "MAX_WAIT", 0.02)
    lim = RateLimiter(20)  # real clock
    assert lim.acquire()
    t0 = time.monotonic()
    assert lim.acquire(timeout=float("inf"))  # 0.05 s, slept in 0.02 s chunks
    assert 0.04 <= time.monotonic() - t0 < 5


def test_an_infinite_wait_does_not_overflow():
    lim = RateLimiter(5e-324)
    assert lim.acquire()
    # 1 / 5e-324 seconds is inf: the waiter sleeps (in chunks) for ever.
    t = threading.Thread(target=lim.acquire, daemon=True)
    t.start()
    t.join(0.2)
    assert t.is_alive()


def test_bad_timeouts():
    lim = RateLimiter(1, clock=Clock())
    for bad in (float("nan"), -1, float("-inf")):
        with pytest.raises(ValueError, match="^'timeout' must be a non-negative number$"):
            lim.acquire(timeout=bad)
    with pytest.raises(TypeError, match="^timeout must be a real number, not 'str'$"):
        lim.acquire(timeout="1")
    assert lim.try_acquire()  # nothing was taken


def test_fractional_burst_and_tokens():
    # A burst under 1 is a valid bucket for fractional tokens; asking for
    # more than burst at once can never succeed and says so.
    clock = Clock()
    lim = RateLimiter(1, burst=0.5, clock=clock)
    assert lim.try_acquire(0.25) and lim.try_acquire(0.25) and not lim.try_acquire(0.25)
    with pytest.raises(ValueError, match=r"^tokens \(1\.0\) must not exceed burst \(0\.5\)$"):
        lim.acquire()
    with pytest.raises(ValueError, match=r"^tokens \(1\.0\) must not exceed burst"):
        lim.try_acquire()


@pytest.mark.parametrize("name", ["rate", "burst"])
def test_setters_validate_as_the_constructor(name):
    lim = RateLimiter(2, burst=4, clock=Clock())
    for bad, exc, msg in [
        (0, ValueError, f"^{name} must be a positive finite number, got 0.0$"),
        (-1, ValueError, f"^{name} must be a positive finite number"),
        (float("inf"), ValueError, f"^{name} must be a positive finite number"),
        (float("nan"), ValueError, f"^{name} must not be NaN$"),
        ("2", TypeError, f"^{name} must be a real number, not 'str'$"),
    ]:
        with pytest.raises(exc, match=msg):
            RateLimiter(**{"rate": 2, "burst": 4, name: bad})
        with pytest.raises(exc, match=msg):
            setattr(lim, name, bad)
        assert (lim.rate, lim.burst) == (2.0, 4.0)
    assert repr(lim) == "<RateLimiter rate=2.0 burst=4.0 available=4>"


def test_setting_rate_and_burst_keeps_the_tokens_there():
    clock = Clock()
    lim = RateLimiter(2, burst=4, clock=clock)
    assert lim.try_acquire(3)  # 1 left
    lim.rate = 10  # the past is not re-priced at the new rate
    assert not lim.try_acquire(2)
    clock.now = 0.1  # 1 + 0.1 * 10
    assert lim.try_acquire(2) and not lim.try_acquire(0.01)
    clock.now = 10.0
    lim.burst = 1  # full at 4, capped to the new burst
    assert lim.try_acquire(1) and not lim.try_acquire(0.01)
    with pytest.raises(ValueError, match="must not exceed burst"):
        lim.try_acquire(2)
    lim.burst = 3  # raising burst adds no tokens
    assert not lim.try_acquire(0.01)
    clock.now = 10.3
    assert lim.try_acquire(3)


def test_clock_must_be_callable_and_its_readings_sane():
    with pytest.raises(TypeError, match="^clock must be callable, not 'int'$"):
        RateLimiter(1, clock=5)
    reading = [0.0]
    lim = RateLimiter(1, clock=lambda: reading[0])
    for bad, exc, msg in [
        (float("nan"), ValueError, r"^clock\(\) must return a finite number"),
        (float("inf"), ValueError, r"^clock\(\) must return a finite number"),
        ("now", TypeError, r"^clock\(\) must be a real number, not 'str'$"),
    ]:
        reading[0] = bad
        for call in (lim.try_acquire, lim.acquire, repr, lambda: setattr(lim, "rate", 2)):
            with pytest.raises(exc, match=msg):
                call() if call is not repr else repr(lim)
        with pytest.raises(exc, match=msg):
            RateLimiter(1, clock=lambda: reading[0])
    reading[0] = 0.0
    assert lim.try_acquire() and lim.rate == 1.0  # nothing was taken, nothing changed


def test_a_clock_that_reenters_the_limiter_does_not_deadlock():
    # The clock is read before the lock is taken.
    holder = {}

    def clock():
        lim = holder.get("lim")
        if lim is not None and not holder.get("inside"):
            holder["inside"] = True
            try:
                holder["repr"] = repr(lim)
            finally:
                holder["inside"] = False
        return 0.0

    holder["lim"] = RateLimiter(1, clock=clock)
    assert holder["lim"].try_acquire()
    assert holder["repr"].startswith("<RateLimiter")


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copy_and_pickle_are_refused(how):
    import copy
    import pickle

    fn = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickle.dumps}[how]
    with pytest.raises(TypeError, match="^cannot pickle or copy 'RateLimiter' object"):
        fn(RateLimiter(1))


# -- a late waker takes its token when it wakes -----------------------------------------------


def test_a_late_waker_takes_its_token_when_it_wakes_not_when_it_asked(monkeypatch):
    # The waiter's sleep oversleeps by 4 s (the GIL held elsewhere, an OS
    # delay): it must take its token at 5, so the bucket (burst 1) is empty
    # then, not spend a token reserved for 1 and leave another for a second
    # start at 5.
    from dq_core import _ratelimiter

    clock = Clock()
    slept = []

    def late_sleep(seconds):
        slept.append((clock.now, seconds))
        clock.now = 5.0

    monkeypatch.setattr(_ratelimiter, "sleep", late_sleep)
    lim = RateLimiter(1, burst=1, clock=clock)
    assert lim.try_acquire()
    assert lim.acquire() is True
    assert slept == [(0.0, 1.0)]
    assert not lim.try_acquire()  # one start at 5, not two
    assert len(lim) == 0
    clock.now = 6.0
    assert lim.try_acquire()


def test_a_late_waker_keeps_its_place_in_line(monkeypatch):
    # Thread a waits first and oversleeps; b arrives while a sleeps, when
    # a's token already exists: b must wait behind a, then a full period.
    from dq_core import _ratelimiter

    clock = Clock()
    a_sleeps, a_wakes = threading.Event(), threading.Event()
    b_slept = []
    starts = []

    def controlled_sleep(seconds):
        if threading.current_thread().name == "a":
            a_sleeps.set()
            assert a_wakes.wait(10)
        else:
            b_slept.append((clock.now, seconds))
            clock.now += seconds

    monkeypatch.setattr(_ratelimiter, "sleep", controlled_sleep)
    lim = RateLimiter(1, burst=1, clock=clock)
    assert lim.try_acquire()

    def taker():
        assert lim.acquire(timeout=100)
        starts.append((threading.current_thread().name, clock.now))

    a = threading.Thread(target=taker, name="a")
    a.start()
    assert a_sleeps.wait(10)
    clock.now = 3.0  # a should have woken at 1: a's token (and only one) is there
    assert not lim.try_acquire()  # never ahead of a waiter
    b = threading.Thread(target=taker, name="b")
    b.start()
    time.sleep(0.05)  # b joins the line (generous: b only waits for its turn)
    assert starts == []
    a_wakes.set()
    a.join(10)
    b.join(10)
    assert starts == [("a", 3.0), ("b", 4.0)]
    assert b_slept == [(3.0, 1.0)]
