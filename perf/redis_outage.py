"""The README's Redis worker loop through a server outage (a timed script, not pyperf).

    python perf/redis_outage.py [--outage 30] [--workers 2] [--async-workers 1]

Starts its own redis-server (AOF on, ``appendfsync always``) on a free
loopback port, and worker processes that run the README's Redis example as
it is written there (read from README.md; only ``redis.Redis()`` gets the
port, and ``work`` records each payload it is given).  A producer puts a job
every 0.1 s (due 0 to 0.4 s later).  Three seconds in, the server is killed
(SIGKILL); OUTAGE seconds later it starts again on the same port, and the
producer goes on for 8 s more.  Then the script waits until every job is
done and reports: whether every worker loop is still running; jobs put
(their ``put`` returned), delivered, lost, delivered twice; puts that raised
``Unavailable`` (the server away past ``retry_for``); and how soon after the
restart the workers ran jobs again.  ``--async-workers`` adds processes
running the same loop on ``AsyncRedisDelayQueue`` (``await`` added).
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
from collections import Counter
from pathlib import Path
from typing import Dict, List, Tuple

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from dq_core.redis import RedisDelayQueue, Unavailable  # noqa: E402
from redis_queues import wait_until_done  # noqa: E402
from redis_server import RedisServer  # noqa: E402

#: The worker: the README's example, its client on our port, ``work`` recording.
WORKER = r"""
import json, re, sys, textwrap, time
readme, port, log_path, kind, name = sys.argv[1:6]
block = re.search(r"## Redis.*?```python\n(.*?)```", open(readme).read(), re.S).group(1)
block = block.replace("redis.Redis()", f"redis.Redis(port={port})").replace(
    '"orders"', repr(name))
block = block.replace("def work(payload: bytes) -> None:",
                      "def work(payload: bytes) -> None:\n    record(payload)")
assert "record(payload)" in block, "the README's work() is not where it was"
log = open(log_path, "a", buffering=1)

def record(payload):
    log.write(json.dumps([payload.decode(), time.monotonic()]) + "\n")

if kind == "async":  # the same loop on AsyncRedisDelayQueue, every call awaited
    block = block.replace("redis.Redis(", "redis.asyncio.Redis(").replace(
        "RedisDelayQueue", "AsyncRedisDelayQueue").replace("def handle", "async def handle")
    for call in ("q.put(", "q.cancel(", "q.get(", "q.nack(", "q.ack(", "handle(job)\n"):
        block = block.replace(call, "await " + call)
    block = ("import asyncio, redis.asyncio\nasync def main():\n" + textwrap.indent(block, "    ")
             + "asyncio.run(main())\n")
exec(compile(block, "README.md", "exec"), {"__name__": "__main__", "record": record})
"""


def run(args: argparse.Namespace) -> Dict[str, object]:
    name = "outage-" + uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory() as d:
        server = RedisServer(Path(d))
        server.start()
        logs: List[Path] = []
        procs: List[subprocess.Popen[bytes]] = []
        kinds = ["sync"] * args.workers + ["async"] * args.async_workers
        for i, kind in enumerate(kinds):
            log = Path(d) / f"worker{i}.log"
            logs.append(log)
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        WORKER,
                        str(ROOT / "README.md"),
                        str(server.port),
                        str(log),
                        kind,
                        name,
                    ],
                    cwd=str(ROOT),
                )
            )
        producer = RedisDelayQueue(name, redis.Redis(port=server.port))
        put: Dict[str, float] = {}
        raised: List[str] = []
        stop = threading.Event()

        def produce() -> None:
            i = 0
            while not stop.is_set():
                payload = f"j{i}"
                try:
                    producer.put(payload.encode(), (i % 5) * 0.1)
                    put[payload] = time.monotonic()
                except Unavailable:
                    raised.append(payload)
                i += 1
                time.sleep(0.1)

        time.sleep(2.0)  # the workers are waiting
        thread = threading.Thread(target=produce)
        thread.start()
        time.sleep(3.0)
        killed = time.monotonic()
        server.kill()
        time.sleep(args.outage)
        server.start()
        restarted = time.monotonic()
        time.sleep(8.0)
        stop.set()
        thread.join()
        wait_until_done(producer)
        time.sleep(0.5)
        alive = [p.poll() is None for p in procs]
        for p in procs:
            p.kill()
            p.wait()
        deliveries: List[Tuple[str, float]] = []
        for log in logs:
            deliveries += [tuple(json.loads(line)) for line in log.read_text().splitlines()]
        server.kill()
    counts = Counter(p for p, _ in deliveries)
    delivered = set(counts)
    after = sorted(t for p, t in deliveries if t >= restarted)
    put_after = [p for p, t in put.items() if t >= restarted]
    late_after = [max(t for q, t in deliveries if q == p) - put[p] - 0.4 for p in put_after if p in delivered]
    return {
        "redis_py": redis.__version__,
        "outage_s": round(restarted - killed, 1),
        "workers": len(procs),
        "worker_loops_alive": sum(alive),
        "jobs_put": len(put),
        "delivered": len(delivered & set(put)),
        "lost": sorted(set(put) - delivered),
        "delivered_twice": sorted(p for p, c in counts.items() if c > 1),
        "puts_raised_unavailable": len(raised),
        "of_those_delivered": len(set(raised) & delivered),
        "first_job_run_after_restart_s": round(after[0] - restarted, 3) if after else None,
        "jobs_put_after_restart": len(put_after),
        "their_worst_lateness_s": round(max(late_after), 3) if late_after else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--outage", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--async-workers", type=int, default=1)
    out = run(parser.parse_args())
    for k, v in out.items():
        print(f"{k:32} {v}")


if __name__ == "__main__":
    main()
