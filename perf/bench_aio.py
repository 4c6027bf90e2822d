"""pyperf: dq_core.aio's queues against asyncio's and a hand-made delay queue, in one run.

    python perf/bench_aio.py --fast -o aio.json
    python perf/compare.py aio.json
    python perf/bench_aio.py --lateness     # DelayQueue lateness p50/p99, both loops (no pyperf)
    python perf/bench_aio.py --fast --timers-only -o timers.json   # aio.Timer vs call_later only
    python perf/bench_aio.py --fast --no-timers -o queues.json     # all the rest
    python perf/bench_aio.py --fast --queues-only -o pq.json       # the queue rows only
    python perf/bench_aio.py --limiter-behaviour   # aio.RateLimiter vs aiolimiter, real time
    python perf/bench_aio.py --fast --threads-only -o threads.json  # a thread feeding a task only

Each workload runs on the default loop and on uvloop (where installed); times
are per element (one put or one get; per item for the task workloads).  The
baselines are asyncio.PriorityQueue and ``AsyncHeapqDelayQueue`` (heapq, an
``asyncio.Event`` and ``wait_for``).  The workloads live in
``dq_core.benchmarks`` (``aio``, ``aiotimers``, ``limit``), the queue rows
shared with ``python -m dq_core.bench``; the timer run-through runs on the
tests' ``VirtualClockLoop`` (``tests/clocks.py``).

A producer thread feeding a consumer task (20k items, wall-clock time per
item): ``aio.PriorityQueue.put_threadsafe`` against janus and culsans (their
``PriorityQueue``'s ``sync_q.put`` and ``async_q.get``; installed by the
``bench`` extra, skipped where missing) and ``loop.call_soon_threadsafe``
feeding ``asyncio.PriorityQueue``.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dq_core.benchmarks import aio as a
from dq_core.benchmarks.common import percentiles_us
from dq_core.benchmarks.queues import pq_items

if TYPE_CHECKING:
    import pyperf


def loops() -> list[tuple[str, a.NewLoop]]:
    out: list[tuple[str, a.NewLoop]] = [("asyncio", asyncio.new_event_loop)]
    try:
        import uvloop
    except ImportError:  # Windows
        return out
    return out + [("uvloop", uvloop.new_event_loop)]


def contenders() -> list[tuple[str, object, object]]:
    """(label, aio.PriorityQueue, aio.DelayQueue) per implementation built here."""
    from dq_core._assemble import aio_classes

    out = []
    for label, implementation in (("dq_core-c", "cython"), ("dq_core-py", "python")):
        try:
            c = aio_classes(implementation)
        except ImportError:  # pure-only build
            continue
        out.append((label, c.PriorityQueue, c.DelayQueue))
    return out


def benchmarks() -> None:
    import pyperf

    def pass_on(cmd: list[str], args: object) -> None:  # to pyperf's worker processes
        for flag in ("timers_only", "no_timers", "queues_only", "threads_only"):
            if getattr(args, flag, False):
                cmd.append("--" + flag.replace("_", "-"))

    runner = pyperf.Runner(add_cmdline_args=pass_on)
    runner.argparser.add_argument(
        "--timers-only", action="store_true", help="run only the aio.Timer vs call_later benchmarks"
    )
    runner.argparser.add_argument(
        "--no-timers",
        action="store_true",
        help="all but the aio.Timer benchmarks (their run-through is long)",
    )
    runner.argparser.add_argument(
        "--queues-only", action="store_true", help="only the PriorityQueue and DelayQueue benchmarks"
    )
    runner.argparser.add_argument(
        "--threads-only", action="store_true", help="only a producer thread feeding a consumer task"
    )
    args = runner.parse_args()
    if args.timers_only:
        timer_benchmarks(runner)
        return
    if args.threads_only:
        thread_benchmarks(runner)
        return
    runner.metadata["description"] = "dq_core.aio vs asyncio.PriorityQueue and heapq+asyncio.Event"
    n = 10_000
    jobs = pq_items(n)
    past = [-1.0] * n
    ours = contenders()
    for loop_name, new_loop in loops():
        pqs = [(label, pq) for label, pq, _ in ours] + [("asyncio", asyncio.PriorityQueue)]
        for label, pq in pqs:
            runner.bench_time_func(
                f"aio PQ put_nowait+get_nowait {loop_name} {label}",
                a.pq_alternating,
                pq,
                jobs,
                new_loop,
                inner_loops=2 * n,
            )
            runner.bench_time_func(
                f"aio PQ 4P4C bounded {loop_name} {label}",
                a.pq_producers_consumers,
                pq,
                jobs,
                new_loop,
                inner_loops=n,
            )
        dqs = [(label, dq) for label, _, dq in ours] + [("heapq+Event", a.AsyncHeapqDelayQueue)]
        for label, dq in dqs:
            runner.bench_time_func(
                f"aio DelayQueue put+get {loop_name} {label}",
                a.delay_put_get,
                dq,
                past,
                new_loop,
                inner_loops=2 * n,
            )
            runner.bench_time_func(
                f"aio DelayQueue 4 waiting consumers {loop_name} {label}",
                a.delay_waiting_consumers,
                dq,
                n,
                new_loop,
                inner_loops=n,
            )
    if args.queues_only:
        return
    thread_benchmarks(runner)
    if not args.no_timers:
        timer_benchmarks(runner)
    limiter_benchmarks(runner, loops())


# -- a producer thread feeding a consumer task (workload: dq_core.benchmarks.aio) -----------


def thread_feeders() -> list[tuple[str, a.Feeder]]:
    """The contenders of ``thread_feed``: dq_core's, then the peers installed here."""
    import importlib.util

    out = [(label, a.feed_put_threadsafe(pq)) for label, pq, _ in contenders()]
    for name, feeder in (("janus", a.feed_janus), ("culsans", a.feed_culsans)):
        if importlib.util.find_spec(name) is not None:  # the bench extra
            out.append((name, feeder))
    return out + [("call_soon_threadsafe", a.feed_call_soon_threadsafe(asyncio.PriorityQueue))]


def thread_benchmarks(runner: "pyperf.Runner", n: int = 20_000) -> None:
    """One thread puts ``n`` items, one task awaits ``get()`` for each: wall time per item."""
    jobs = pq_items(n)
    for loop_name, new_loop in loops():
        for label, feeder in thread_feeders():
            runner.bench_time_func(
                f"aio PQ producer thread -> consumer task 20k {loop_name} {label}",
                a.thread_feed,
                feeder,
                jobs,
                new_loop,
                inner_loops=n,
            )


# -- aio.Timer against loop.call_later (workloads: dq_core.benchmarks.aiotimers) ------------


def timer_benchmarks(runner, n_run: int = 1_000_000, n_call: int = 100_000) -> None:
    """aio.Timer vs the loop's own call_later: a run-through, per-call schedule and cancel.

    Run-through: ``n_run`` call_later with delays U(0, 60 s), every other one
    cancelled, then the loop runs until all have fired; on the default loop
    with a virtual clock (``VirtualClockLoop``: no real waiting, same loop
    for both contenders); on uvloop (real clock) with the delays divided by
    ``UVLOOP_SCALE``.  Times are per timer scheduled.
    """
    from dq_core._assemble import aio_classes
    from dq_core.benchmarks import aiotimers as t

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from clocks import VirtualClockLoop

    ours = []
    for label, implementation in (("dq_core-c", "cython"), ("dq_core-py", "python")):
        try:
            ours.append((label, t.timer_call_later(aio_classes(implementation).Timer)))
        except ImportError:  # pure-only build
            continue
    who = ours + [("call_later", t.loop_call_later)]
    run_60 = t.delays(n_run, 60.0)
    run_uv = [d / t.UVLOOP_SCALE for d in run_60]
    per_call = t.delays(n_call, 60.0)
    for loop_name, new_loop in loops():
        virtual = VirtualClockLoop if loop_name == "asyncio" else new_loop
        ds = run_60 if loop_name == "asyncio" else run_uv
        span = "60 s virtual" if loop_name == "asyncio" else f"{60 / t.UVLOOP_SCALE:g} s"
        for label, contender in who:
            if label == "dq_core-py" and n_run > 100_000:
                continue  # the pure twin: per-call rows only (the run-through takes long)
            runner.bench_time_func(
                f"aio timers 1e6 call_later U(0,{span}) half cancelled run-through {loop_name} {label}",
                t.run_through,
                contender,
                ds,
                virtual,
                inner_loops=n_run,
            )
        for label, contender in who:
            runner.bench_time_func(
                f"aio timers schedule {loop_name} {label}",
                t.schedule_cost,
                contender,
                per_call,
                new_loop,
                inner_loops=n_call,
            )
            runner.bench_time_func(
                f"aio timers cancel {loop_name} {label}",
                t.cancel_cost,
                contender,
                per_call,
                new_loop,
                inner_loops=n_call,
            )


def limiter_benchmarks(runner: "pyperf.Runner", loop_list: list[tuple[str, a.NewLoop]]) -> None:
    """aio.RateLimiter against aiolimiter.AsyncLimiter: the cost of one acquire (CPU time)."""
    from dq_core.benchmarks import limit as lb

    for loop_name, new_loop in loop_list:
        for kind in ("dq_core", "aiolimiter"):
            runner.bench_time_func(
                f"aio RateLimiter acquire uncontended {loop_name} {kind}",
                lb.acquire_uncontended,
                kind,
                new_loop,
                inner_loops=10_000,
            )
            runner.bench_time_func(
                f"aio RateLimiter acquire 8 tasks, 200k/s {loop_name} {kind}",
                lb.acquire_contended,
                kind,
                new_loop,
                inner_loops=2_000,
            )


def limiter_behaviour() -> None:
    from dq_core.benchmarks import limit as lb

    print(
        "rate 100/s, burst 5; 20 tasks asking for 1 token and 2 for 5, 1 s, real time:\n"
        "worst window = most tokens in any window / (rate * window + burst), <= 1 keeps the "
        "promise;\novertaken = grants to a waiter that arrived after one still waiting"
    )
    for loop_name, new_loop in loops():
        for kind in ("dq_core", "aiolimiter"):
            r = lb.behaviour(kind, new_loop)
            print(
                f"  {loop_name:<8} {kind:<11} {r['tokens_per_s']:6.1f} tokens/s  worst window "
                f"{r['worst_window']:.3f}  5-token grants {r['big_grants']:3.0f}  "
                f"overtaken {r['overtaken']:4.0f}"
            )


def lateness(items: int = 2000, max_delay: float = 0.5) -> None:
    rng = random.Random(5)
    delays = [rng.random() * max_delay for _ in range(items)]
    print(
        f"aio.DelayQueue lateness, {items} items due over {max_delay} s, one consumer "
        "(loop.time() at return minus deadline), microseconds;\n"
        "the floor: asyncio.sleep to the same deadlines on the same loop"
    )
    for loop_name, new_loop in loops():
        for label, _, dq in contenders():
            p50, p99, _ = percentiles_us(a.delay_lateness(dq, delays, new_loop))
            print(f"  {loop_name:<8} {label:<14} p50 {p50:8.1f}   p99 {p99:8.1f}")
        p50, p99, _ = percentiles_us(a.sleep_lateness(delays, new_loop))
        print(f"  {loop_name:<8} {'asyncio.sleep':<14} p50 {p50:8.1f}   p99 {p99:8.1f}   (the floor)")


if __name__ == "__main__":
    if "--lateness" in sys.argv:
        lateness()
    elif "--limiter-behaviour" in sys.argv:
        limiter_behaviour()
    else:
        benchmarks()
