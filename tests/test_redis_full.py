"""dq_core.redis on a full server: ``maxmemory`` reached under ``noeviction``,
the policy the docs recommend.  Redis then refuses a script's first write
that may add memory; what frees or keeps memory must go on working (reads,
claims, acks, nacks, lease extensions, a waiting get when a job falls due),
and a put must say clearly why it is refused.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any, Iterator

import pytest
import redis

from dq_core.redis import RedisDelayQueue
from redis_queues import call, check, keep_alive, kind, run_on  # noqa: F401 (fixtures)
from redis_server import RedisServer, own_server  # noqa: F401 (fixtures)


@pytest.fixture
def full(own_server: RedisServer) -> Iterator[Any]:
    """``fill()``: fill the server: cap its memory below what it holds, as a
    server whose data grew to its ``maxmemory`` is (``noeviction``)."""
    admin = own_server.client()

    def fill() -> None:
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", str(admin.info("memory")["used_memory"] - 64 * 1024))
        with pytest.raises(redis.OutOfMemoryError):
            admin.set("one:more", b"x")

    yield fill
    admin.config_set("maxmemory", "0")
    admin.close()


def test_a_full_server_refuses_puts_clearly_and_keeps_the_rest_working(kind, own_server, full):
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        ids = await call(q, "put_many", [b"a", b"b", b"c", b"d"])
        later = await call(q, "put", b"later", 0.4)
        [a] = await call(q, "get_many", 1)
        full()
        with pytest.raises(
            redis.OutOfMemoryError, match=f"server is full.*queue {name!r} refused put.*gets, acks"
        ):
            await call(q, "put", b"refused")
        with pytest.raises(redis.OutOfMemoryError):
            await call(q, "put_many", [b"refused"] * 3)
        assert await call(q, "stats") == {"delayed": 1, "due": 3, "leased": 1, "dead": 0}
        assert await call(q, "extend", a, 30)  # keeps the lease
        b, c, d = await call(q, "get_many", 10)  # claims
        assert [b.id, c.id, d.id] == ids[1:]
        assert await call(q, "ack", a) and await call(q, "ack", a) is False  # stale: False
        assert await call(q, "ack_many", [b, b]) == [True, False]
        assert await call(q, "nack", c, 60)
        assert await call(q, "extend", d)
        assert await call(q, "purge_dead") == 0  # nothing to purge: 0, not an error
        assert await call(q, "dead") == []
        job = await call(q, "get", 5)  # a waiting get: the job falls due, no OOM
        assert job.id == later and await call(q, "ack", job)
        assert await call(q, "ack", d)
        check(own_server, name, [ids[2]])

    run_on(kind, own_server.port, name, scenario, lease=5)


def test_on_a_full_server_keep_alive_keeps_the_lease(kind, own_server, full):
    name = uuid.uuid4().hex
    other = RedisDelayQueue(name, own_server.client())

    async def scenario(q: Any) -> None:
        await call(q, "put", b"long")
        job = await call(q, "get", 0)
        full()
        # the lease kept, not lost, past its length (four extensions); a
        # lease of 0.3 s could end between the block and the ack on a
        # loaded machine
        assert not await keep_alive(q, job, 1.5)
        assert other.get(timeout=0) is None  # never due again meanwhile
        assert await call(q, "ack", job)

    run_on(kind, own_server.port, name, scenario, lease=1.0)
    other.close()


def test_waiters_on_a_full_server_get_the_jobs_falling_due(own_server, full):
    # several waiting processes (a queue object each), and jobs put before the
    # server filled falling due while they wait: the looks, and the listeners'
    # own bookkeeping (idle, watcher), go on
    name = uuid.uuid4().hex
    producer = RedisDelayQueue(name, own_server.client())
    ids = producer.put_many([b"%d" % i for i in range(6)], [0.3 + 0.05 * i for i in range(6)])
    full()
    got: list[str] = []
    errors: list[BaseException] = []

    def work() -> None:
        q = RedisDelayQueue(name, own_server.client())
        try:
            while True:
                job = q.get(timeout=1)
                if job is None:
                    return
                got.append(job.id)
                assert q.ack(job)
        except BaseException as exc:
            errors.append(exc)
        finally:
            q.close()

    workers = [threading.Thread(target=work) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(20)
    assert errors == []
    assert sorted(got) == sorted(ids)
    producer.close()
