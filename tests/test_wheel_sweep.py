"""TimingWheel: every delay from zero to decades, at every wheel size and tick.

A sweep over wheel_size (2 .. 65536) x tick (1e-9 .. 1e3) x delays (zero,
fractions of a tick, seconds to decades, far beyond, and the exact tick
counts where a timer moves to another level), on both implementations.
Each timer must come out exactly once, never early, and at most one tick
late; ``next_deadline()`` must never be later than the earliest timer's
tick; ``drain()`` must return everything still held.
"""

from __future__ import annotations

import math

import pytest

from clocks import FakeClock

DAY = 86400.0
YEAR = 365.25 * DAY
SIZES = [2**k for k in range(1, 17)]
TICKS = [1e-9, 1e-6, 1e-3, 0.3, 1.0, 1e3]
DELAYS = [0.0, 1e-12, 1e-3, 1.0, 60.0, 3600.0, DAY, 30 * DAY, YEAR, 9 * YEAR, 30 * YEAR, 80 * YEAR, 1e300]
T0 = 12345.678
ADVANCED = 1000.5  # ticks past T0 before scheduling: the current tick has digits


def _slack(t: float) -> float:
    # float rounding of deadline / tick: a few units in the last place of t
    return 4 * math.ulp(t)


def _delays(tick: float, size: int, cur: int) -> list[float]:
    """The delays to test: DELAYS, fractions of a tick, and level boundaries."""
    out = list(DELAYS) + [tick * f for f in (0.5, 1.0, 1.5, 2.0)]
    bits = size.bit_length() - 1
    shift = bits
    while shift < 63:
        span = 1 << shift
        nxt = ((cur >> shift) + 1) << shift  # where digit `shift` next turns over
        for n in (span - 1, span, span + 1, nxt - cur - 1, nxt - cur, nxt - cur + 1):
            if 0 < n:
                out.append(n * tick)
        shift += bits
    return out


def _wheel_with_timers(impl, tick, size):
    clock = FakeClock(T0)
    w = impl.TimingWheel(tick=tick, wheel_size=size, clock=clock)
    start = T0 + ADVANCED * tick
    assert w.advance(start) == []
    clock.now = start
    cur = math.floor(start / tick) - math.floor(T0 / tick)
    timers = {}  # handle -> (index, deadline): the payload
    for i, delay in enumerate(_delays(tick, size, cur)):
        d = start + delay
        h = w.schedule((i, d), delay) if i % 2 else w.schedule_at((i, d), d)
        timers[h] = (i, d)
    w._check()
    return w, timers


@pytest.mark.parametrize("tick", TICKS)
def test_every_delay_fires_once_never_early_at_most_one_tick_late(impl, tick):
    for size in SIZES:
        w, timers = _wheel_with_timers(impl, tick, size)
        live = dict(timers)
        seen = set()
        nows = sorted({t for _, d in timers.values() for t in (math.nextafter(d, -math.inf), d, d + tick)})
        for now in nows:
            nd = w.next_deadline()
            first = min(d for _, d in live.values())
            assert nd is not None
            # never later than the earliest timer's tick, which starts
            # at most one tick after its deadline
            assert nd <= max(first, w.wheel_time) + tick + _slack(first), (size, first, nd)
            if nd < now:
                # advance() before next_deadline() returns nothing
                assert w.advance(math.nextafter(nd, -math.inf)) == [], (size, nd)
            out = w.advance(now)
            now = w.wheel_time  # a now before the wheel's time counts as it
            for x in out:
                assert x not in seen, (size, x)  # exactly once
                assert x[1] <= now, (size, x, now)  # never early
                seen.add(x)
            live = {h: x for h, x in live.items() if x not in seen}
            for _, d in live.values():
                # at most one tick late
                assert d > now - tick - _slack(now), (size, d, now)
            if not live:
                break
        assert live == {} and len(w) == 0 and w.next_deadline() is None, size
        assert seen == set(timers.values())
        w._check()


@pytest.mark.parametrize("tick", TICKS)
def test_drain_returns_every_timer_held(impl, tick):
    for size in SIZES:
        w, timers = _wheel_with_timers(impl, tick, size)
        mid = sorted(d for _, d in timers.values())[len(timers) // 2]
        fired = w.advance(mid)
        assert all(d <= mid for _, d in fired)
        rest = w.drain()
        assert sorted(fired + rest) == sorted(timers.values()), size
        # earliest tick first
        assert all(a[1] <= b[1] + tick + _slack(b[1]) for a, b in zip(rest, rest[1:])), size
        assert len(w) == 0 and w.next_deadline() is None
        assert not any(h in w for h in timers)
        w._check()
