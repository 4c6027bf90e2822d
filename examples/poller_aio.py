"""Poll 1000 remote jobs against an API that allows N calls per second, with asyncio.

The asyncio port of poller.py on dq_core.aio.PriorityTaskPool: the job
started earliest is polled first; at most ``--concurrency`` polls are in
flight and at most ``--rate`` start per second.  Each poll of an unfinished
job re-submits it with its original start time as priority, so the oldest
jobs keep the front of the line.  The remote API is simulated: a job
finishes after a few polls.

    python examples/poller_aio.py [--jobs 1000] [--rate 200] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import random

from _report import report  # examples/_report.py, beside this file

from dq_core import aio


async def main(jobs_count: int, rate: float, concurrency: int) -> None:
    loop = asyncio.get_running_loop()
    rng = random.Random(1)
    t0 = loop.time()
    # job id -> (started_at, polls still needed before the remote side reports done)
    jobs = {i: (t0 - rng.uniform(0, 3600), rng.randint(1, 3)) for i in range(jobs_count)}
    polls: list[float] = []  # (job started_at) in the order polls happened
    pool = aio.PriorityTaskPool(max_concurrency=concurrency, rate=rate, burst=1)

    async def poll(job_id: int) -> None:
        started_at, remaining = jobs[job_id]
        polls.append(started_at)
        await asyncio.sleep(0.001)  # the remote call
        if remaining > 1:
            jobs[job_id] = (started_at, remaining - 1)
            pool.submit(poll(job_id), priority=started_at)  # same place in line
        else:
            del jobs[job_id]

    async with pool:  # on exit, waits for every poll, the re-submitted ones too
        for job_id, (started_at, _) in jobs.items():
            pool.submit(poll(job_id), priority=started_at)  # earliest started first
    elapsed = loop.time() - t0
    report(polls, jobs_count, elapsed, rate, "a job rejoining the line behind older ones already started")
    assert not jobs


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0, help="API calls per second")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.jobs, args.rate, args.concurrency))
