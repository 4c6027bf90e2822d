"""dq_core.redis on a real Redis Cluster: three ``redis-server --cluster-enabled
yes`` on loopback ports, joined by ``redis-cli --cluster create``.  A queue's
keys all carry the hash tag ``{name}``, so one queue lives in one slot and
every script runs on one node."""

from __future__ import annotations

import asyncio
import inspect
import random
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, List

import pytest
import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.crc import key_slot

from dq_core.redis import AsyncRedisDelayQueue, RedisDelayQueue, RetryPolicy
from redis_server import SERVER, free_port

CLI = shutil.which("redis-cli")


def cluster_port() -> int:
    """A free port whose cluster bus port (10000 higher) is free too."""
    while True:
        port = free_port()
        if port > 55535:  # the bus port would pass 65535
            port = random.randrange(20000, 55535)
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[List[int]]:
    assert SERVER is not None and CLI is not None  # else conftest.py skipped the test
    ports = [cluster_port() for _ in range(3)]
    procs = []
    try:
        for port in ports:
            d: Path = tmp_path_factory.mktemp(f"cluster{port}")
            procs.append(
                subprocess.Popen(
                    [
                        SERVER,
                        "--port",
                        str(port),
                        "--bind",
                        "127.0.0.1",
                        "--dir",
                        str(d),
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        str(d / "nodes.conf"),
                        "--appendonly",
                        "no",
                        "--save",
                        "",
                        "--loglevel",
                        "warning",
                        "--logfile",
                        str(d / "redis.log"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        end = time.monotonic() + 20
        for port in ports:  # a socket, not a client: redis-py 6+ backs off between retries
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < end, "a cluster node did not start"
                    time.sleep(0.05)
        subprocess.run(
            [
                CLI,
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in ports),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        end = time.monotonic() + 30
        for port in ports:
            probe = redis.Redis(port=port)
            while b"cluster_state:ok" not in probe.execute_command("CLUSTER", "INFO"):
                assert time.monotonic() < end, "the cluster did not come up"
                time.sleep(0.1)
            probe.close()
        yield ports
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(20)


async def call(obj: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    out = getattr(obj, method)(*args, **kwargs)
    return await out if inspect.isawaitable(out) else out


def run_on_cluster(
    cluster: List[int], kind: str, name: str, scenario: Callable[[Any], Awaitable[None]], **options: Any
) -> None:
    """Run ``scenario(q)`` on a queue of ``kind`` on the cluster, closed whatever happens."""
    if kind == "sync":
        client: Any = RedisCluster(host="127.0.0.1", port=cluster[0])
        face: Any = RedisDelayQueue
    else:
        client, face = AsyncRedisCluster(host="127.0.0.1", port=cluster[0]), AsyncRedisDelayQueue

    async def main() -> None:
        q = face(name, client, **options)
        try:
            await scenario(q)
        finally:
            if kind == "sync":
                q.close()
                client.close()
            else:
                await q.aclose()
                await client.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_queue_works_on_a_cluster_from_one_slot(cluster, kind):
    name = "orders-" + uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        ids = await call(q, "put_many", [b"a", b"b", b"c"])
        late = await call(q, "put", b"late", 0.3)
        assert await call(q, "stats") == {"delayed": 1, "due": 3, "leased": 0, "dead": 0}
        a, b, c = await call(q, "get_many", 10)
        assert [a.id, b.id, c.id] == ids
        assert await call(q, "ack", a) and not await call(q, "ack", a)
        assert await call(q, "nack", b, delay=0.1)
        job = await call(q, "get", timeout=5)  # a wait: subscribed on the cluster
        assert (job.id, job.attempts) == (b.id, 2)
        assert await call(q, "nack", job)  # past max_attempts: dead
        got = await call(q, "get", timeout=5)
        assert got.id == late and await call(q, "ack", got)
        time.sleep(0.35)  # c's lease ends; one attempt left
        again = await call(q, "get", timeout=5)
        assert (again.id, again.attempts) == (c.id, 2)
        assert await call(q, "ack", again)
        [dead] = await call(q, "dead")
        assert dead.id == b.id and dead.reason.startswith("nacked")
        assert await call(q, "requeue_dead", b.id)
        assert (await call(q, "get", 0)).id == b.id
        [sub] = q._idle  # the waits' subscription, kept for the next: it hears a publish
        node = redis.Redis(port=cluster[1])  # a publish on one node reaches every node
        node.publish(q.channel, b"hello")
        node.close()
        heard = []
        while b"hello" not in heard and len(heard) < 10:
            heard.append((await sub.message(5.0) or {}).get("data"))
        assert b"hello" in heard, heard
        slots = {key_slot(k.encode()) for k in q.keys} | {key_slot(q.channel.encode())}
        assert len(slots) == 1
        await call(q, "clear")
        assert await call(q, "stats") == {"delayed": 0, "due": 0, "leased": 0, "dead": 0}

    run_on_cluster(cluster, kind, name, scenario, lease=0.3, max_attempts=2)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_priorities_retry_rate_and_peek_on_a_cluster(cluster, kind):
    # the keys these add (qp, rdy, pri; meta's policy and bucket) are the queue's
    # own, in its one slot: every script runs on one node
    name = "features-" + uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        low = await call(q, "put", b"low", priority=5)
        high = await call(q, "put", b"high", priority=-5)
        assert [j.id for j in await call(q, "peek")] == [high, low]
        [job] = await call(q, "get_many", 10)  # the burst: one token
        assert job.id == high
        assert await call(q, "nack", job)  # the policy: due again 0.01 s later
        got = await call(q, "get", timeout=5)  # the next token (0.2 s), then high again
        assert (got.id, got.attempts) == (high, 2)
        assert (await call(q, "get", timeout=5)).id == low
        slots = {key_slot(k.encode()) for k in q.keys}
        assert len(slots) == 1
        await call(q, "clear")

    run_on_cluster(cluster, kind, name, scenario, rate=5, retry=RetryPolicy(base=0.01, jitter=0.0))
