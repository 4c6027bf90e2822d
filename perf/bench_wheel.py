"""pyperf: TimingWheel (compiled and pure) against heapq and sched, in one run.

    python perf/bench_wheel.py --fast -o wheel.json
    python perf/compare.py wheel.json

The timer workload (issue #4): 1e6 timers, tick 1 ms, delays uniform in
0-60 s, every other one cancelled, then the clock advanced tick by tick
through 61 s; rows are per timer.  heapq uses lazy cancellation (the heapq
docs' recipe).  sched cancels in O(n), so it is compared on 1e4 timers.
schedule/cancel rows are per call, into and out of a wheel of 1e6 timers.
The workloads live in dq_core.benchmarks.timers.
"""

from __future__ import annotations

import pyperf

from dq_core.benchmarks import timers as w
from dq_core.benchmarks.common import implementations

IMPLS = [(label, impl.TimingWheel) for label, impl in implementations()]


def main() -> None:
    runner = pyperf.Runner()
    runner.metadata["description"] = "dq_core TimingWheel vs heapq (lazy cancel) and sched"
    n, small = 1_000_000, 10_000
    timers, few = w.timer_delays(n), w.timer_delays(small)
    for label, cls in IMPLS:
        runner.bench_time_func(f"timers N={n} {label}", w.wheel_timers, cls, timers, inner_loops=n)
    runner.bench_time_func(f"timers N={n} heapq", w.heapq_timers, timers, inner_loops=n)
    for label, cls in IMPLS:
        runner.bench_time_func(f"timers N={small} {label}", w.wheel_timers, cls, few, inner_loops=small)
    runner.bench_time_func(f"timers N={small} sched", w.sched_timers, few, inner_loops=small)
    for label, cls in IMPLS:
        runner.bench_time_func(f"schedule_at N={n} {label}", w.wheel_schedule, cls, timers, inner_loops=n)
        runner.bench_time_func(
            f"schedule N={n} {label}", w.wheel_schedule, cls, timers, "schedule", inner_loops=n
        )
        runner.bench_time_func(f"cancel N={n} {label}", w.wheel_cancel, cls, timers, inner_loops=n)
    runner.bench_time_func(f"schedule_at N={n} heapq", w.heapq_push, timers, inner_loops=n)


if __name__ == "__main__":
    main()
