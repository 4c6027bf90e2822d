"""dq_core.redis when the server goes away: restarts, refused connections, a
half-open subscription, and keep_alive through them.  A waiting ``get`` rides
an outage out until its own timeout; the other calls retry for ``retry_for``
seconds, then raise ``Unavailable``; a retried call acts once.

The queues here run on clients that do not retry a command themselves
(redis-py 6+ does by default, for a few seconds), so that each test's short
outage reaches the queue's own retries at once on every redis-py line.  The
README's loop through a 30 s outage is perf/redis_outage.py.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any, List

import pytest
import redis

from dq_core.redis import RedisDelayQueue, Unavailable, _protocol
from redis_queues import call, check, keep_alive, kind, make, proxy, run_on, subscribed  # noqa: F401
from redis_server import own_server, redis_server  # noqa: F401 (fixtures)


def later(seconds: float, fn: Any, *args: Any) -> threading.Timer:
    timer = threading.Timer(seconds, fn, args)
    timer.start()
    return timer


# ---------------------------------------------------------------- the server restarts


def test_a_put_during_a_restart_waits_for_it_and_lands_once(kind, own_server):
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        before = await call(q, "put", b"before", 60)
        await subscribed(q)  # a subscription kept idle: it breaks too
        own_server.kill()  # SIGKILL; AOF fsync always
        timer = later(0.5, own_server.start)
        started = time.monotonic()
        during = await call(q, "put", b"during")  # retried, with backoff, until the server is back
        assert time.monotonic() - started >= 0.4
        timer.join()
        assert await call(q, "stats") == {"delayed": 1, "due": 1, "leased": 0, "dead": 0}
        [job] = await call(q, "get_many", 10)  # once
        assert job.id == during and job.payload == b"during"
        assert await call(q, "ack", job)
        check(own_server, name, [before])

    run_on(kind, own_server.port, name, scenario, own_retries=False)


def test_a_waiting_get_rides_out_a_restart(kind, own_server):
    name = uuid.uuid4().hex
    producer = RedisDelayQueue(name, own_server.client())

    def restart_then_put() -> None:
        own_server.kill()
        time.sleep(0.5)
        own_server.start()
        producer.put(b"after")

    async def scenario(q: Any) -> None:
        await call(q, "put", b"later", 60)
        timer = later(0.3, restart_then_put)
        job = await call(q, "get", 10)  # no ConnectionError: it reconnects, subscribes, looks
        timer.join()
        assert job.payload == b"after"
        assert await call(q, "ack", job)
        assert await call(q, "stats") == {"delayed": 1, "due": 0, "leased": 0, "dead": 0}

    run_on(kind, own_server.port, name, scenario, own_retries=False)
    producer.close()


def test_past_retry_for_a_call_raises_unavailable_and_a_waiting_get_returns_none(kind, own_server):
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        job_id = await call(q, "put", b"x")
        job = await call(q, "get", 0)
        own_server.shutdown()
        for method, args in [
            ("put", (b"y",)),
            ("ack", (job,)),
            ("nack", (job,)),
            ("extend", (job,)),
            ("get", (0,)),
            ("stats", ()),
        ]:
            started = time.monotonic()
            with pytest.raises(Unavailable) as raised:
                await call(q, method, *args)
            err = raised.value
            assert 0.15 <= time.monotonic() - started < 5.0, method
            assert isinstance(err, redis.ConnectionError)  # what such code caught before
            assert isinstance(err.__cause__, redis.ConnectionError) and err.seconds >= 0.15
            assert f"queue {name!r}" in str(err) and "unreachable" in str(err)
        started = time.monotonic()
        assert await call(q, "get", 0.3) is None  # a waiting get returns at its timeout
        assert await call(q, "get_many", 5, 0.1) == []
        assert 0.4 <= time.monotonic() - started < 5.0
        own_server.start()
        assert await call(q, "ack", job)  # the same object, at once
        assert job_id == job.id

    run_on(kind, own_server.port, name, scenario, own_retries=False, retry_for=0.15)


@pytest.mark.parametrize("cls", [RedisDelayQueue])
def test_retry_for_is_checked(cls, redis_server):
    client = redis_server.client()
    for bad in (-1, 51, float("inf")):
        with pytest.raises(ValueError, match="retry_for must be from 0 to 50 seconds"):
            cls("q", client, retry_for=bad)
    with pytest.raises(ValueError, match="retry_for must not be NaN"):
        cls("q", client, retry_for=float("nan"))
    with pytest.raises(TypeError, match="retry_for must be a real number"):
        cls("q", client, retry_for="soon")
    assert repr(cls("q", client, retry_for=2)) == (
        "RedisDelayQueue('q', lease=30.0, max_attempts=None, retry_for=2.0)"
    )
    client.close()


def test_an_outage_is_logged_once_and_its_end_too(own_server, caplog):
    q = make("sync", own_server.port, uuid.uuid4().hex, own_retries=False)
    q.put(b"x")
    own_server.kill()
    timer = later(0.5, own_server.start)
    with caplog.at_level(logging.WARNING, logger="dq_core.redis"):
        q.put(b"y")
    timer.join()
    lines = [r.getMessage() for r in caplog.records if r.name == "dq_core.redis"]
    assert len(lines) == 2, lines
    assert "lost its Redis connection" in lines[0] and "reached its Redis server again" in lines[1]
    q.close()


# ---------------------------------------------------------------- a reply lost, the server away


def test_a_put_whose_reply_is_lost_in_an_outage_acts_once(kind, redis_server, proxy):
    # the put ran, its reply was lost, and the server stayed unreachable for a
    # while: every retry carries the first send's nonce, so the script returns
    # its first reply instead of putting the job again
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        proxy.drop_reply(q._scripts["put"].sha.encode(), lambda: proxy.refuse(True))
        timer = later(0.6, proxy.refuse, False)
        job_id = await call(q, "put", b"once")
        timer.join()
        assert proxy.dropped == 1
        [job] = await call(q, "get_many", 10)
        assert job.id == job_id
        assert await call(q, "ack", job)
        check(redis_server, name, [])

    run_on(kind, proxy.port, name, scenario, own_retries=False)


def test_a_subscription_reconnected_by_redis_py_is_followed_by_a_look(kind, redis_server, proxy):
    # redis-py 6+ reconnects a subscription by itself and subscribes again,
    # silently; what was published meanwhile is lost (here: the job's
    # wake-up).  The queue notices the reconnection, and looks
    name = uuid.uuid4().hex
    direct = RedisDelayQueue(name, redis_server.client())

    async def scenario(q: Any) -> None:
        await subscribed(q)
        timers = [
            later(0.2, proxy.refuse, True),
            later(0.3, direct.put, b"x"),
            later(0.6, proxy.refuse, False),
        ]
        started = time.monotonic()
        job = await call(q, "get", 10)
        for timer in timers:
            timer.join()
        assert job is not None and job.payload == b"x"
        assert time.monotonic() - started < 5.0  # not the timeout, nor a stand-by's look
        assert await call(q, "ack", job)
        check(redis_server, name, [])

    run_on(kind, proxy.port, name, scenario)  # the client's own retries, as redis-py has them
    direct.close()


# ---------------------------------------------------------------- a half-open subscription


def test_a_half_open_subscription_costs_one_late_job(kind, redis_server, proxy, monkeypatch):
    # a NAT or load balancer forgets the subscription's connection: nothing
    # reaches it, and nothing tells it.  A ping after 2 s of silence (0.5 s
    # here) goes unanswered for 1 s (0.3 s here), the subscription is replaced,
    # and the jobs after the first come on time again
    monkeypatch.setattr(_protocol, "_PING_AFTER", 0.5)
    monkeypatch.setattr(_protocol, "_PONG", 0.3)
    name = uuid.uuid4().hex
    direct = RedisDelayQueue(name, redis_server.client())

    async def scenario(q: Any) -> None:
        await subscribed(q)
        [dead] = q._idle
        assert proxy.half_open(b"SUBSCRIBE", later=False) == 1
        late: List[float] = []
        for _ in range(4):
            timer = later(0.2, direct.put, b"x")
            job = await call(q, "get", 10)
            timer.join()
            s, us = direct.client.time()
            late.append(s + us / 1e6 - job.deadline)
            assert await call(q, "ack", job)
        assert late[0] > 0.3  # the first one waited for the ping to go unanswered
        assert q._idle and q._idle[0] is not dead  # replaced
        assert max(late[1:]) < 1.0, late  # the others woken on time (generous)
        check(redis_server, name, [])

    run_on(kind, proxy.port, name, scenario)
    direct.close()


# ---------------------------------------------------------------- keep_alive


def test_keep_alive_rides_out_a_short_outage(kind, redis_server, proxy):
    # the server away for longer than a beat (lease/3): the beat's extend
    # raises, and the beat tries again at once, until the lease's end
    name = uuid.uuid4().hex
    other = RedisDelayQueue(name, redis_server.client())

    async def scenario(q: Any) -> None:
        await call(q, "put", b"long")
        job = await call(q, "get", 0)
        on, off = later(0.3, proxy.refuse, True), later(0.95, proxy.refuse, False)
        assert not await keep_alive(q, job, 1.5)  # the lease was kept, not lost
        on.join()
        off.join()
        assert other.get(timeout=0) is None  # never due again meanwhile
        assert await call(q, "ack", job)
        check(redis_server, name, [])

    run_on(kind, proxy.port, name, scenario, own_retries=False, lease=1.2)
    other.close()


def test_keep_alive_signals_a_lease_lost_to_a_replacing_put(kind, redis_server):
    name = uuid.uuid4().hex
    other = RedisDelayQueue(name, redis_server.client())

    async def scenario(q: Any) -> None:
        await call(q, "put", b"v1", job_id="k")
        job = await call(q, "get", 0)
        timer = later(0.1, lambda: other.put(b"v2", job_id="k"))  # replaced by id: lease gone
        assert await keep_alive(q, job, 1.0)
        timer.join()
        assert await call(q, "ack", job) is False

    run_on(kind, redis_server.port, name, scenario, lease=0.3)
    other.close()


def test_keep_alive_signals_a_lease_lost_to_an_outage(kind, redis_server, proxy):
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        await call(q, "put", b"long")
        job = await call(q, "get", 0)
        proxy.refuse(True)  # away past the lease's end: it may run elsewhere
        try:
            assert await keep_alive(q, job, 1.0)
        finally:
            proxy.refuse(False)

    run_on(kind, proxy.port, name, scenario, own_retries=False, lease=0.4)


def test_keep_alive_never_dies_silently(kind, redis_server, caplog):
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        await call(q, "put", b"long")
        job = await call(q, "get", 0)
        real = q._scripts["extend"]

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise redis.ResponseError("ERR something unexpected")

        q._scripts["extend"] = broken  # an error that is no connection's
        try:
            with caplog.at_level(logging.ERROR, logger="dq_core.redis"):
                assert await keep_alive(q, job, 0.5)
        finally:
            q._scripts["extend"] = real
        [record] = [r for r in caplog.records if r.name == "dq_core.redis"]
        assert "keep_alive" in record.getMessage() and record.exc_info is not None

    run_on(kind, redis_server.port, name, scenario, lease=0.3)
