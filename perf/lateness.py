"""How late does a blocking DelayQueue.get return, against a bare timed lock wait?

    python perf/lateness.py [--items 1500] [--max-delay 0.3] [--rounds 5]
    python perf/lateness.py --aio-timer [--items 2000] [--max-delay 0.3] [--rounds 9]
                            [--head-start 0.05] [--used-for 0.2] [--uvloop]
    python perf/lateness.py --worst-advance [--items 2000] [--max-delay 0.3] [--rounds 5]

One consumer takes ``--items`` items put with random delays in
[0, max-delay); lateness is the time ``get`` returned minus the item's
deadline.  The baseline, in the same run, sleeps to the same deadlines with
``threading.Lock().acquire(timeout=...)``: the floor set by the kernel's
timer slack.  Prints p50/p99/max in microseconds for each implementation.
The measurements live in dq_core.benchmarks.queues.

``--aio-timer``: ``aio.Timer.call_at`` (both implementations, tick 1 ms)
against the loop's own ``call_at``, ``--items`` callbacks due over
``--max-delay`` seconds, scheduled in one go ``--head-start`` seconds ahead
(0: the first ones also wait for the scheduling of the rest), on a Timer
made ``--used-for`` seconds before (a long-lived Timer: its wheel's slot
boundaries fall anywhere).  Lateness: ``loop.time()`` in the callback minus
its deadline.  Each round is one schedule for every contender, in turn;
prints the p99 of every round and, pooled, p50/p99/max and the ratio of
p99 to call_at's.  The measurements live in dq_core.benchmarks.aiotimers.

``--worst-advance``: what the Timer's loop callback costs at worst, without
a loop: the same schedule on a TimingWheel (tick 1 ms, 256 slots) whose
level-1 boundary falls 16 ms in, advanced 1 ms at a time as the Timer's
loop timer does; prints the median and the worst advance (CPU time) and
how many timers the worst one moved down a level (a cascade) or returned.
"""

from __future__ import annotations

import argparse
import random
import statistics
from typing import Callable

from dq_core.benchmarks.common import implementations, percentiles_us
from dq_core.benchmarks.queues import delay_lateness, lock_lateness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=None)
    parser.add_argument("--max-delay", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--aio-timer", action="store_true", help="aio.Timer against loop.call_at")
    parser.add_argument("--head-start", type=float, default=0.05)
    parser.add_argument("--used-for", type=float, default=0.0)
    parser.add_argument("--uvloop", action="store_true", help="on uvloop (the default loop otherwise)")
    parser.add_argument(
        "--worst-advance",
        action="store_true",
        help="the costliest TimingWheel.advance of the aio.Timer schedule",
    )
    args = parser.parse_args()
    if args.aio_timer:
        timer_lateness(args)
    elif args.worst_advance:
        worst_advance(args)
    else:
        queue_lateness(args)


def queue_lateness(args: argparse.Namespace) -> None:
    items, rounds = args.items or 1500, args.rounds or 5
    rng = random.Random(args.seed)
    contenders = [("Lock.acquire(timeout)", None)]
    for label, impl in implementations():
        contenders.append((f"DelayQueue ({label.rpartition('-')[2]})", impl.DelayQueue))
    pooled: dict[str, list[float]] = {label: [] for label, _ in contenders}
    # Rounds interleave the contenders so a hiccup of the machine hits all alike.
    for _ in range(rounds):
        delays = [rng.random() * args.max_delay for _ in range(items)]
        for label, cls in contenders:
            late = lock_lateness(delays) if cls is None else delay_lateness(cls, delays)
            pooled[label].extend(late)
    rows = list(pooled.items())
    base_p99 = percentiles_us(rows[0][1])[1]
    print(f"{rounds} rounds of {items} items, delays uniform in [0, {args.max_delay}) s; lateness in us")
    print(f"{'':<24}{'p50':>9}{'p99':>9}{'max':>9}  p99 vs lock")
    for label, late in rows:
        p50, p99, mx = percentiles_us(late)
        print(f"{label:<24}{p50:>9.0f}{p99:>9.0f}{mx:>9.0f}  {p99 / base_p99:5.2f}x")


def timer_lateness(args: argparse.Namespace) -> None:
    import asyncio

    from dq_core._assemble import aio_classes
    from dq_core.benchmarks import aiotimers as t

    items, rounds = args.items or 2000, args.rounds or 9
    new_loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    if args.uvloop:
        import uvloop

        new_loop = uvloop.new_event_loop
    rng = random.Random(args.seed)
    contenders: list[tuple[str, t.AtContender]] = [("loop.call_at", t.loop_call_at)]
    for label, implementation in (("aio.Timer (c)", "cython"), ("aio.Timer (py)", "python")):
        try:
            contenders.append((label, t.timer_call_at(aio_classes(implementation).Timer)))
        except ImportError:  # pure-only build
            pass
    pooled: dict[str, list[float]] = {label: [] for label, _ in contenders}
    per_round: dict[str, list[float]] = {label: [] for label, _ in contenders}
    for _ in range(rounds):  # interleaved: a hiccup of the machine hits all alike
        delays = [rng.random() * args.max_delay for _ in range(items)]
        for label, contender in contenders:
            late = t.lateness(contender, delays, new_loop, args.head_start, args.used_for)
            pooled[label].extend(late)
            per_round[label].append(percentiles_us(late)[1])
    base = statistics.median(per_round["loop.call_at"])
    print(
        f"{rounds} rounds of {items} callbacks due over [0, {args.max_delay}) s, "
        f"scheduled {args.head_start} s ahead on a Timer made {args.used_for} s before, "
        f"{'uvloop' if args.uvloop else 'asyncio'}; lateness in us"
    )
    print(f"{'':<16}{'p50':>7}{'p99':>7}{'max':>7}  {'median p99':>10}  vs call_at  p99 of each round")
    for label, late in pooled.items():
        p50, p99, mx = percentiles_us(late)
        med = statistics.median(per_round[label])
        rounds_txt = " ".join(f"{x:.0f}" for x in per_round[label])
        print(f"{label:<16}{p50:>7.0f}{p99:>7.0f}{mx:>7.0f}  {med:>10.0f}  {med / base:8.2f}x  {rounds_txt}")


def worst_advance(args: argparse.Namespace) -> None:
    import time

    items, rounds = args.items or 2000, args.rounds or 5
    rng = random.Random(args.seed)
    print(
        f"{rounds} rounds of {items} timers due over [0, {args.max_delay}) s on a wheel of "
        f"1 ms ticks and 256 slots, its level-1 boundary 16 ms in; advance CPU time in us"
    )
    for label, impl in implementations():
        for _ in range(rounds):
            delays = [rng.random() * args.max_delay for _ in range(items)]
            now = [0.0]
            wheel = impl.TimingWheel(0.001, 256, clock=lambda: now[0])
            start = 0.256 - 0.016
            wheel.advance(start)
            for i, d in enumerate(delays):
                wheel.schedule_at(i, start + 0.0005 + d)
            costs = []
            t = start
            while len(wheel):
                t += 0.001
                moved = wheel.stats()["cascaded"]
                t0 = time.thread_time_ns()
                out = wheel.advance(t)
                costs.append((time.thread_time_ns() - t0, wheel.stats()["cascaded"] - moved, len(out)))
            worst = max(costs)
            median = statistics.median(c[0] for c in costs)
            print(
                f"{label:<12} median {median / 1e3:6.1f}   worst {worst[0] / 1e3:7.1f} "
                f"(moved {worst[1]} timers down, returned {worst[2]})"
            )


if __name__ == "__main__":
    main()
