"""pyperf: dq_core.redis end to end against arq's delayed jobs, on one redis-server, in one run.

    python perf/bench_redis.py --fast -o redis.json && python perf/compare.py redis.json
    python perf/bench_redis.py --lateness
    python perf/bench_redis.py --waiters

Starts its own redis-server (AOF on, ``appendfsync everysec``) on a free
loopback port; the pyperf workers get its port.

Throughput, per job: N jobs put with a 1 ms delay, then claimed and acked
until none is left, in one process (N=5000; 1000 for arq).  ``dq_core-batched``: ``put_many``,
``get_many``, ``ack_many`` by 500; ``dq_core-single``: ``put``, ``get``,
``ack`` one job at a time (three round trips per job);
``dq_core-batched-overlapped``: batched, with a producer thread on its own
connection putting while the consumer claims and acks (N=20000), as a
producer process and a consumer process would; ``arq``: its
``enqueue_job(_defer_by=...)`` (arq has no batch enqueue), then a burst
worker (``max_jobs=500``, ``keep_result=0``, ``poll_delay=0.01``) runs a
no-op job function on each.  ``dq_core-latency``: one job put, claimed and
acked (a round trip each), alone.

``--lateness`` (a timed script, not pyperf): how long after its deadline a
waiting consumer gets a job, for a RedisDelayQueue consumer and for an arq
worker (its default ``poll_delay`` of 0.5 s, and 0.05 s), and how long a
``get`` waiting in another thread takes to see a job put due at once.

``--waiters`` (timed, not pyperf): with 20 threads waiting, the claim
scripts and the Redis CPU time per job (``INFO commandstats``), when the
threads share one queue object and when each has its own (as 20
processes would).
"""

from __future__ import annotations

import asyncio
import logging
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis

from dq_core.redis import RedisDelayQueue

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from redis_server import RedisServer  # noqa: E402

try:
    import arq
    from arq.connections import RedisSettings
    from arq.worker import Worker
except ImportError:  # the comparison is skipped, and the output says so
    arq = None

BATCH = 500
DELAY = 0.001


def _produce(q: RedisDelayQueue, n: int) -> None:
    payloads = [b"x" * 64] * BATCH
    delays = [DELAY] * BATCH
    for _ in range(n // BATCH):
        q.put_many(payloads, delays)


def _consume(q: RedisDelayQueue, n: int) -> None:
    done = 0
    while done < n:
        jobs = q.get_many(BATCH, timeout=1)
        q.ack_many(jobs)
        done += len(jobs)


def dq_batched(loops: int, port: int, n: int, overlapped: bool = False) -> float:
    """n jobs put in batches, then claimed and acked in batches.  ``overlapped``:
    a producer thread on its own connection puts while the consumer claims and
    acks, as separate producer and consumer processes would (a client waiting
    on Redis holds no GIL)."""
    consumer = RedisDelayQueue("bench-batched", redis.Redis(port=port))
    producer = RedisDelayQueue("bench-batched", redis.Redis(port=port))
    consumer.clear()
    total = 0.0
    for _ in range(loops):
        t0 = time.perf_counter()
        if overlapped:
            feeder = threading.Thread(target=_produce, args=(producer, n))
            feeder.start()
            _consume(consumer, n)
            feeder.join()
        else:
            _produce(producer, n)
            _consume(consumer, n)
        total += time.perf_counter() - t0
    return total


def dq_single(loops: int, port: int, n: int) -> float:
    q = RedisDelayQueue("bench-single", redis.Redis(port=port))
    q.clear()
    payload = b"x" * 64
    total = 0.0
    for _ in range(loops):
        t0 = time.perf_counter()
        for _ in range(n):
            q.put(payload, DELAY)
        for _ in range(n):
            q.ack(q.get(timeout=1))  # type: ignore[arg-type]
        total += time.perf_counter() - t0
    return total


def dq_latency(loops: int, port: int) -> float:
    q = RedisDelayQueue("bench-latency", redis.Redis(port=port))
    q.clear()
    t0 = time.perf_counter()
    for _ in range(loops):
        q.put(b"x")
        q.ack(q.get(timeout=1))  # type: ignore[arg-type]
    return time.perf_counter() - t0


async def _noop(ctx: Any) -> None:
    pass


async def _arq_round(port: int, n: int) -> float:
    settings = RedisSettings(port=port)
    pool = await arq.create_pool(settings)
    await pool.flushdb()
    worker = Worker(functions=[_noop], redis_settings=settings, burst=True, max_jobs=BATCH,
                    keep_result=0, poll_delay=0.01, handle_signals=False)
    t0 = time.perf_counter()
    for _ in range(n):
        await pool.enqueue_job("_noop", _defer_by=DELAY)
    await worker.main()
    elapsed = time.perf_counter() - t0
    assert worker.jobs_complete == n, worker.jobs_complete
    await worker.close()
    await pool.aclose()
    return elapsed


def arq_jobs(loops: int, port: int, n: int) -> float:
    return sum(asyncio.run(_arq_round(port, n)) for _ in range(loops))


def add_cmdline_args(cmd: list[str], args: Any) -> None:
    cmd.extend(("--redis-port", str(args.redis_port)))


def bench() -> None:
    import pyperf

    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    runner.argparser.add_argument("--redis-port", type=int, default=0)
    args = runner.parse_args()
    server = None
    if not args.redis_port and not args.worker:
        server = start_server()
        args.redis_port = server.port
    port = args.redis_port
    try:
        n = 5000  # arq: 1000, or a run would take minutes
        group = "end to end per job (put, claim, ack)"
        runner.bench_time_func(f"{group} dq_core-batched", dq_batched, port, n, inner_loops=n)
        runner.bench_time_func(f"{group} dq_core-batched-overlapped", dq_batched, port, 4 * n,
                               True, inner_loops=4 * n)
        runner.bench_time_func(f"{group} dq_core-single", dq_single, port, n, inner_loops=n)
        if arq is not None:
            runner.bench_time_func(f"{group} arq", arq_jobs, port, 1000, inner_loops=1000)
        elif not args.worker:
            print("arq is not installed: no baseline in this run")
        runner.bench_time_func("one job alone: put + get + ack dq_core-latency", dq_latency, port)
    finally:
        if server is not None:
            server.kill()


def start_server(aof: bool = True) -> RedisServer:
    server = RedisServer(Path(tempfile.mkdtemp(prefix="bench-redis-")))
    server.start()
    client = server.client()
    client.config_set("appendfsync", "everysec")
    if not aof:
        client.config_set("appendonly", "no")
    client.close()
    return server


# ---------------------------------------------------------------- lateness

def percentiles(xs: list[float]) -> str:
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=100)
    return f"{q[49] * 1e3:9.2f}{q[98] * 1e3:9.2f}{xs[-1] * 1e3:9.2f}"


def dq_deadline_lateness(port: int, delays: list[float]) -> list[float]:
    q = RedisDelayQueue("lateness", redis.Redis(port=port))
    q.clear()
    q.put_many([b"x"] * len(delays), delays)
    late = []
    for _ in delays:
        job = q.get(timeout=5)
        assert job is not None
        late.append(time.time() - job.deadline)  # the server's clock is this machine's
        q.ack(job)
    q.close()
    return late


def dq_wakeup_latency(port: int, count: int) -> list[float]:
    q = RedisDelayQueue("wakeup", redis.Redis(port=port))
    producer = RedisDelayQueue("wakeup", redis.Redis(port=port))
    q.clear()
    put_at: dict[str, float] = {}
    late: list[float] = []

    def consume() -> None:
        for _ in range(count):
            job = q.get(timeout=5)
            assert job is not None
            late.append(time.perf_counter() - put_at[job.id])
            q.ack(job)

    consumer = threading.Thread(target=consume)
    consumer.start()
    rng = random.Random(2)
    for i in range(count):
        time.sleep(0.002 + rng.random() * 0.005)  # the consumer is waiting again
        put_at[f"j{i}"] = time.perf_counter()
        producer.put(b"x", job_id=f"j{i}")
    consumer.join()
    q.close()
    return late


async def _arq_lateness(port: int, delays: list[float], poll_delay: float) -> list[float]:
    settings = RedisSettings(port=port)
    pool = await arq.create_pool(settings)
    await pool.flushdb()
    late: list[float] = []

    async def record(ctx: Any, deadline: float) -> None:
        late.append(time.time() - deadline)

    record.__qualname__ = record.__name__ = "record"
    worker = Worker(functions=[record], redis_settings=settings, max_jobs=100,
                    keep_result=0, poll_delay=poll_delay, handle_signals=False)
    running = asyncio.ensure_future(worker.main())  # polling before the first deadline
    now = time.time()
    for d in delays:
        await pool.enqueue_job("record", now + d, _defer_until=_when(now + d))
    while len(late) < len(delays):
        await asyncio.sleep(0.05)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    await worker.close()
    await pool.aclose()
    return late


def _when(t: float) -> Any:
    from datetime import datetime, timezone
    return datetime.fromtimestamp(t, tz=timezone.utc)


def lateness() -> None:
    logging.getLogger("arq").setLevel(logging.WARNING)
    rng = random.Random(1)
    delays = [0.2 + rng.random() * 2 for _ in range(200)]
    server = start_server(aof=False)
    try:
        rows = [("RedisDelayQueue, no AOF", dq_deadline_lateness(server.port, delays))]
    finally:
        server.kill()
    server = start_server()
    try:
        rows.append(("RedisDelayQueue, AOF everysec", dq_deadline_lateness(server.port, delays)))
        if arq is not None:
            for poll in (0.5, 0.05):
                rows.append((f"arq worker, poll_delay={poll}",
                             asyncio.run(_arq_lateness(server.port, delays, poll))))
        print(f"lateness after the deadline, {len(delays)} jobs, delays uniform in [0.2, 2.2) s; ms")
        print(f"{'':<32}{'p50':>9}{'p99':>9}{'max':>9}   jobs")
        for label, late in rows:
            assert min(late) >= -0.002, (label, min(late))  # the clocks are read apart
            print(f"{label:<32}{percentiles(late)}   {len(late)}")
        if arq is None:
            print("arq is not installed: no arq rows")
        wake = dq_wakeup_latency(server.port, 500)
        print(f"{'put -> waiting get, AOF everysec':<32}{percentiles(wake)}   {len(wake)}")
    finally:
        server.kill()


def waiter_cost(port: int, waiters: int, jobs: int, objects: int) -> tuple[float, float]:
    """Claim scripts and Redis CPU (us, INFO commandstats) per job with
    ``waiters`` threads waiting, over ``objects`` queue objects (one object
    stands for one process), for ``jobs`` puts 2 ms apart."""
    name = f"waiters-{waiters}-{objects}"
    queues = [RedisDelayQueue(name, redis.Redis(port=port, max_connections=64))
              for _ in range(objects)]
    producer = RedisDelayQueue(name, redis.Redis(port=port))
    admin = redis.Redis(port=port)
    got: list[str] = []
    stop = threading.Event()

    def work(q: RedisDelayQueue) -> None:
        while not stop.is_set():
            job = q.get(timeout=0.5)
            if job is not None:
                got.append(job.id)
                q.ack(job)

    threads = [threading.Thread(target=work, args=(queues[i % objects],)) for i in range(waiters)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    admin.config_resetstat()
    for _ in range(jobs):
        producer.put(b"x")
        time.sleep(0.002)
    while len(got) < jobs:
        time.sleep(0.01)
    stats = admin.info("commandstats")["cmdstat_evalsha"]
    stop.set()
    for t in threads:
        t.join()
    for q in queues + [producer]:
        q.close()
        q.client.close()
    admin.close()
    return (stats["calls"] - 2 * jobs) / jobs, stats["usec"] / jobs


def waiters() -> None:
    server = start_server()
    try:
        print("20 waiting threads, 1000 puts 2 ms apart: claim scripts and Redis CPU (EVALSHA usec,")
        print("INFO commandstats: puts, claims and acks) per job")
        for objects in (1, 20):
            claims, usec = waiter_cost(server.port, 20, 1000, objects)
            label = "one queue object" if objects == 1 else f"{objects} queue objects (as processes)"
            print(f"  {label:<40} {claims:6.2f} claims/job {usec:8.1f} us/job")
    finally:
        server.kill()


if __name__ == "__main__":
    if "--lateness" in sys.argv:
        lateness()
    elif "--waiters" in sys.argv:
        waiters()
    else:
        bench()
