"""pyperf: dq_core.redis end to end against arq's delayed jobs, on one redis-server, in one run.

    python perf/bench_redis.py --fast -o redis.json && python perf/compare.py redis.json
    python perf/bench_redis.py --lateness
    python perf/bench_redis.py --waiters
    python perf/bench_redis.py --peers

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

``--peers [LIB ...] [--pattern backlog|paced] [--jobs N] [--commands]``
(timed, not pyperf): job for job against arq, saq, rq, dramatiq and BullMQ's
Python port (``pip install arq saq rq "dramatiq[redis]" bullmq``), on one
redis-server in one run.  Each library gets 2 worker processes, started
and waiting; a producer then puts immediate jobs one call each (``put``,
``enqueue_job``, ``enqueue``, ``send``, ``add``), as fast as it goes
(``backlog``, 2000 jobs) or one every 2 ms (``paced``, 1000 jobs: every
job wakes a waiting worker); the workers run a no-op job function, keeping
no result (arq ``keep_result=0``, saq ``ttl=-1``, rq ``result_ttl=0``,
BullMQ ``removeOnComplete``; dramatiq keeps none).  dq_core's workers run
the README's loop (``get``, then ``ack``); the peers' run as shipped (arq
10 jobs at a time, polling every 0.5 s; saq 10; rq's ``SimpleWorker``, one;
dramatiq 8 threads; BullMQ 1).  Measured from the first put to the last job
run: the server's CPU time (``INFO cpu``, user + sys) per job, its commands
per job (``INFO commandstats``: calls per job x microseconds per call; a
script's commands are counted inside its ``evalsha`` time too), and jobs/s.
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
    worker = Worker(
        functions=[_noop],
        redis_settings=settings,
        burst=True,
        max_jobs=BATCH,
        keep_result=0,
        poll_delay=0.01,
        handle_signals=False,
    )
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
        runner.bench_time_func(
            f"{group} dq_core-batched-overlapped", dq_batched, port, 4 * n, True, inner_loops=4 * n
        )
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
    worker = Worker(
        functions=[record],
        redis_settings=settings,
        max_jobs=100,
        keep_result=0,
        poll_delay=poll_delay,
        handle_signals=False,
    )
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
                rows.append(
                    (f"arq worker, poll_delay={poll}", asyncio.run(_arq_lateness(server.port, delays, poll)))
                )
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
    queues = [RedisDelayQueue(name, redis.Redis(port=port, max_connections=64)) for _ in range(objects)]
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


# ---------------------------------------------------------------- job for job, against the peers

#: The libraries ``--peers`` runs, in its table's order.
PEERS = ("dq_core", "arq", "saq", "rq", "dramatiq", "bullmq")
_DONE: Any = None  # a worker process's shared count of the jobs it ran


def _ran() -> None:
    with _DONE.get_lock():
        _DONE.value += 1


async def peer_noop(ctx: Any = None) -> None:  # arq and saq pass a context
    _ran()


def peer_noop_sync() -> None:  # rq
    _ran()


async def peer_noop_bullmq(job: Any, token: str) -> None:
    _ran()


def _dramatiq_actor(port: int) -> Any:
    """The no-op actor on a RedisBroker (declared where it is used: the broker first)."""
    import dramatiq
    from dramatiq.brokers.redis import RedisBroker

    broker = RedisBroker(host="127.0.0.1", port=port)  # type: ignore[no-untyped-call]
    broker.middleware = [
        m
        for m in broker.middleware  # what a result-less job needs
        if type(m).__name__ not in ("Prometheus",)
    ]
    dramatiq.set_broker(broker)

    @dramatiq.actor(actor_name="peer_noop", queue_name="peers", max_retries=0)
    def noop() -> None:
        _ran()

    return noop


def _peer_worker(lib: str, port: int, done: Any, ready: Any) -> None:
    """One worker process of ``lib``: runs jobs one at a time until terminated."""
    global _DONE
    _DONE = done
    if __name__ != "bench_redis":  # rq imports its job function from the module by name
        sys.modules.setdefault("bench_redis", sys.modules[__name__])
    logging.disable(logging.WARNING)
    url = f"redis://127.0.0.1:{port}"
    if lib == "dq_core":
        q = RedisDelayQueue("peers", redis.Redis(port=port))
        ready.release()
        job = None
        while True:  # the worker loop: each get acks the job before (one script)
            job = q.get(timeout=5, ack=job)
            if job is not None:
                _ran()
    elif lib == "arq":
        from arq.worker import func

        async def run_arq() -> None:  # made in its loop: arq binds it at construction
            worker = Worker(
                functions=[func(peer_noop, name="peer_noop")],
                redis_settings=RedisSettings(port=port),
                keep_result=0,
                handle_signals=False,
            )
            ready.release()
            await worker.main()

        asyncio.run(run_arq())
    elif lib == "saq":
        import saq

        async def run_saq() -> None:
            queue = saq.Queue.from_url(url, name="peers")
            worker = saq.Worker(queue, functions=[peer_noop])
            ready.release()
            await worker.start()

        asyncio.run(run_saq())
    elif lib == "rq":
        import rq

        conn = redis.Redis(port=port)
        simple = rq.SimpleWorker([rq.Queue("peers", connection=conn)], connection=conn)
        ready.release()
        simple.work(logging_level="WARNING")
    elif lib == "dramatiq":
        import dramatiq

        actor = _dramatiq_actor(port)
        threads = dramatiq.Worker(actor.broker)
        threads.start()
        ready.release()
        threading.Event().wait()
    elif lib == "bullmq":
        import bullmq  # type: ignore[import-untyped]

        async def run_bullmq() -> None:
            bullmq.Worker("peers", peer_noop_bullmq, {"connection": url, "concurrency": 1})
            ready.release()
            await asyncio.Event().wait()

        asyncio.run(run_bullmq())


def _produce_peer(lib: str, port: int, n: int, pace: float = 0.0) -> None:
    """Put ``n`` jobs due at once, one call each, as fast as the client goes
    (``pace``: a pause of that many seconds before each put)."""
    url = f"redis://127.0.0.1:{port}"
    if lib == "dq_core":
        q = RedisDelayQueue("peers", redis.Redis(port=port))
        for _ in range(n):
            time.sleep(pace)
            q.put(b"x")
        q.client.close()
    elif lib == "rq":
        import rq

        queue = rq.Queue("peers", connection=redis.Redis(port=port))
        for _ in range(n):
            time.sleep(pace)
            queue.enqueue("bench_redis.peer_noop_sync", result_ttl=0)  # rq refuses __main__
    elif lib == "dramatiq":
        actor = _dramatiq_actor(port)
        for _ in range(n):
            time.sleep(pace)
            actor.send()
    else:

        async def produce() -> None:
            if lib == "arq":
                pool = await arq.create_pool(RedisSettings(port=port))
                for _ in range(n):
                    await asyncio.sleep(pace)
                    await pool.enqueue_job("peer_noop")
                await pool.aclose()
            elif lib == "saq":
                import saq

                queue = saq.Queue.from_url(url, name="peers")
                for _ in range(n):
                    await asyncio.sleep(pace)
                    await queue.enqueue("peer_noop", ttl=-1)
                await queue.disconnect()
            else:
                import bullmq

                queue = bullmq.Queue("peers", {"connection": url})
                for _ in range(n):
                    await asyncio.sleep(pace)
                    await queue.add("peer_noop", {}, {"removeOnComplete": True})
                await queue.close()

        asyncio.run(produce())


def _server_cpu(admin: redis.Redis) -> float:
    info: Any = admin.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def peer_run(lib: str, port: int, n: int, pace: float = 0.0, workers: int = 2) -> dict[str, Any]:
    """``n`` jobs due at once, put one call each while ``workers`` processes
    run them one at a time: Redis CPU (``INFO cpu``, the server's user + sys
    time) and commands (``INFO commandstats``) per job, and jobs/s, from the
    first put to the last job run."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    admin = redis.Redis(port=port)
    admin.flushall()
    done = ctx.Value("q", 0)
    ready = ctx.Semaphore(0)
    procs = [
        ctx.Process(target=_peer_worker, args=(lib, port, done, ready), daemon=True) for _ in range(workers)
    ]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            if not ready.acquire(timeout=60):
                raise RuntimeError(f"{lib}: a worker did not start")
        time.sleep(1.5)  # every worker waiting
        admin.config_resetstat()
        cpu0, t0 = _server_cpu(admin), time.perf_counter()
        _produce_peer(lib, port, n, pace)
        end = time.monotonic() + 120
        while done.value < n and time.monotonic() < end:
            time.sleep(0.002)
        elapsed = time.perf_counter() - t0
        cpu = _server_cpu(admin) - cpu0
        stats: Any = admin.info("commandstats")
        ran = done.value
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(10)
        admin.close()
    if ran < n:
        raise RuntimeError(f"{lib}: {ran} of {n} jobs ran in 120 s")
    calls = {
        k[len("cmdstat_") :]: (v["calls"] / n, v["usec_per_call"])
        for k, v in stats.items()
        if k not in ("cmdstat_config", "cmdstat_info")
    }
    return {
        "lib": lib,
        "jobs": n,
        "cpu_us": cpu * 1e6 / n,
        "jobs_s": n / elapsed,
        "usec": sum(v["usec"] for k, v in stats.items() if k not in ("cmdstat_config", "cmdstat_info")) / n,
        "calls": calls,
    }


#: The two patterns of ``--peers``: (label, pause before each put, jobs).
PATTERNS = (
    ("backlog: puts as fast as one producer goes", 0.0, 2000),
    ("paced: a put every 2 ms, the workers waiting for it", 0.002, 1000),
)


def _arg(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def peers() -> None:
    """``--peers [LIB ...] [--jobs N] [--pattern backlog|paced] [--commands]``."""
    libs = [a for a in sys.argv[2:] if a in PEERS] or list(PEERS)
    patterns = [p for p in PATTERNS if p[0].startswith(_arg("--pattern", ""))]
    server = start_server()
    try:
        info: Any = server.client().info("server")
        version = info["redis_version"]
        print(
            f"immediate jobs put one call each, run by 2 worker processes per library "
            f"(dq_core: get(ack=the job before), one script a job after its put; the peers' workers as shipped); one redis-server "
            f"{version} (AOF everysec); Redis CPU: "
            f"the server's user + sys time per job (INFO cpu), from the first put to the last "
            f"job run"
        )
        for label, pace, jobs in patterns:
            n = int(_arg("--jobs", str(jobs)))
            print(f"{label} ({n} jobs)")
            rows = []
            for lib in libs:
                try:
                    row = peer_run(lib, server.port, n, pace)
                except (ImportError, RuntimeError) as exc:
                    print(f"  {lib}: not measured ({type(exc).__name__}: {exc})")
                    continue
                rows.append(row)
                top = sorted(row["calls"].items(), key=lambda kv: -kv[1][0] * kv[1][1])
                top = top if "--commands" in sys.argv else top[:8]
                print(
                    f"  {lib:<9}{row['cpu_us']:7.1f} us Redis CPU/job {row['jobs_s']:6.0f} jobs/s"
                    f"  (commandstats {row['usec']:.1f} us/job: "
                    + ", ".join(f"{k} {c:.2f}x{u:.1f}us" for k, (c, u) in top)
                    + ")",
                    flush=True,
                )
            base = next((r for r in rows if r["lib"] == "dq_core"), None)
            if base is not None and len(rows) > 1:
                print(
                    f"  {'':<9}{'Redis CPU/job':>15}{'jobs/s':>9}{'its CPU/dq_core':>17}"
                    f"{'dq_core jobs/s / its':>22}"
                )
                for r in rows:
                    print(
                        f"  {r['lib']:<9}{r['cpu_us']:12.1f} us{r['jobs_s']:9.0f}"
                        f"{r['cpu_us'] / base['cpu_us']:16.2f}x"
                        f"{base['jobs_s'] / r['jobs_s']:21.2f}x",
                        flush=True,
                    )
    finally:
        server.kill()


if __name__ == "__main__":
    if "--lateness" in sys.argv:
        lateness()
    elif "--waiters" in sys.argv:
        waiters()
    elif "--peers" in sys.argv:
        peers()
    else:
        bench()
