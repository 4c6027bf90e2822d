"""A Sentinel failover under load (a timed script, not pyperf).

    python perf/redis_sentinel.py [--workers 4] [--async-workers 2] [--runs 3]

Starts a master, a replica and a redis-sentinel on loopback ports
(``down-after-milliseconds`` 300, ``failover-timeout`` 2000; see
tests/redis_server.py) and worker processes, each with its own
``RedisDelayQueue`` (or ``AsyncRedisDelayQueue``) on
``redis.sentinel.Sentinel(...).master_for(...)``, looping on ``get`` then
``ack``.  A producer puts a job every 5 ms, due at once or up to 0.2 s later,
without pausing; two seconds in, the master is killed (SIGKILL).  The
producer and the workers go on through the failover, for 4 s after it.
Then the script waits until every job is done, and reports per run: the
failover time (kill to the sentinel naming the new master), how soon the
workers ran jobs again (the end of the longest pause in their deliveries
after the kill), jobs put, lost, run twice (and why: an ack that
returned True before the kill, the replica never told; or a claim the
replica never heard of, whose ack then returned False), and puts that raised.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Dict, List

import redis
import redis.sentinel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from dq_core.redis import RedisDelayQueue, Unavailable  # noqa: E402
from redis_queues import wait_until_done  # noqa: E402
from redis_server import Sentinel  # noqa: E402

WORKER = r"""
import asyncio, json, sys, time
import redis.sentinel, redis.asyncio.sentinel
from dq_core.redis import AsyncRedisDelayQueue, RedisDelayQueue
port, name, log_path, kind = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
log = open(log_path, "a", buffering=1)
def record(job, acked, at):
    log.write(json.dumps([job.id, job.attempts, at, acked, time.monotonic()]) + "\n")
if kind == "sync":
    q = RedisDelayQueue(name, redis.sentinel.Sentinel([("127.0.0.1", port)], socket_timeout=1.0)
                        .master_for("dq", socket_timeout=1.0))
    while True:
        job = q.get(timeout=1)
        if job is not None:
            at = time.monotonic()
            record(job, q.ack(job), at)
else:
    async def main():
        s = redis.asyncio.sentinel.Sentinel([("127.0.0.1", port)], socket_timeout=1.0)
        q = AsyncRedisDelayQueue(name, s.master_for("dq", socket_timeout=1.0))
        while True:
            job = await q.get(timeout=1)
            if job is not None:
                at = time.monotonic()
                record(job, await q.ack(job), at)
    asyncio.run(main())
"""


def run(args: argparse.Namespace) -> Dict[str, object]:
    name = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as d:
        sentinels = Sentinel(Path(d))
        sentinels.start()
        logs: List[Path] = []
        procs = []
        for i, kind in enumerate(["sync"] * args.workers + ["async"] * args.async_workers):
            logs.append(Path(d) / f"w{i}.log")
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", WORKER, str(sentinels.port), name, str(logs[-1]), kind]
                )
            )
        watch = redis.sentinel.Sentinel([("127.0.0.1", sentinels.port)], socket_timeout=1.0)
        producer = RedisDelayQueue(name, watch.master_for(Sentinel.NAME, socket_timeout=1.0))
        put: Dict[str, float] = {}
        raised = 0
        stop = threading.Event()

        def produce() -> None:
            nonlocal raised
            i = 0
            while not stop.is_set():
                try:
                    job_id = producer.put(b"x", (i % 5) * 0.05)
                    put[job_id] = time.monotonic()
                except Unavailable:
                    raised += 1
                i += 1
                time.sleep(0.005)

        time.sleep(1.5)  # the workers are waiting
        thread = threading.Thread(target=produce)
        thread.start()
        time.sleep(2.0)
        killed = time.monotonic()
        sentinels.master.kill()
        while sentinels.master_address()[1] != sentinels.replica.port:
            time.sleep(0.01)
        failover = time.monotonic() - killed
        time.sleep(4.0)
        stop.set()
        thread.join()
        wait_until_done(producer)
        time.sleep(0.5)
        for p in procs:
            p.kill()
            p.wait()
        runs: Dict[str, list] = defaultdict(list)
        for log in logs:
            for line in log.read_text().splitlines():
                job_id, attempts, at, acked, acked_at = json.loads(line)
                runs[job_id].append((at, acked, acked_at, attempts))
        sentinels.kill()
    twice = {i: sorted(r) for i, r in runs.items() if len(r) > 1}
    ack_lost = sum(1 for r in twice.values() if r[0][1] and r[0][2] < killed)
    claim_lost = sum(1 for r in twice.values() if not r[0][1])
    # the workers' outage: the longest pause in the deliveries after the kill
    # (a get that claimed before it may return just after it)
    times = sorted(at for r in runs.values() for at, *_ in r if at > killed - 0.5)
    resumed = max((b - a, b - killed) for a, b in zip(times, times[1:]))[1]
    return {
        "redis_py": redis.__version__,
        "failover_s": round(failover, 2),
        "resumed_s": round(resumed, 2),
        "jobs_put": len(put),
        "lost": len(set(put) - set(runs)),
        # when their put returned, and when the first run of each job run twice
        # was claimed (ms before the kill; negative: after it)
        "lost_puts_ms_before_kill": sorted(round((killed - put[i]) * 1e3, 1) for i in set(put) - set(runs)),
        "run_twice": len(twice),
        "twice_ack_lost_with_master": ack_lost,
        "twice_claim_lost_with_master": claim_lost,
        "twice_unexplained": len(twice) - ack_lost - claim_lost,
        "twice_first_run_ms_before_kill": sorted(round((killed - r[0][0]) * 1e3, 1) for r in twice.values()),
        "puts_raised": raised,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--async-workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for _ in range(args.runs):
        print(json.dumps(run(args)), flush=True)


if __name__ == "__main__":
    main()
