"""Poll 1000 remote jobs against an API that allows N calls per second.

The job started earliest is polled first; no thread races for permits.
Each poll of an unfinished job re-submits it with its original start time as
priority, so the oldest jobs keep the front of the line.  The remote API is
simulated: a job finishes after a few polls.

    python examples/poller.py [--jobs 1000] [--rate 200] [--workers 8]
"""

from __future__ import annotations

import argparse
import random
import threading
import time

from _report import report  # examples/_report.py, beside this file

from dq_core import PriorityExecutor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0, help="API calls per second")
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()

    rng = random.Random(1)
    t0 = time.monotonic()
    # job id -> (started_at, polls still needed before the remote side reports done)
    jobs = {i: (t0 - rng.uniform(0, 3600), rng.randint(1, 3)) for i in range(args.jobs)}
    lock = threading.Lock()
    finished = threading.Event()
    polls = []  # (job started_at) in the order polls happened

    def poll(job_id: int) -> None:
        with lock:
            started_at, remaining = jobs[job_id]
            polls.append(started_at)
        time.sleep(0.001)  # the remote call
        if remaining > 1:
            with lock:
                jobs[job_id] = (started_at, remaining - 1)
            ex.submit_with_priority(started_at, poll, job_id)  # same place in line
        else:
            with lock:
                del jobs[job_id]
                if not jobs:
                    finished.set()

    with PriorityExecutor(max_workers=args.workers, rate=args.rate, burst=1) as ex:
        for job_id, (started_at, _) in list(jobs.items()):  # workers change jobs meanwhile
            ex.submit_with_priority(started_at, poll, job_id)  # earliest started first
        finished.wait()
    elapsed = time.monotonic() - t0
    report(
        polls,
        args.jobs,
        elapsed,
        args.rate,
        "a poll that ran while older jobs were still being submitted, or a job rejoining the line",
    )


if __name__ == "__main__":
    main()
