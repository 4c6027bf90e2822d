"""A consumer process for the Redis queue tests: ``python redis_consumer.py PORT NAME KIND MODE ...``.

KIND is ``sync`` (RedisDelayQueue) or ``async`` (AsyncRedisDelayQueue).  It
prints one JSON document per line on stdout:

- ``drain BATCH``: print ``{"ready": true}``, wait for a line on stdin
  (the test's go, once every consumer is up and the jobs are in), then
  claim with ``get_many(BATCH, timeout)``, ack, until nothing is left;
  then ``{"ids": [...], "attempts": [...], "acked": n}``.
- ``hold N LEASE``: claim N jobs with a lease of LEASE seconds, print
  ``{"held": [...], "server_time": t}``, then sleep (the test kills it).
- ``wait TIMEOUT``: print ``{"ready": true}``, then one blocking ``get`` and
  ``{"id": ..., "payload": ..., "deadline": ..., "server_time": t}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import redis
import redis.asyncio as aredis

from dq_core.redis import AsyncRedisDelayQueue, RedisDelayQueue


def say(**doc: Any) -> None:
    print(json.dumps(doc), flush=True)


def server_time(client: redis.Redis) -> float:
    s, us = client.time()
    return s + us / 1e6


async def main(port: int, name: str, kind: str, mode: str, args: list[str]) -> None:
    sync_client = redis.Redis(port=port)
    lease = float(args[1]) if mode == "hold" else 30.0
    if kind == "sync":
        q: Any = RedisDelayQueue(name, sync_client, lease=lease)
    else:
        q = AsyncRedisDelayQueue(name, aredis.Redis(port=port), lease=lease)

    async def call(method: str, *a: Any) -> Any:
        out = getattr(q, method)(*a)
        return await out if kind == "async" else out

    if mode == "drain":
        say(ready=True)
        sys.stdin.readline()
        ids: list[str] = []
        attempts: list[int] = []
        acked = 0
        while True:
            jobs = await call("get_many", int(args[0]), 0.5)
            if not jobs:
                if await call("qsize") == 0:
                    break
                continue
            ids += [j.id for j in jobs]
            attempts += [j.attempts for j in jobs]
            acked += sum(await call("ack_many", jobs))
        say(ids=ids, attempts=attempts, acked=acked)
    elif mode == "hold":
        jobs = await call("get_many", int(args[0]), 5)
        say(held=[j.id for j in jobs], server_time=server_time(sync_client))
        time.sleep(3600)
    elif mode == "wait":
        say(ready=True)
        job = await call("get", float(args[0]))
        say(
            id=job.id,
            payload=job.payload.decode(),
            deadline=job.deadline,
            server_time=server_time(sync_client),
        )


if __name__ == "__main__":
    port, name, kind, mode, *rest = sys.argv[1:]
    asyncio.run(main(int(port), name, kind, mode, rest))
