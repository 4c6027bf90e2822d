"""What the Redis fault tests share: queues of either kind (``make``, ``call``,
``close``, ``run_on``, ``keep_alive``), a fault-injecting proxy in front of
the module's server (``proxy``, ``lose_a_reply``), and the queue's
invariants read from Redis itself (``check``): no job lost or made up, every
job in exactly the structure its state names, ``stats()`` equal to the
structures' sizes, attempts equal to deliveries.  The perf/redis_*.py
scripts use ``wait_until_done``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Dict, Iterable, List

import pytest
import redis
import redis.asyncio as aredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from dq_core.redis import AsyncRedisDelayQueue, RedisDelayQueue
from dq_core.redis._scripts import SOURCES
from redis_proxy import Proxy
from redis_server import RedisServer


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def proxy(redis_server: RedisServer) -> Any:
    """A proxy to the module's server, whose script cache holds the scripts:
    the reply dropped is the script's, not a NOSCRIPT error's."""
    c = redis_server.client()
    for src in SOURCES.values():
        c.script_load(src)
    c.close()
    p = Proxy(redis_server.port)
    yield p
    p.close()
    assert p.errors == []


def make(kind: str, port: int, name: str, own_retries: bool = True, **options: Any) -> Any:
    """A queue of ``kind`` on a new client of the server at ``port``.

    ``own_retries=False``: a client that does not retry a command itself
    (redis-py 6+ does, up to 10 times with backoff by default), so that a
    test's outage reaches the queue's own retries at once on every redis-py."""
    if kind == "sync":
        extra: Dict[str, Any] = {} if own_retries else {"retry": Retry(NoBackoff(), 0)}
        return RedisDelayQueue(name, redis.Redis(port=port, **extra), **options)
    extra = {} if own_retries else {"retry": AsyncRetry(NoBackoff(), 0)}
    return AsyncRedisDelayQueue(name, aredis.Redis(port=port, **extra), **options)


async def call(q: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    out = getattr(q, method)(*args, **kwargs)
    return await out if isinstance(q, AsyncRedisDelayQueue) else out


async def close(q: Any) -> None:
    if isinstance(q, AsyncRedisDelayQueue):
        await q.aclose()
        await q.client.aclose()
    else:
        q.close()
        q.client.close()


def check(
    server: RedisServer, name: str, live: Iterable[str], deliveries: Dict[str, List[int]] | None = None
) -> Dict[str, int]:
    """The invariants, read from Redis; returns the stats the structures give."""
    c = server.client()
    try:
        q = RedisDelayQueue(name, c)
        keys = dict(zip(("q", "state", "pay", "lease", "dead"), q.keys))
        state = {k.decode(): v.decode() for k, v in c.hgetall(keys["state"]).items()}
        assert set(state) == set(live), "a job was lost or made up"
        assert set(c.hkeys(keys["pay"])) == {i.encode() for i in live}
        members = {m.decode() for k in (keys["q"], q.keys[8], q.keys[9]) for m in c.zrange(k, 0, -1)}
        leased = {m.decode() for m in c.zrange(keys["lease"], 0, -1)}
        dead = {m.decode() for m in c.zrange(keys["dead"], 0, -1)}
        for job_id, v in state.items():
            kind, rest = v[0], v.split(":", 1)[1]
            if kind in "SP":
                assert rest in members and rest.endswith(job_id)
            elif kind == "L":
                assert job_id in leased
            else:
                assert kind == "D" and job_id in dead
        assert len(members) + len(leased) + len(dead) == len(state)  # each in one place
        if deliveries is not None:  # attempts honest: 1, 2, ... per delivery
            for job_id, attempts in deliveries.items():
                assert attempts == list(range(1, len(attempts) + 1)), (job_id, attempts)
        stats = q.stats()
        assert stats["delayed"] + stats["due"] == len(members)
        assert (stats["leased"], stats["dead"]) == (len(leased), len(dead))
        return stats
    finally:
        c.close()


def run_on(
    kind: str, port: int, name: str, scenario: Callable[[Any], Awaitable[None]], **options: Any
) -> None:
    """Run ``scenario(q)`` on a new queue of ``kind`` at ``port`` (``make``'s
    options), closed whatever happens."""

    async def main() -> None:
        q = make(kind, port, name, **options)
        try:
            await scenario(q)
        finally:
            await close(q)

    asyncio.run(main())


def lose_a_reply(
    kind: str,
    proxy: Proxy,
    name: str,
    op: str,
    scenario: Callable[[Any], Awaitable[None]],
    meanwhile: Callable[[], None] = lambda: None,
    **options: Any,
) -> None:
    """``run_on`` a queue behind the proxy, which drops the reply to the first
    ``op`` script (calling ``meanwhile`` first): exactly one reply is lost."""

    async def lossy(q: Any) -> None:
        proxy.drop_reply(q._scripts[op].sha.encode(), meanwhile)
        await scenario(q)
        assert proxy.dropped == 1

    run_on(kind, proxy.port, name, lossy, **options)


async def keep_alive(q: Any, job: Any, seconds: float) -> bool:
    """Run ``q.keep_alive(job)`` for ``seconds``; whether the lease was lost."""
    if isinstance(q, RedisDelayQueue):
        with q.keep_alive(job) as lost:
            await asyncio.sleep(seconds)
        return lost.is_set()
    async with q.keep_alive(job) as lost:
        await asyncio.sleep(seconds)
    return lost.is_set()


def wait_until_done(q: RedisDelayQueue, seconds: float = 60.0) -> bool:
    """Wait until ``q`` holds no job but dead ones (at most ``seconds``); whether it did."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        stats = q.stats()
        if stats["delayed"] + stats["due"] + stats["leased"] == 0:
            return True
        time.sleep(0.2)
    return False


async def subscribed(q: Any) -> None:
    """Make ``q`` a waiter that waited: subscribed, its subscription kept idle,
    and among the idle waiters (a short ``get`` may time out before it
    subscribes, on a busy machine)."""
    for _ in range(100):
        assert await call(q, "get", 0.1) is None
        if q._idle:
            return
    raise AssertionError("the queue never subscribed")
