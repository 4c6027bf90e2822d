"""Instructions the Redis server spends per job of dq_core.redis (callgrind), one job at a time.

    python perf/callgrind_redis.py [--loops 200]

Starts ``redis-server`` under ``valgrind --tool=callgrind`` (instrumentation
off) on a free loopback port, AOF on with ``appendfsync everysec`` as
``bench_redis.py`` runs it, and for each operation warms up, switches the
instrumentation on (``callgrind_control -i on``), runs it LOOPS times, dumps
and prints the server's instructions per call: ``put``, ``get(timeout=0)``
(the claim script of a get that does not wait), ``ack``, the three in
turn for one job, and a worker loop's put and ``get(ack=the job before)``
(one script acks and claims).  Counts are repeatable where timings on a shared machine
are not: compare two versions of the scripts by running this on each.  The
server runs ``redis-server`` from PATH; valgrind slows it about 50x.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from dq_core.redis import RedisDelayQueue  # noqa: E402
from redis_server import free_port  # noqa: E402


def _instructions(directory: str) -> int:
    newest = max(glob.glob(os.path.join(directory, "cg.out.*")), key=os.path.getmtime)
    with open(newest) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {newest}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", type=int, default=200)
    args = parser.parse_args()
    server = shutil.which("redis-server")
    if server is None or shutil.which("valgrind") is None:
        raise SystemExit("needs redis-server and valgrind on PATH")
    directory = tempfile.mkdtemp(prefix="callgrind-redis-")
    port = free_port()
    proc = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={directory}/cg.out",
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            directory,
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    try:
        for _ in range(600):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        q = RedisDelayQueue("callgrind", client)

        def control(*what: str) -> None:
            subprocess.run(["callgrind_control", *what, str(proc.pid)], check=True, capture_output=True)

        def measure(label: str, op: Callable[[], Any]) -> None:
            for _ in range(20):
                op()
            control("-i", "on")
            control("-z")
            for _ in range(args.loops):
                op()
            control("-d")
            control("-i", "off")
            time.sleep(0.5)
            print(f"{label:<28}{_instructions(directory) / args.loops:12,.0f} instructions", flush=True)

        def one_job() -> None:
            q.put(b"x")
            job = q.get(timeout=0)
            assert job is not None
            q.ack(job)

        held: list[Any] = [None]

        def one_job_acked_by_get() -> None:  # a worker loop: get(ack=the job before)
            q.put(b"x")
            held[0] = q.get(timeout=0, ack=held[0])
            assert held[0] is not None

        q.clear()
        measure("put + get + ack, one job", one_job)
        q.clear()
        measure("put + get(ack=previous)", one_job_acked_by_get)
        q.clear()
        measure("put", lambda: q.put(b"x"))
        jobs: list[Any] = []
        measure("get(timeout=0)", lambda: jobs.append(q.get(timeout=0)))
        leased = iter(jobs)
        measure("ack", lambda: q.ack(next(leased)))
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
