"""cached: memoising functions, methods and coroutine functions, single-flight per key."""

from __future__ import annotations

import asyncio
import doctest
import sys
import threading
import time

import pytest

from clocks import FakeClock

N = 1000
WAIT = 10.0  # a broken single-flight fails within this, it never hangs the run


def _threads(target, n):
    threads = [threading.Thread(target=target, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def _joined(threads):
    deadline = time.monotonic() + WAIT
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() for t in threads)


def test_the_docstring_example(impl):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    test = doctest.DocTestParser().get_doctest(
        impl.cached.__doc__, {"cached": impl.cached}, "cached", None, 0
    )
    runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


def test_hits_misses_and_lru_cache_semantics(impl):
    calls = []

    @impl.cached(maxsize=2)
    def f(x, y=0):
        calls.append((x, y))
        return x + y

    assert f(1) == 1 and f(1) == 1 and f(1, y=2) == 3 and f(1, y=2) == 3
    assert calls == [(1, 0), (1, 2)]
    assert f.cache_info() == (2, 2, 2, 2)
    f(3)  # evicts the least recently used: f(1)
    f(1)
    assert calls[-1] == (1, 0)
    assert f.__name__ == "f" and f.__wrapped__(2) == 2
    assert f.cache_parameters() == {"ttl": None, "maxsize": 2, "typed": False}
    f.cache_clear()
    assert f.cache_info() == (0, 0, 2, 0)


def test_bare_decorator_typed_and_key(impl):
    @impl.cached
    def plain(x, y):
        return [x]

    assert plain(1, 2) is plain(1, 2) and plain(1, 2) is plain(1.0, 2)  # equal arguments: one key

    @impl.cached(typed=True)
    def typed(x, y):
        return [x]

    assert typed(1, 2) is typed(1, 2) and typed(1, 2) is not typed(1.0, 2)

    @impl.cached(key=lambda user, request_id: user)
    def by_user(user, request_id):
        return request_id

    assert by_user("ann", 1) == 1 and by_user("ann", 2) == 1
    with pytest.raises(ValueError, match="typed"):
        impl.cached(key=lambda: 1, typed=True)
    with pytest.raises(TypeError, match="key must be callable"):
        impl.cached(key=3)
    with pytest.raises(TypeError, match="maxsize"):
        impl.cached(maxsize="big")


def test_ttl_expires_results(impl):
    calls = []
    clock = FakeClock(0.0)
    cache = impl.WheelTTLDict(5, maxsize=10, clock=clock)

    @impl.cached(cache=cache)
    def f(x):
        calls.append(x)
        return x

    f(1), f(1)
    clock.now = 5.0
    f(1)
    assert calls == [1, 1] and f.cache is cache
    with pytest.raises(ValueError, match="cache"):
        impl.cached(ttl=3, cache=cache)


def test_on_a_ttldict(impl):
    clock = FakeClock(0.0)

    @impl.cached(cache=impl.TTLDict(2, clock=clock))
    def f(x):
        return object()

    a = f(1)
    assert f(1) is a
    clock.now = 2
    assert f(1) is not a


def test_ttl_of_the_made_cache(impl):
    @impl.cached(ttl=0.0)  # expires at once: each call computes
    def f():
        return object()

    assert f() is not f() and f.cache_info().misses == 2


def test_methods_are_cached_per_instance(impl):
    class Box:
        def __init__(self, n):
            self.n = n
            self.calls = 0

        @impl.cached(maxsize=None)
        def double(self):
            self.calls += 1
            return self.n * 2

    a, b = Box(1), Box(2)
    assert (a.double(), a.double(), b.double()) == (2, 2, 4)
    assert a.calls == 1 and b.calls == 1


def test_exceptions_are_not_cached(impl):
    calls = []

    @impl.cached
    def f(x):
        calls.append(x)
        if len(calls) == 1:
            raise ValueError("first")
        return x

    with pytest.raises(ValueError):
        f(1)
    assert f(1) == 1 and calls == [1, 1]


def test_maxsize_zero_keeps_nothing(impl):
    calls = []

    @impl.cached(maxsize=0)
    def f(x):
        calls.append(x)
        return x

    f(1), f(1)
    assert calls == [1, 1] and f.cache_info().currsize == 0


def _single_flight_threads(impl, fail_first):
    arrived = []
    calls = []
    started = threading.Event()

    # nothing kept when all succeed: only the flight can spare the calls; after a
    # failure, a late waker finds the second leader's result kept
    @impl.cached(maxsize=None if fail_first else 0)
    def slow(key):
        calls.append(key)
        started.set()
        # hold the flight until every caller is in
        deadline = time.monotonic() + WAIT
        while len(arrived) < N and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        if fail_first and len(calls) == 1:
            raise RuntimeError("leader failed")
        return "value"

    results, errors = [], []

    def caller():
        arrived.append(1)
        try:
            results.append(slow("cold"))
        except RuntimeError as exc:
            errors.append(exc)

    return _threads(caller, N), calls, results, errors


def test_a_thousand_threads_make_one_call(impl):
    threads, calls, results, errors = _single_flight_threads(impl, fail_first=False)
    assert _joined(threads), "callers left waiting"
    assert calls == ["cold"] and results == ["value"] * N and not errors


def test_a_failing_leader_hands_over_to_one_waiter(impl):
    threads, calls, results, errors = _single_flight_threads(impl, fail_first=True)
    assert _joined(threads), "a waiter was stranded by the failing leader"
    assert len(errors) == 1 and len(results) == N - 1 and set(results) == {"value"}
    assert len(calls) == 2  # the leader, then one waiter in its place


async def _gather_within(aws):
    return await asyncio.wait_for(asyncio.gather(*aws, return_exceptions=True), WAIT)


def test_a_thousand_tasks_make_one_call(impl):
    calls = []

    @impl.cached(maxsize=0)
    async def slow(key):
        calls.append(key)
        await asyncio.sleep(0.05)
        return key * 2

    async def main():
        return await _gather_within([slow(21) for _ in range(N)])

    assert asyncio.run(main()) == [42] * N and calls == [21]


def test_a_failing_async_leader_hands_over(impl):
    calls = []

    @impl.cached
    async def flaky():
        calls.append(1)
        await asyncio.sleep(0.01)
        if len(calls) == 1:
            raise ValueError("leader failed")
        return "ok"

    async def main():
        return await _gather_within([flaky() for _ in range(50)])

    out = asyncio.run(main())
    assert isinstance(out[0], ValueError) and out[1:] == ["ok"] * 49 and len(calls) == 2


def test_a_cancelled_async_leader_hands_over(impl):
    calls = []
    release = None

    @impl.cached
    async def slow():
        calls.append(1)
        if len(calls) == 1:
            await asyncio.Event().wait()  # the leader never finishes: it is cancelled
        await release.wait()
        return "ok"

    async def main():
        nonlocal release
        release = asyncio.Event()
        leader = asyncio.ensure_future(slow())
        await asyncio.sleep(0)
        waiters = [asyncio.ensure_future(slow()) for _ in range(100)]
        await asyncio.sleep(0.01)
        leader.cancel()
        await asyncio.sleep(0.01)
        release.set()
        out = await _gather_within(waiters)
        with pytest.raises(asyncio.CancelledError):
            await leader
        return out

    assert asyncio.run(main()) == ["ok"] * 100 and len(calls) == 2


def test_a_cancelled_waiter_leaves_the_flight_alone(impl):
    calls = []

    @impl.cached
    async def slow():
        calls.append(1)
        await asyncio.sleep(0.02)
        return "ok"

    async def main():
        leader = asyncio.ensure_future(slow())
        await asyncio.sleep(0)
        waiter = asyncio.ensure_future(slow())
        await asyncio.sleep(0)
        waiter.cancel()
        return await asyncio.wait_for(leader, WAIT), waiter.cancelled()

    assert asyncio.run(main()) == ("ok", True) and calls == [1]


def test_coroutines_on_two_loops_share_one_flight(impl):
    calls = []
    gate = threading.Event()

    @impl.cached
    async def slow():
        calls.append(1)
        await asyncio.sleep(0.05)
        return "ok"

    out = []

    def other_loop():
        gate.wait(WAIT)
        out.append(asyncio.run(asyncio.wait_for(slow(), WAIT)))

    t = threading.Thread(target=other_loop, daemon=True)
    t.start()

    async def main():
        task = asyncio.ensure_future(slow())
        await asyncio.sleep(0)
        gate.set()
        return await task

    out.append(asyncio.run(main()))
    t.join(WAIT)
    assert out == ["ok", "ok"] and calls == [1]


def test_cache_clear_during_a_call_keeps_its_result_out(impl):
    entered, leave = threading.Event(), threading.Event()

    @impl.cached
    def f():
        entered.set()
        leave.wait(WAIT)
        return "stale"

    t = threading.Thread(target=f, daemon=True)
    t.start()
    assert entered.wait(WAIT)
    f.cache_clear()
    leave.set()
    t.join(WAIT)
    assert f.cache_info().currsize == 0


class _Parting:
    """A result whose finaliser lets other threads run (an eviction frees it mid-traffic)."""

    def __init__(self, n):
        self.n = n

    def __del__(self):
        time.sleep(0)


def test_hits_race_evictions_and_expiry_without_harm(impl):
    # hits of int and str keys may read the compiled mapping without the
    # wrapper's lock: threads hitting, missing, evicting (finalisers that
    # switch threads) and expiring must still get each key's own result and
    # count every call once
    clock = FakeClock()
    calls = []

    @impl.cached(cache=impl.WheelTTLDict(ttl=0.5, maxsize=8, clock=clock))
    def boxed(x):
        calls.append(x)
        return _Parting(x)

    @impl.cached(ttl=0.002, maxsize=8)  # the real clock: hits find expired entries too
    def parted(x):
        calls.append(x)
        return _Parting(x)

    errors = []
    rounds, keys = 300, [*range(12), *map(str, range(12))]

    def work(seed):
        try:
            for i in range(rounds):
                k = keys[(seed * 7 + i * 5) % len(keys)]
                for f in (parted, boxed):
                    assert f(k).n == k
                if i % 50 == seed:
                    clock.now += 0.3
        except BaseException as e:  # pragma: no cover - shown by the assert below
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two steps they can
    try:
        threads = [threading.Thread(target=work, args=(s,), daemon=True) for s in range(6)]
        for t in threads:
            t.start()
        joined = _joined(threads)
    finally:
        sys.setswitchinterval(interval)
    assert joined
    assert errors == []
    info_p, info_b = parted.cache_info(), boxed.cache_info()
    assert info_p.currsize <= 8 and info_b.currsize <= 8
    assert info_p.misses + info_b.misses == len(calls)
    assert info_p.hits + info_p.misses + info_b.hits + info_b.misses == 6 * rounds * 2
