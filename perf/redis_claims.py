"""Claims per job with many worker processes (a timed script, not pyperf).

    python perf/redis_claims.py [--processes 8] [--jobs 160]

Starts its own redis-server on a free loopback port and PROCESSES worker
processes, each with its own RedisDelayQueue running the README's loop
(``get``, then ``ack``), and counts what the
workers cost Redis per job, in two patterns:

- ``together``: jobs fall due together, 2 per process at a time (put with
  ``put_many`` 0.2 s ahead, every 0.6 s); the workers loop on ``get(timeout=5)``;
- ``sparse``: one job at a time, every 0.25 s, due at once; the workers loop on
  ``get(timeout=1)``, so most of their gets time out.

Each worker counts the commands its client sends (its pub/sub connection's
aside), between two signals of the harness: ``claims`` are its claim
scripts, ``other`` every command but its scripts (a wake-up ticket's
``SET``/``GET`` in older versions; the listener registry's ``ZADD``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from dq_core.redis import RedisDelayQueue  # noqa: E402
from dq_core.redis._scripts import OPS  # noqa: E402
from redis_server import RedisServer  # noqa: E402


def worker(port: int, name: str, timeout: float, done_key: str, out: Any) -> None:
    client = redis.Redis(port=port)
    q = RedisDelayQueue(name, client)
    ops = {s.sha: op for op, s in q._scripts.items()}
    counts: Counter[str] = Counter()
    marks: List[Counter[str]] = []
    execute = client.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        what = str(args[0]).upper()
        if what == "EVALSHA":
            what = ops.get(args[1], "?script")
        if what != "INCRBY":  # the harness's own counter
            counts[what] += 1
        return execute(*args, **options)

    client.execute_command = counted  # type: ignore[method-assign]
    signal.signal(signal.SIGUSR1, lambda *_: marks.append(Counter(counts)))
    out.put("ready")
    while True:
        job = q.get(timeout=timeout)
        if job is None:
            continue
        if job.payload == b"stop":
            q.ack(job)
            break
        q.ack(job)
        client.incr(done_key)
    q.close()
    out.put(dict(marks[1] - marks[0]))


def run(server: RedisServer, processes: int, pattern: str, jobs: int) -> Dict[str, float]:
    name = uuid.uuid4().hex
    done_key = f"harness:{name}:done"
    timeout = 5.0 if pattern == "together" else 1.0
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(server.port, name, timeout, done_key, results))
        for _ in range(processes)
    ]
    for p in procs:
        p.start()
    admin = server.client()
    producer = RedisDelayQueue(name, server.client())
    for _ in procs:
        assert results.get(timeout=60) == "ready"
    time.sleep(2.0)  # every worker waiting
    for p in procs:
        assert p.pid is not None
        os.kill(p.pid, signal.SIGUSR1)
    puts = 0
    start = time.monotonic()
    if pattern == "together":
        per_round = 2 * processes
        for _ in range(jobs // per_round):
            producer.put_many([b"j"] * per_round, [0.2] * per_round)
            puts += 1
            time.sleep(0.6)
    else:
        for _ in range(jobs):
            producer.put(b"j")
            puts += 1
            time.sleep(0.25)
    want = puts * (per_round if pattern == "together" else 1)
    waited = time.monotonic()
    while int(admin.get(done_key) or 0) < want:
        time.sleep(0.05)
        if time.monotonic() - waited > 30:
            raise RuntimeError(
                f"{admin.get(done_key)} of {want} jobs done in 30 s: "
                f"{producer.stats()}, workers alive: "
                f"{[p.is_alive() for p in procs]}"
            )
    elapsed = time.monotonic() - start
    time.sleep(0.2)  # the last acks' workers back in their gets
    for p in procs:
        assert p.pid is not None
        os.kill(p.pid, signal.SIGUSR1)
    done = int(admin.get(done_key) or 0)
    time.sleep(0.2)
    for _ in procs:
        producer.put(b"stop")
    total: Counter[str] = Counter()
    for _ in procs:
        total.update(results.get(timeout=60))
    for p in procs:
        p.join(60)
    results.close()
    results.join_thread()
    producer.close()
    admin.close()
    scripts = {*OPS, "?script"}  # every script of the queue; the rest are plain commands
    other = sum(v for k, v in total.items() if k not in scripts)
    return {
        "jobs": done,
        "seconds": elapsed,
        "claims_per_job": total["claim"] / done,
        "other_per_job": other / done,
        **{f"{k}_per_job": v / done for k, v in sorted(total.items()) if k not in ("claim", "ack")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=160)
    parser.add_argument("--pattern", choices=["together", "sparse", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        server = RedisServer(Path(d))
        server.start()
        try:
            patterns = ["together", "sparse"] if args.pattern == "both" else [args.pattern]
            for pattern in patterns:
                out = run(server, args.processes, pattern, args.jobs)
                print(
                    f"{pattern:9} {args.processes} processes: "
                    + ", ".join(
                        f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in out.items()
                    ),
                    flush=True,
                )
        finally:
            server.kill()


if __name__ == "__main__":
    main()
