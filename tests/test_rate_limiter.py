"""RateLimiter: a token bucket, exact under a fake clock, fair under threads."""

from __future__ import annotations

import threading
import time

import pytest

from dq_core import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


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


@pytest.mark.parametrize("kwargs, msg", [
    ({"rate": 0}, "rate must be a positive"),
    ({"rate": -1}, "rate must be a positive"),
    ({"rate": float("nan")}, "rate must not be NaN"),
    ({"rate": 1, "burst": 0}, "burst must be a positive"),
    ({"rate": 1, "burst": float("nan")}, "burst must not be NaN"),
])
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
    lim = RateLimiter(1, clock=clock)
    assert lim.acquire()
    t0 = time.monotonic()
    assert lim.acquire(timeout=0.5) is False  # would need 1 s
    assert time.monotonic() - t0 < 0.4
    clock.now = 1.0
    assert lim.acquire(timeout=0)


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
