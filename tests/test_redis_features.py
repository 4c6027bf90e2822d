"""dq_core.redis: priorities, retries, rates, recurring jobs, the command line, on a real server.

Every scenario is written once as a coroutine over either face (``kind``:
RedisDelayQueue or AsyncRedisDelayQueue), as in tests/test_redis_queue.py.
"""

from __future__ import annotations

import asyncio
import base64
import calendar
import copy
import datetime
import io
import json
import math
import os
import pickle
import re
import subprocess
import sys
import time
import uuid
from typing import Any, Awaitable, Callable

import pytest

from dq_core.redis import Cron, RedisDelayQueue, RetryPolicy
from dq_core.redis._cli import main
from redis_queues import call, check, close, kind, make, subscribed  # noqa: F401 (fixture)
from redis_server import RedisServer, free_port, redis_server  # noqa: F401 (fixture)


def scenario_on(kind: str, server: RedisServer, body: Callable[..., Awaitable[None]], **options: Any) -> str:
    """Run ``body(q, c)`` on a new queue of ``kind`` (``c``: ``call`` bound to it)
    with a fresh name; return the name."""
    name = uuid.uuid4().hex

    async def main() -> None:
        q = make(kind, server.port, name, **options)

        async def c(method: str, *args: Any, **kwargs: Any) -> Any:
            return await call(q, method, *args, **kwargs)

        try:
            await body(q, c)
        finally:
            await close(q)

    asyncio.run(main())
    return name


def close_all(*queues: RedisDelayQueue[Any]) -> None:
    for queue in queues:
        queue.close()
        queue.client.close()


def server_time(server: RedisServer) -> float:
    client = server.client()
    try:
        s, us = client.time()
        return float(s + us / 1e6)
    finally:
        client.close()


# ---------------------------------------------------------------- priority


def test_due_jobs_come_out_by_priority_then_deadline_then_fifo(kind, redis_server):
    async def body(q, c):
        past = server_time(redis_server) - 10.0
        ids = {}
        ids["a0"] = await c("put_at", b"a0", past + 2)
        ids["b5"] = await c("put_at", b"b5", past, priority=5)
        ids["c-1"] = await c("put_at", b"c-1", past + 3, priority=-1)
        ids["d-1"] = await c("put_at", b"d-1", past + 1, priority=-1.0)  # earlier deadline
        ids["e0"] = await c("put", b"e0", priority=0)
        ids["f-1"] = await c("put_at", b"f-1", past + 3, priority=-1)  # tie: after c-1
        ids["g0"] = await c("put_at", b"g0", past)
        many = await c("put_many", [b"h2", b"i2"], priority=2)
        assert await c("stats") == {"delayed": 0, "due": 9, "leased": 0, "dead": 0}
        first = await c("get", 0)
        assert first.payload == b"d-1" and first.attempts == 1
        assert abs(first.deadline - (past + 1)) < 1e-3  # its own deadline, not its priority
        rest = await c("get_many", 20)
        assert [j.payload for j in rest] == [b"c-1", b"f-1", b"g0", b"a0", b"e0", b"h2", b"i2", b"b5"]
        assert [j.id for j in rest[-3:-1]] == many
        assert await c("ack_many", [first, *rest]) == [True] * 9
        check(redis_server, q.name, [])

    scenario_on(kind, redis_server, body)


def test_a_job_not_yet_due_waits_for_its_deadline_whatever_its_priority(kind, redis_server):
    async def body(q, c):
        await c("put", b"urgent later", 0.3, priority=-100)
        await c("put", b"routine now", priority=100)
        assert await c("stats") == {"delayed": 1, "due": 1, "leased": 0, "dead": 0}
        job = await c("get", 0)
        assert job.payload == b"routine now"
        assert await c("get", 0) is None
        job = await c("get", 5)  # the waiting get wakes at the deadline
        assert job is not None and job.payload == b"urgent later"
        assert server_time(redis_server) >= job.deadline

    scenario_on(kind, redis_server, body)


def test_a_job_keeps_its_priority_through_nack_lease_end_requeue(kind, redis_server):
    async def body(q, c):
        hi = await c("put", b"hi", priority=-5)
        job = await c("get", 0)
        assert job.id == hi and await c("nack", job)
        low = [await c("put", b"low%d" % i) for i in range(3)]
        job = await c("get", 0)
        assert (job.id, job.attempts) == (hi, 2)  # still ahead of the others
        await asyncio.sleep(0.45)  # its lease (0.4 s) ends: due again at its end
        job = await c("get", 0)
        assert (job.id, job.attempts) == (hi, 3)
        assert await c("nack", job)  # third attempt: dead (max_attempts=3)
        [dead] = await c("dead")
        assert dead.id == hi
        assert await c("requeue_dead", hi)
        job = await c("get", 0)
        assert (job.id, job.attempts) == (hi, 1)
        await c("ack", job)
        check(redis_server, q.name, low)

    scenario_on(kind, redis_server, body, lease=0.4, max_attempts=3)


def test_prioritised_jobs_cancel_reschedule_replace(kind, redis_server):
    async def body(q, c):
        await c("put", b"v1", 60, job_id="x", priority=-3)
        await c("put", b"plain")
        assert await c("reschedule", "x", 0)
        job = await c("get", 0)
        assert (job.id, job.payload) == ("x", b"v1")
        await c("ack", job)
        await c("put", b"v2", job_id="x", priority=-3)
        await c("put", b"v3", job_id="x")  # replaced without a priority: behind "plain"
        assert [j.payload for j in await c("get_many", 5)] == [b"plain", b"v3"]
        await c("put", b"v4", job_id="y", priority=1)
        await c("put", b"v5", job_id="z", priority=1)
        assert await c("cancel", "y") and not await c("cancel", "y")
        assert await c("put", b"v6", 0.2, job_id="z", priority=-1) == "z"  # replaced, delayed
        assert await c("stats") == {"delayed": 1, "due": 0, "leased": 2, "dead": 0}
        assert await c("get", 0) is None
        check(redis_server, q.name, ["x", "z", q_plain(redis_server, q)])

    scenario_on(kind, redis_server, body)


def q_plain(server: RedisServer, q: Any) -> str:
    """The id of the leased job whose payload is b"plain"."""
    client = server.client()
    try:
        return next(k.decode() for k, v in client.hgetall(q.keys[2]).items() if v == b"bplain")
    finally:
        client.close()


def test_a_queue_without_priorities_touches_no_priority_key(kind, redis_server):
    async def body(q, c):
        await c("put_many", [b"a", b"b"], [0, 30])
        await c("ack", await c("get", 0))
        client = redis_server.client()
        assert client.exists(*q.keys[8:]) == 0 and not client.hexists(q.keys[6], "pri")
        await c("put", b"p", priority=1)  # from now on the queue has them
        assert client.hexists(q.keys[6], "pri")
        assert (await c("get", 0)).payload == b"p"
        client.close()

    scenario_on(kind, redis_server, body)


@pytest.mark.parametrize(
    "bad, error", [(math.nan, ValueError), (math.inf, ValueError), ("1", TypeError), (2**60, OverflowError)]
)
def test_a_bad_priority_is_refused_naming_it(bad, error, redis_server):
    q = RedisDelayQueue(uuid.uuid4().hex, redis_server.client())
    try:
        with pytest.raises(error, match="priority"):
            q.put(b"x", priority=bad)
        with pytest.raises(error, match="priority"):
            q.put_many([b"x"], priority=bad)
        assert q.qsize() == 0
    finally:
        q.close()
        q.client.close()


# ---------------------------------------------------------------- retry policy


def test_nack_without_a_delay_backs_off_exponentially_then_dead(kind, redis_server):
    policy = RetryPolicy(base=0.1, factor=2.0, max_delay=0.3, jitter=0.0, max_attempts=4)

    async def body(q, c):
        assert q.max_attempts == 4 and q.retry == policy
        jid = await c("put", b"flaky")
        job = await c("get", 5)
        for attempt, wait in ((1, 0.1), (2, 0.2), (3, 0.3)):  # 0.4 capped at 0.3
            assert (job.id, job.attempts) == (jid, attempt)
            before = server_time(redis_server)
            assert await c("nack", job)
            assert await c("get", 0) is None  # not before its backoff
            job = await c("get", 5)
            assert wait <= job.deadline - before < wait + 0.05
        assert await c("nack", job)  # the fourth delivery: dead (max_attempts=4)
        [dead] = await c("dead")
        assert (dead.id, dead.attempts) == (jid, 4) and "max_attempts 4" in dead.reason

    scenario_on(kind, redis_server, body, retry=policy)


def test_the_policy_is_the_queues_stored_and_used_by_every_client(kind, redis_server):
    policy = RetryPolicy(base=30.0, jitter=0.5)

    async def body(q, c):
        producer = RedisDelayQueue(q.name, redis_server.client(), retry=policy)
        producer.put(b"x")  # first contact: the policy is stored with the queue
        assert q.retry is None  # this consumer states none: it uses the stored one
        assert await c("nack", await c("get", 0), 0)  # an explicit delay wins
        job = await c("get", 0)
        assert job.attempts == 2
        before = server_time(redis_server)
        assert await c("nack", job)
        [(member, deadline)] = redis_server.client().zrange(q.keys[0], 0, 0, withscores=True)
        assert 30.0 <= deadline / 1e6 - before <= 60.0 + 0.05  # 30 * 2, less up to half
        with pytest.raises(ValueError, match="retry=RetryPolicy.*conflicts"):
            RedisDelayQueue(q.name, redis_server.client(), retry=RetryPolicy(base=2.0)).qsize()
        same = RedisDelayQueue(q.name, redis_server.client(), retry=RetryPolicy(30.0, jitter=0.5))
        assert same.qsize() == 1
        await c("clear")  # the policy goes with the queue
        other = RedisDelayQueue(q.name, redis_server.client(), retry=RetryPolicy(base=2.0))
        assert other.qsize() == 0
        close_all(producer, same, other)

    scenario_on(kind, redis_server, body)


def test_without_a_policy_a_nack_is_due_again_at_once(kind, redis_server):
    async def body(q, c):
        await c("put", b"x")
        job = await c("get", 0)
        assert await c("nack", job) and (await c("get", 0)).attempts == 2
        assert not redis_server.client().hexists(q.keys[6], "retry")

    scenario_on(kind, redis_server, body)


def test_retry_policy_checks_its_arguments_and_computes_its_delays():
    p = RetryPolicy(base=1.0, factor=3.0, max_delay=20.0, jitter=0.5)
    assert [p.delay(a) for a in (1, 2, 3, 4, 10_000)] == [1.0, 3.0, 9.0, 20.0, 20.0]
    assert p.delay(2, 0.5) == 2.25
    assert p == RetryPolicy(1, 3, 20, 0.5) and hash(p) == hash(RetryPolicy(1, 3, 20, 0.5))
    assert pickle.loads(pickle.dumps(p)) == p and copy.copy(p) == p
    assert repr(RetryPolicy()) == (
        "RetryPolicy(base=1.0, factor=2.0, max_delay=300.0, jitter=0.1, max_attempts=None)"
    )
    with pytest.raises(AttributeError):
        p.base = 2.0  # type: ignore[misc]
    for kwargs, error in [
        ({"base": 0}, ValueError),
        ({"base": math.nan}, ValueError),
        ({"factor": 0.5}, ValueError),
        ({"max_delay": 0.5}, ValueError),
        ({"max_delay": math.inf}, ValueError),
        ({"jitter": 1.5}, ValueError),
        ({"max_attempts": 0}, ValueError),
        ({"base": "1"}, TypeError),
        ({"max_attempts": 1.5}, TypeError),
    ]:
        name = next(iter(kwargs))
        with pytest.raises(error, match=name):
            RetryPolicy(**kwargs)


def test_the_queue_checks_its_retry_argument(redis_server):
    client = redis_server.client()
    with pytest.raises(TypeError, match="retry must be a RetryPolicy"):
        RedisDelayQueue("q", client, retry=2.0)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="max_attempts=3 conflicts with retry.max_attempts=5"):
        RedisDelayQueue("q", client, max_attempts=3, retry=RetryPolicy(max_attempts=5))
    q = RedisDelayQueue("q", client, max_attempts=5, retry=RetryPolicy(max_attempts=5))
    assert "retry=RetryPolicy(base=1.0" in repr(q)
    client.close()


def test_jitter_spreads_jobs_that_failed_together(kind, redis_server):
    async def body(q, c):
        await c("put_many", [b"j"] * 20)
        before = server_time(redis_server)
        for job in await c("get_many", 20):
            assert await c("nack", job)
        scores = [s for _, s in redis_server.client().zrange(q.keys[0], 0, -1, withscores=True)]
        waits = [s / 1e6 - before for s in scores]
        assert all(0.0 <= w <= 100.05 for w in waits)  # 100 s less up to all of it
        assert len(set(scores)) == 20 and max(waits) - min(waits) > 20.0

    scenario_on(kind, redis_server, body, retry=RetryPolicy(base=100.0, jitter=1.0))


# ---------------------------------------------------------------- peek and the command line


def test_peek_shows_the_next_jobs_in_claim_order_without_claiming(kind, redis_server):
    async def body(q, c):
        past = server_time(redis_server) - 5
        late = await c("put", b"late", 60)
        later = await c("put", b"later", 90, priority=-9)  # not due: by deadline
        plain = await c("put_at", "plain", past)
        urgent = await c("put_at", b"urgent", past + 1, priority=-1)
        leased = await c("put", b"leased", priority=-50)
        assert (await c("get", 0)).id == leased
        assert [j.id for j in await c("peek")] == [urgent, plain, late, later]
        got = await c("peek", 2)
        assert [(j.id, j.payload, j.attempts, j.reason) for j in got] == [
            (urgent, b"urgent", 0, None),
            (plain, "plain", 0, None),
        ]
        assert await c("peek", 0) == []
        assert await c("stats") == {"delayed": 2, "due": 2, "leased": 1, "dead": 0}
        assert [j.id for j in await c("get_many", 5)] == [urgent, plain]  # as peek said
        with pytest.raises(ValueError, match="limit"):
            await c("peek", 1001)

    scenario_on(kind, redis_server, body)


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_cli_stats_peek_dead_requeue_purge(redis_server, capsys):
    name = uuid.uuid4().hex
    q = RedisDelayQueue(name, redis_server.client(), max_attempts=1, retry=RetryPolicy(base=2.0, jitter=0.0))
    url = redis_server.url()
    try:
        q.put_many([b"a", "b\u00e9", b"\xff\x00"], [0, 0, 0], job_ids=["a", "b", "c"])
        q.put(b"later", 30, job_id="d", priority=3)
        for job in q.get_many(2):
            q.nack(job)  # max_attempts 1: dead
        rc, text = run_cli("--url", url, "stats", name)
        assert rc == 0 and f"queue {name}" in text
        assert re.search(r"delayed\s+1\n\s+due\s+1\n\s+leased\s+0\n\s+dead\s+2\n", text), text
        assert (
            "max_attempts 1" in text and "retry (base=2, factor=2, max_delay=300, jitter=0), rate -" in text
        )
        rc, text = run_cli("--url", url, "--json", "stats", name)
        doc = json.loads(text)
        assert doc == {
            "queue": name,
            "delayed": 1,
            "due": 1,
            "leased": 0,
            "dead": 2,
            "policy": {
                "max_attempts": 1,
                "dead_ttl": None,
                "dead_max": None,
                "retry": {"base": 2.0, "factor": 2.0, "max_delay": 300.0, "jitter": 0.0},
                "rate": None,
            },
        }
        rc, text = run_cli("--url", url, "peek", name)
        lines = text.splitlines()
        assert rc == 0 and lines[0].split() == [
            "ID",
            "DEADLINE",
            "(UTC)",
            "PRIORITY",
            "ATTEMPTS",
            "STATE",
            "PAYLOAD",
        ]
        assert [ln.split()[0] for ln in lines[1:]] == ["c", "d"]
        assert "due" in lines[1] and "delayed" in lines[2] and "b'\\xff\\x00'" in lines[1]
        rc, text = run_cli("--url", url, "--json", "peek", name, "-n", "1")
        [job] = json.loads(text)
        assert job["id"] == "c" and job["payload_type"] == "bytes-base64" and job["due"] is True
        assert base64.b64decode(job["payload"]) == b"\xff\x00" and job["priority"] == 0
        rc, text = run_cli("--url", url, "--json", "dead", name)
        dead = json.loads(text)
        assert [(d["id"], d["payload"], d["payload_type"]) for d in dead] == [
            ("a", "a", "bytes"),
            ("b", "b\u00e9", "str"),
        ]
        assert all("max_attempts 1" in d["reason"] for d in dead)
        rc, text = run_cli("--url", url, "dead", name, "-n", "1")
        assert rc == 0 and len(text.splitlines()) == 2 and "REASON" in text
        rc, text = run_cli("--url", url, "requeue", name, "a", "nope")
        assert rc == 1 and "requeued 1 of 2" in text and "nope" in text
        assert q.stats()["dead"] == 1
        rc, text = run_cli("--url", url, "--json", "requeue", name, "--all")
        assert rc == 0 and json.loads(text) == {"requeued": ["b"], "not_dead": []}
        for job in q.get_many(5):
            q.nack(job)
        rc, text = run_cli("--url", url, "purge", name, "--older-than", "60")
        assert rc == 0 and text == "purged 0 dead job(s)\n"
        rc, text = run_cli("--url", url, "--json", "purge", name)
        assert rc == 0 and json.loads(text) == {"purged": 3}
        assert q.stats() == {"delayed": 1, "due": 0, "leased": 0, "dead": 0}
        with pytest.raises(SystemExit) as exc:
            run_cli("--url", url, "requeue", name)  # neither ids nor --all
        assert exc.value.code == 2 and "ids or --all" in capsys.readouterr().err
    finally:
        q.close()
        q.client.close()


def test_cli_runs_as_a_module(redis_server):
    env = {**os.environ, "REDIS_URL": redis_server.url()}
    done = subprocess.run(
        [sys.executable, "-m", "dq_core.redis", "--json", "stats", "x", "y"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [d["queue"] for d in json.loads(done.stdout)] == ["x", "y"]


def test_cli_reports_an_unreachable_server():
    rc, _ = run_cli("--url", f"redis://127.0.0.1:{free_port()}/0", "--retry-for", "0", "stats", "x")
    assert rc == 1


# ---------------------------------------------------------------- rate


def evalsha_calls(server: RedisServer) -> int:
    client = server.client()
    try:
        return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
    finally:
        client.close()


def test_the_rate_limits_claims_by_every_client_together(kind, redis_server):
    async def body(q, c):
        assert (q.rate, q.burst) == (20.0, 3.0)
        await c("put_many", [b"%d" % i for i in range(10)])
        other = RedisDelayQueue(q.name, redis_server.client())  # states no rate: the stored one
        assert len(await c("get_many", 10)) == 3  # the burst
        assert other.get_many(10) == [] and await c("get", 0) is None
        start = time.monotonic()
        got = [await c("get", 5) for _ in range(6)]  # a token each 0.05 s
        assert all(got) and time.monotonic() - start >= 0.25
        other.close()
        other.client.close()

    scenario_on(kind, redis_server, body, rate=20, burst=3)


def test_a_get_waits_for_the_next_token_without_polling(kind, redis_server):
    async def body(q, c):
        await c("put_many", [b"a", b"b"])
        assert await c("get", 0) is not None  # the one token
        await subscribed(q)  # a waiter that waited: its next wait costs no subscription
        before, start = evalsha_calls(redis_server), time.monotonic()
        job = await c("get", 5)
        waited, claims = time.monotonic() - start, evalsha_calls(redis_server) - before
        assert job is not None and job.payload == b"b"
        assert waited >= 0.3 and claims <= 3, (waited, claims)  # the token came 0.5 s later

    scenario_on(kind, redis_server, body, rate=2)


def test_the_rate_is_the_queues_and_checked(kind, redis_server):
    async def body(q, c):
        await c("qsize")
        with pytest.raises(
            ValueError, match="rate=5.0, burst=1.0 conflicts with the queue's stored rate=20.0, burst=1.0"
        ):
            RedisDelayQueue(q.name, redis_server.client(), rate=5).qsize()
        await c("clear")
        assert RedisDelayQueue(q.name, redis_server.client(), rate=5).qsize() == 0

    scenario_on(kind, redis_server, body, rate=20)
    client = redis_server.client()
    for kwargs, error in [
        ({"rate": 0}, ValueError),
        ({"rate": math.inf}, ValueError),
        ({"rate": "1"}, TypeError),
        ({"rate": 1, "burst": 0.5}, ValueError),
        ({"burst": math.nan}, ValueError),
    ]:
        with pytest.raises(error, match=next(iter(kwargs)) if "burst" not in kwargs else "burst"):
            RedisDelayQueue("q", client, **kwargs)
    assert "rate=2.0, burst=4.0" in repr(RedisDelayQueue("q", client, rate=2, burst=4))
    client.close()


# ---------------------------------------------------------------- recurring jobs


def utc(*args: int) -> float:
    return calendar.timegm(datetime.datetime(*args).timetuple())


@pytest.mark.parametrize(
    "expr, after, expected",
    [
        ("* * * * *", utc(2026, 12, 7, 6, 30) + 0.5, utc(2026, 12, 7, 6, 31)),
        ("* * * * *", utc(2026, 12, 7, 6, 30), utc(2026, 12, 7, 6, 31)),  # strictly after
        ("*/15 3 * * *", utc(2026, 12, 7, 3, 45), utc(2026, 12, 8, 3, 0)),
        ("0 0 29 2 *", utc(2027, 1, 1), utc(2028, 2, 29)),
        ("0 9 13 * 5", utc(2026, 12, 7), utc(2026, 12, 11, 9)),  # Friday 11th, or any 13th
        ("0 9 13 * 5", utc(2026, 12, 12), utc(2026, 12, 13, 9)),
        ("0 9 * * 5", utc(2026, 12, 12), utc(2026, 12, 18, 9)),  # day of month '*': Fridays only
        ("0 0 * * 7", utc(2026, 12, 7), utc(2026, 12, 13)),  # 7 is Sunday, as 0
        ("5/20 8-18/5 * 6-9 1-5", utc(2026, 12, 7), utc(2027, 6, 1, 8, 5)),
        ("0,30 12 1 1,7 *", utc(2026, 7, 1, 12, 10), utc(2026, 7, 1, 12, 30)),
        ("59 23 31 12 *", utc(2026, 12, 31, 23, 59), utc(2027, 12, 31, 23, 59)),
    ],
)
def test_cron_next_firing(expr, after, expected):
    assert Cron(expr).next(after) == expected


@pytest.mark.parametrize(
    "expr, message",
    [
        ("* * * *", "5 fields"),
        ("60 * * * *", "minute must lie from 0 to 59"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day of month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day of week"),
        ("*/0 * * * *", "step"),
        ("5-1 * * * *", "upwards"),
        ("a * * * *", "minute must be"),
        ("0 0 30 2 *", "never fires"),
        ("1-2-3 * * * *", "minute"),
    ],
)
def test_cron_refuses_bad_expressions(expr, message):
    with pytest.raises(ValueError, match=message):
        Cron(expr)


def test_the_scripts_fire_cron_as_cron_does(kind, redis_server):
    exprs = [
        "* * * * *",
        "*/7 */5 * * *",
        "0 0 29 2 *",
        "0 9 13 * 5",
        "0 12 * * 0",
        "15 10 1 1,4,7,10 *",
        "59 23 31 12 *",
    ]

    async def body(q, c):
        for expr in exprs:
            before = server_time(redis_server)
            await c("put_recurring", b"x", cron=Cron(expr) if "*/7" in expr else expr, job_id=expr)
            after = server_time(redis_server)
            [job] = [j for j in await c("peek", 100) if j.id.startswith(expr + "@")]
            assert job.deadline in (Cron(expr).next(before), Cron(expr).next(after)), expr
            assert job.id == f"{expr}@{round(job.deadline * 1e6)}"

    scenario_on(kind, redis_server, body)


def test_every_runs_once_a_period_across_workers_and_never_piles_up(kind, redis_server):
    async def body(q, c):
        other = RedisDelayQueue(q.name, redis_server.client())
        start = server_time(redis_server)
        rid = await c("put_recurring", b"tick", every=0.1, job_id="tick")
        assert rid == "tick"
        seen = []
        while len(seen) < 4:  # two workers take turns
            job = await c("get", 2) if len(seen) % 2 == 0 else other.get(2)
            assert job is not None and job.payload == b"tick"
            seen.append(job)
            assert await c("ack", job)
        firings = [j.deadline for j in seen]
        assert len({j.id for j in seen}) == 4
        steps = [round((b - a) / 0.1, 3) for a, b in zip([start] + firings, firings)]
        assert all(s >= 1 and s == int(s) for s in steps[1:]), steps  # whole periods apart
        await asyncio.sleep(0.55)  # nobody claims for five periods: they collapse
        assert await c("stats") == {"delayed": 0, "due": 1, "leased": 0, "dead": 0}
        before = server_time(redis_server)
        job = await c("get", 0)
        after = server_time(redis_server)
        [nxt] = await c("peek")  # the next firing after the claim, whole periods on
        assert job.id != nxt.id and before < nxt.deadline <= after + 0.1
        assert round((nxt.deadline - job.deadline) / 0.1, 3) % 1 == 0
        assert await c("ack", job)
        close_all(other)

    scenario_on(kind, redis_server, body)


def test_recurring_jobs_are_replaced_and_cancelled_by_id(kind, redis_server):
    async def body(q, c):
        await c("put", b"plain")
        await c("put_recurring", b"v1", every=3600, job_id="r")
        await c("put_recurring", b"v2", every=0.05, job_id="r", priority=-1)  # replaced
        assert await c("qsize") == 2
        await asyncio.sleep(0.06)
        job = await c("get", 0)
        assert job.id.startswith("r@") and job.payload == b"v2"  # ahead of "plain"
        [nxt] = [j for j in await c("peek") if j.id.startswith("r@")]
        assert await c("cancel_recurring", "r") and not await c("cancel_recurring", "r")
        assert [j.payload for j in await c("peek")] == [b"plain"]  # its instance went
        assert await c("ack", job)  # the running one goes on
        await asyncio.sleep(0.06)
        assert [j.payload for j in await c("get_many", 5)] == [b"plain"]  # no more of it
        assert await c("qsize") == 1
        with pytest.raises(TypeError, match="every= or cron="):
            await c("put_recurring", b"x")
        with pytest.raises(TypeError, match="every= or cron="):
            await c("put_recurring", b"x", every=1, cron="* * * * *")
        with pytest.raises(ValueError, match="every"):
            await c("put_recurring", b"x", every=0)
        with pytest.raises(ValueError, match="cron"):
            await c("put_recurring", b"x", cron="* * *")
        assert await c("qsize") == 1 and not nxt.id == job.id

    scenario_on(kind, redis_server, body)
