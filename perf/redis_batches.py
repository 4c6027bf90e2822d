"""How long a big batch holds the Redis server (a timed script, not pyperf).

    python perf/redis_batches.py [--jobs 100000]

Starts its own redis-server (AOF on, ``appendfsync always``) on a free
loopback port, then puts JOBS jobs with one ``put_many``, claims them with
one ``get_many`` and acks them with one ``ack_many``, while another process
sends a PING every millisecond.  Reports the scripts run, the slowest ones
(``SLOWLOG``, every script of 1 ms or more) and the PINGs' latency: a batch
runs in scripts of 500 jobs, so the server answers others between them.
tests/test_redis_faults.py checks the batch sizes deterministically; the
times depend on the machine (run it on a quiet one).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from dq_core.redis import RedisDelayQueue  # noqa: E402
from redis_server import RedisServer  # noqa: E402

PINGER = """
import sys, time, redis
c = redis.Redis(port=int(sys.argv[1]))
took, end = [], time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    t = time.perf_counter(); c.ping(); took.append(time.perf_counter() - t)
    time.sleep(0.001)
took.sort()
print(took[-1], took[int(len(took) * 0.99)], took[len(took) // 2], len(took))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=8.0, help="how long the PINGs go on")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        server = RedisServer(Path(d))
        server.start()
        try:
            admin = server.client()
            admin.config_set("slowlog-log-slower-than", "1000")
            admin.config_set("slowlog-max-len", "100000")
            admin.slowlog_reset()
            admin.config_resetstat()
            q = RedisDelayQueue(uuid.uuid4().hex, server.client())
            pinger = subprocess.Popen(
                [sys.executable, "-c", PINGER, str(server.port), str(args.seconds)],
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(0.3)
            start = time.perf_counter()
            ids = q.put_many([b"p%d" % i for i in range(args.jobs)])
            jobs = q.get_many(args.jobs)
            assert [j.id for j in jobs] == ids
            assert all(q.ack_many(jobs))
            took = time.perf_counter() - start
            out, _ = pinger.communicate(60)
            worst, p99, median, pings = out.split()
            scripts = admin.info("commandstats")["cmdstat_evalsha"]["calls"]
            slow = sorted(
                (e["duration"] for e in admin.slowlog_get(100000) if b"EVALSHA" in e["command"].upper()),
                reverse=True,
            )
            print(f"{args.jobs} jobs put, claimed and acked in {took:.2f} s, in {scripts} scripts")
            print(
                f"scripts of 1 ms or more: {len(slow)}; slowest: "
                f"{', '.join(f'{us / 1000:.1f} ms' for us in slow[:5]) or '-'}"
            )
            print(
                f"{pings} PINGs meanwhile: median {float(median) * 1e3:.2f} ms, "
                f"p99 {float(p99) * 1e3:.2f} ms, worst {float(worst) * 1e3:.2f} ms"
            )
        finally:
            server.kill()


if __name__ == "__main__":
    main()
