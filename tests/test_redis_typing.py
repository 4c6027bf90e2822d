"""dq_core.redis as a type checker sees it: mypy --strict over a small program.

The queue is generic in its payload: ``RedisDelayQueue[bytes | str]`` by
default, ``RedisDelayQueue[T]`` with a ``Serializer[T]``; ``assert_type``
catches an ``Any`` leak, and the lines marked ``# E: <code>`` must be the
only errors.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
from __future__ import annotations

import json
from typing import Union

import redis
import redis.asyncio as aredis
from typing_extensions import assert_type

from dq_core.redis import AsyncRedisDelayQueue, Job, RedisDelayQueue


class JSON:
    def dumps(self, obj: dict[str, int]) -> str:
        return json.dumps(obj)

    def loads(self, data: bytes) -> dict[str, int]:
        out: dict[str, int] = json.loads(data)
        return out


def check_sync(client: redis.Redis) -> None:
    q = RedisDelayQueue("q", client)
    assert_type(q, RedisDelayQueue[Union[bytes, str]])
    assert_type(q.put(b"x", 1.0), str)
    assert_type(q.put_many(["a", b"b"], [0, 1.5]), list[str])
    assert_type(q.get(timeout=1), Union[Job[Union[bytes, str]], None])
    assert_type(q.get_many(10), list[Job[Union[bytes, str]]])
    assert_type(q.ack_many(q.get_many(10)), list[bool])
    assert_type(q.stats(), dict[str, int])
    assert_type(q.dead(), list[Job[Union[bytes, str]]])
    q.put(42)  # E: arg-type
    typed = RedisDelayQueue("q", client, serializer=JSON())
    assert_type(typed, RedisDelayQueue[dict[str, int]])
    job = typed.get()
    if job is not None:
        assert_type(job.payload, dict[str, int])
        assert_type(job.attempts, int)
        assert_type(job.reason, Union[str, None])
        with typed.keep_alive(job) as lost:
            assert_type(lost.is_set(), bool)
    typed.put(b"raw")  # E: arg-type
    assert_type(q.put(b"x", job_id="k", if_exists="keep"), str)
    q.put(b"x", if_exists="skip")  # E: arg-type
    assert_type(q.dead(10, start=20), list[Job[Union[bytes, str]]])
    assert_type(q.purge_dead(older_than=3600), int)
    RedisDelayQueue("q", client, max_attempts=3, dead_ttl=86400.0, dead_max=10_000)


async def check_async(client: aredis.Redis) -> None:
    q = AsyncRedisDelayQueue("q", client, serializer=JSON())
    job = await q.get()
    if job is not None:
        assert_type(job.payload, dict[str, int])
        assert_type(await q.ack(job), bool)
        async with q.keep_alive(job) as lost:
            assert_type(lost.is_set(), bool)
    assert_type(await q.qsize(), int)
    assert_type(await q.purge_dead(), int)
    RedisDelayQueue("q", client)  # E: call-overload
"""


def test_redis_queue_types(tmp_path):
    pytest.importorskip("mypy")
    case = tmp_path / "case.py"
    case.write_text(PROGRAM)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--show-error-codes",
            "--no-error-summary",
            "--no-pretty",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            str(case),
        ],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
    )
    found = sorted(
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"case\.py:(\d+): error: .*\[([\w-]+)\]$", out.stdout, re.M)
    )
    expected = sorted(
        (n, m.group(1))
        for n, line in enumerate(PROGRAM.splitlines(), 1)
        if (m := re.search(r"# E: ([\w-]+)$", line))
    )
    assert len(expected) == 4
    assert found == expected, out.stdout + out.stderr
