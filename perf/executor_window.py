"""Does PriorityExecutor keep its rate at the start?  The worst window of task starts.

    python perf/executor_window.py [--runs 3] [--tasks 600] [--rate 200] [--burst 1] [--workers 8]

Submits ``--tasks`` no-op tasks from the main thread to
``PriorityExecutor(max_workers, rate, burst)``; each task records when it
started (``time.monotonic()``).  The worst window is the most starts in
any stretch [t_i, t_j] over what the limit allows there,
``rate * (t_j - t_i) + burst`` (the measure of ``dq_core.benchmarks.limit``):
1.0 is exact, above it starts bunched.  Prints each run and the median, for
both implementations.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from dq_core.benchmarks.common import implementations
from dq_core.benchmarks.limit import worst_window


def one_run(executor_cls, tasks: int, rate: float, burst: float, workers: int) -> float:
    starts: list[float] = []
    lock = threading.Lock()

    def task() -> None:
        with lock:
            starts.append(time.monotonic())

    with executor_cls(max_workers=workers, rate=rate, burst=burst) as ex:
        futures = [ex.submit(task) for _ in range(tasks)]
    assert all(f.exception() is None for f in futures) and len(starts) == tasks
    return worst_window([(t, 1.0) for t in starts], rate, burst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=600)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--burst", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    for label, impl in implementations():
        runs = [
            one_run(impl.PriorityExecutor, args.tasks, args.rate, args.burst, args.workers)
            for _ in range(args.runs)
        ]
        print(
            f"{label:<10} worst window "
            + " ".join(f"{r:.3f}" for r in runs)
            + f"  median {statistics.median(runs):.3f}"
        )


if __name__ == "__main__":
    main()
