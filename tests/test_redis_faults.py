"""dq_core.redis under real faults: lost replies, broken subscriptions, a
flushed script cache, a killed server, eviction, fork, poison payloads, big
batches.  A real redis-server (tests/redis_server.py), a fault-injecting TCP
proxy (tests/redis_proxy.py) between it and the queue under test, and after
every scenario the invariants, read from Redis itself: no job lost or made
up, every job in exactly the structure its state names, ``stats()`` equal to
the structures' sizes, attempts equal to deliveries.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
import warnings
from typing import Any, Awaitable, Callable, Dict, Iterable, List

import pytest
import redis
import redis.asyncio as aredis

from dq_core.redis import SOURCES, AsyncRedisDelayQueue, RedisDelayQueue
from redis_proxy import Proxy
from redis_server import RedisServer, own_server, redis_server  # noqa: F401 (fixtures)


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


def make(kind: str, port: int, name: str, **options: Any) -> Any:
    if kind == "sync":
        return RedisDelayQueue(name, redis.Redis(port=port), **options)
    return AsyncRedisDelayQueue(name, aredis.Redis(port=port), **options)


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


def check(server: RedisServer, name: str, live: Iterable[str],
          deliveries: Dict[str, List[int]] | None = None) -> Dict[str, int]:
    """The invariants, read from Redis; returns the stats the structures give."""
    c = server.client()
    try:
        q = RedisDelayQueue(name, c)
        keys = dict(zip(("q", "state", "pay", "lease", "dead"), q.keys))
        state = {k.decode(): v.decode() for k, v in c.hgetall(keys["state"]).items()}
        assert set(state) == set(live), "a job was lost or made up"
        assert set(c.hkeys(keys["pay"])) == {i.encode() for i in live}
        members = {m.decode() for m in c.zrange(keys["q"], 0, -1)}
        leased = {m.decode() for m in c.zrange(keys["lease"], 0, -1)}
        dead = {m.decode() for m in c.zrange(keys["dead"], 0, -1)}
        for job_id, v in state.items():
            kind, rest = v[0], v.split(":", 1)[1]
            if kind == "S":
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


def run_on(kind: str, port: int, name: str, scenario: Callable[[Any], Awaitable[None]],
           **options: Any) -> None:
    """Run ``scenario(q)`` on a new queue of ``kind`` at ``port``, closed whatever happens."""
    async def main() -> None:
        q = make(kind, port, name, **options)
        try:
            await scenario(q)
        finally:
            await close(q)
    asyncio.run(main())


def lose_a_reply(kind: str, proxy: Proxy, name: str, op: str,
                 scenario: Callable[[Any], Awaitable[None]],
                 meanwhile: Callable[[], None] = lambda: None, **options: Any) -> None:
    """``run_on`` a queue behind the proxy, which drops the reply to the first
    ``op`` script (calling ``meanwhile`` first): exactly one reply is lost."""
    async def lossy(q: Any) -> None:
        proxy.drop_reply(q._scripts[op].sha.encode(), meanwhile)
        await scenario(q)
        assert proxy.dropped == 1
    run_on(kind, proxy.port, name, lossy, **options)


# ---------------------------------------------------------------- a reply lost on its way back

def test_a_lost_put_reply_does_not_put_the_job_twice(kind, redis_server, proxy):
    name = uuid.uuid4().hex
    direct = RedisDelayQueue(name, redis_server.client())
    taken: List[Any] = []

    def meanwhile() -> None:  # a worker takes and finishes the job before the replay
        job = direct.get(timeout=5)
        taken.append(job)
        assert direct.ack(job)

    async def scenario(q: Any) -> None:
        jid = await call(q, "put", b"once")
        assert [j.id for j in taken] == [jid]
        check(redis_server, name, [])  # done, not put again
        assert await call(q, "get", 0) is None
    lose_a_reply(kind, proxy, name, "put", scenario, meanwhile)
    direct.close()


def test_a_lost_claim_reply_delivers_the_claimed_jobs(kind, redis_server, proxy):
    name = uuid.uuid4().hex
    direct = RedisDelayQueue(name, redis_server.client(), max_attempts=1)
    jids = direct.put_many([b"a", b"b", b"c"])

    async def scenario(q: Any) -> None:
        jobs = await call(q, "get_many", 5, 5)
        # the claim that ran is the one delivered, in order: not leased to nobody, not dead
        assert [(j.id, j.payload, j.attempts) for j in jobs] == [
            (jid, p, 1) for jid, p in zip(jids, [b"a", b"b", b"c"])]
        assert check(redis_server, name, jids, {j.id: [j.attempts] for j in jobs})["leased"] == 3
        assert await call(q, "ack_many", jobs) == [True] * 3
        check(redis_server, name, [])
    lose_a_reply(kind, proxy, name, "claim", scenario, max_attempts=1, lease=30)
    direct.close()


def test_a_lost_ack_reply_still_reports_done(kind, redis_server, proxy):
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        jids = await call(q, "put_many", [b"a", b"b"])
        jobs = await call(q, "get_many", 2)
        assert await call(q, "ack_many", jobs + [jobs[0]]) == [True, True, False]
        assert len(jids) == 2
        check(redis_server, name, [])
    lose_a_reply(kind, proxy, name, "ack", scenario)


# ---------------------------------------------------------------- subscriptions that break

def test_a_half_open_subscription_costs_a_recheck_at_most(kind, redis_server, proxy):
    name = uuid.uuid4().hex
    direct = RedisDelayQueue(name, redis_server.client())

    async def scenario(q: Any) -> None:
        assert await call(q, "get", 0.1) is None  # subscribed, now idle
        assert proxy.half_open(b"SUBSCRIBE") == 1
        put_at = time.monotonic()
        timer = threading.Timer(0.3, direct.put, (b"x", 0.2))
        timer.start()
        job = await call(q, "get", 30)
        timer.join()
        waited = time.monotonic() - put_at
        assert job.payload == b"x"
        assert waited < 6.0, waited  # a re-check every 2 s, not the 30 s timeout
        assert await call(q, "ack", job)
        check(redis_server, name, [])
    run_on(kind, proxy.port, name, scenario)
    direct.close()


def test_wake_ups_a_look_saw_are_dropped_unread(kind, redis_server):
    # a busy worker, taking jobs without waiting, leaves its subscription idle:
    # the wake-ups of the jobs it took pile there (fewer than make it subscribe
    # anew); its looks saw what they tell, so its next wait drops them: no
    # ticket taken, no look made for any of them
    name = uuid.uuid4().hex
    other = RedisDelayQueue(name, redis_server.client())
    admin = redis_server.client()

    async def scenario(q: Any) -> None:
        assert await call(q, "get", 0.05) is None  # subscribed, now idle
        for i in range(50):  # each put is the head: each publishes a wake-up
            other.put(b"%d" % i)
            assert await call(q, "ack", await call(q, "get", 0))
        assert await call(q, "put", b"later", 0.3)
        before = admin.info("commandstats")["cmdstat_evalsha"]["calls"]
        job = await call(q, "get", 5)
        looks = admin.info("commandstats")["cmdstat_evalsha"]["calls"] - before
        assert job.payload == b"later"
        assert looks == 1  # at the job's due time, by the one that took its ticket
        tickets = admin.keys(f"dq:{{{name}}}:t:*")
        assert len(tickets) == 1 and tickets[0].rsplit(b":", 1)[1].isdigit(), tickets
        assert await call(q, "ack", job)
        check(redis_server, name, [])
    run_on(kind, redis_server.port, name, scenario)
    other.close()
    admin.close()


def test_a_killed_subscription_reconnects_instead_of_raising(kind, redis_server):
    name = uuid.uuid4().hex
    direct = RedisDelayQueue(name, redis_server.client())
    admin = redis_server.client()

    def kill_then_put() -> None:
        admin.client_kill_filter(_type="pubsub")
        time.sleep(0.2)
        direct.put(b"after the kill")

    async def scenario(q: Any) -> None:
        assert await call(q, "get", 0.1) is None
        timer = threading.Timer(0.3, kill_then_put)
        timer.start()
        start = time.monotonic()
        job = await call(q, "get", 20)
        timer.join()
        assert job.payload == b"after the kill"
        assert time.monotonic() - start < 6.0
        assert await call(q, "ack", job)
        check(redis_server, name, [])
    run_on(kind, redis_server.port, name, scenario)
    direct.close()
    admin.close()


def test_script_flush_is_survived(kind, redis_server):
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        jid = await call(q, "put", b"x")
        redis_server.client().script_flush()
        job = await call(q, "get", 0)
        redis_server.client().script_flush()
        assert await call(q, "nack", job)
        redis_server.client().script_flush()
        job = await call(q, "get", 0)
        assert (job.id, job.attempts) == (jid, 2)
        check(redis_server, name, [jid], {jid: [1, 2]})
        assert await call(q, "ack", job)
        check(redis_server, name, [])
    run_on(kind, redis_server.port, name, scenario, max_attempts=2)


# ---------------------------------------------------------------- the server dies

def test_sigkill_with_aof_loses_nothing_and_a_restart_without_it_reuses_no_token(own_server):
    name = uuid.uuid4().hex
    q = RedisDelayQueue(name, own_server.client(), lease=0.5, max_attempts=3)
    ids = q.put_many([b"%d" % i for i in range(50)], [0] * 40 + [0.3] * 10)
    held = q.get_many(10)
    done = q.get_many(5)
    assert q.ack_many(done) == [True] * 5
    own_server.kill()  # SIGKILL; appendfsync always
    own_server.start()
    live = [i for i in ids if i not in {j.id for j in done}]
    check(own_server, name, live)
    deliveries: Dict[str, List[int]] = {j.id: [j.attempts] for j in held}
    time.sleep(0.6)  # the held leases end
    got = []
    while len(got) < 45:
        more = q.get_many(100, timeout=5)
        assert more
        got += more
    for j in got:
        deliveries.setdefault(j.id, []).append(j.attempts)
    check(own_server, name, live, deliveries)
    assert sorted(j.id for j in got) == sorted(live)
    assert q.ack_many(got) == [True] * 45
    stale = got[0]
    # a restart that lost everything (no AOF): the queue starts empty and works
    q.put(b"new", job_id=stale.id)
    own_server.kill()
    for f in os.listdir(own_server.directory):
        if f.startswith("appendonly"):
            path = own_server.directory / f
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    own_server.start()
    check(own_server, name, [])
    q.put(b"again", job_id=stale.id)
    fresh = q.get(0)
    assert fresh.id == stale.id and fresh._token != stale._token
    assert q.ack(stale) is False  # a stale lease never acks the new one
    assert q.ack(fresh)
    check(own_server, name, [])
    q.close()


# ---------------------------------------------------------------- eviction

def test_an_evicting_server_is_warned_about_and_does_not_wedge_the_queue(kind, own_server):
    admin = own_server.client()
    admin.config_set("maxmemory-policy", "allkeys-lru")
    admin.config_set("maxmemory", "4mb")
    name = uuid.uuid4().hex

    async def scenario(q: Any) -> None:
        with pytest.warns(RuntimeWarning, match="maxmemory-policy is 'allkeys-lru'.*noeviction"):
            await call(q, "put_many", [b"j" * 100] * 200)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per queue, not per call
            await call(q, "stats")
        for i in range(400):  # a cache filling the memory evicts the queue's keys
            admin.set(f"cache:{i}", b"c" * 20_000)
        jobs = await call(q, "get_many", 1000)  # whatever survived, no error
        await asyncio.sleep(0.3)
        await call(q, "stats")
        await call(q, "get_many", 1000)
        await call(q, "clear")
        assert await call(q, "stats") == {"delayed": 0, "due": 0, "leased": 0, "dead": 0}
        assert all(j.payload == b"j" * 100 for j in jobs)  # never b''
    run_on(kind, own_server.port, name, scenario, lease=0.2)
    admin.close()


def test_config_get_disabled_is_no_warning(kind, own_server):
    admin = own_server.client()
    admin.config_set("maxmemory-policy", "allkeys-lru")
    own_server.kill()
    own_server.proc = subprocess.Popen(  # the same data directory, CONFIG renamed away
        [str(shutil.which("redis-server")), "--port", str(own_server.port), "--bind", "127.0.0.1",
         "--dir", str(own_server.directory), "--save", "", "--maxmemory-policy", "allkeys-lru",
         "--rename-command", "CONFIG", '""'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            if admin.ping():
                break
        except redis.ConnectionError:
            assert time.monotonic() < deadline
            time.sleep(0.05)

    async def scenario(q: Any) -> None:
        await call(q, "put", b"x")  # filterwarnings=error: any warning fails
        assert (await call(q, "get", 0)).payload == b"x"
    run_on(kind, own_server.port, uuid.uuid4().hex, scenario)
    admin.close()


# ---------------------------------------------------------------- fork

@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_subscribes_anew(redis_server):
    name = uuid.uuid4().hex
    q = RedisDelayQueue(name, redis_server.client())
    assert q.get(timeout=0.05) is None  # leaves a subscription idle
    parents = list(q._idle)
    assert len(parents) == 1
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
        pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            job = q.get(timeout=10)
            ok = (job is not None and job.payload == b"for the child"
                  and q.ack(job) and q._idle and q._idle[0] is not parents[0])
            code = 0 if ok else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    time.sleep(0.3)
    start = time.monotonic()
    RedisDelayQueue(name, redis_server.client()).put(b"for the child", 0.1)
    assert q.get(timeout=0.05) is None or True  # the parent's own subscription still works
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 1) == b"\x00" and status == 0
    assert time.monotonic() - start < 5.0
    os.close(read)
    check(redis_server, name, [])
    q.close()


# ---------------------------------------------------------------- big batches

PINGER = """
import sys, time, redis
c = redis.Redis(port=int(sys.argv[1]))
took, end = [], time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    t = time.perf_counter(); c.ping(); took.append(time.perf_counter() - t)
    time.sleep(0.001)
took.sort()
print(took[-1], took[int(len(took) * 0.99)], len(took))
"""


def test_a_100k_batch_never_holds_the_server_long(redis_server):
    name = uuid.uuid4().hex
    q = RedisDelayQueue(name, redis_server.client())
    admin = redis_server.client()
    # server-side, every script of 10 ms or more; a 100k batch in one script
    # held the server ~900 ms (more on a loaded machine)
    admin.config_set("slowlog-log-slower-than", "10000")
    admin.config_set("slowlog-max-len", "10000")
    admin.slowlog_reset()
    admin.config_resetstat()
    n = 100_000
    pinger = subprocess.Popen([sys.executable, "-c", PINGER, str(redis_server.port), "6"],
                              stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        ids = q.put_many([b"p%d" % i for i in range(n)])
        jobs = q.get_many(n)
        assert len(jobs) == n and [j.id for j in jobs] == ids
        assert q.ack_many(jobs) == [True] * n
    finally:
        out, _ = pinger.communicate(30)
    worst, p99, pings = out.split()
    scripts = admin.info("commandstats")["cmdstat_evalsha"]["calls"]
    assert scripts >= 3 * n // 500  # put, claim and ack in scripts of 500 jobs
    slow = [e["duration"] for e in admin.slowlog_get(10000)
            if b"EVALSHA" in e["command"].upper()]
    # a few scripts may be slow while the machine is busy (preempted), never most,
    # and none holds the server for long
    assert len(slow) < scripts // 10, slow
    assert max(slow, default=0) < 250_000, slow
    assert int(pings) > 100
    # each PING answered while the batch ran: p99 under 50 ms, the worst generous
    assert float(p99) < 0.05 and float(worst) < 0.5, (p99, worst)
    admin.config_set("slowlog-log-slower-than", "10000")
    admin.config_set("slowlog-max-len", "128")
    check(redis_server, name, [])
    q.close()
    admin.close()


# ---------------------------------------------------------------- many waiters

@pytest.mark.parametrize("delay", [0.0, 0.05], ids=["due-now", "due-later"])
@pytest.mark.parametrize("objects", [1, 20], ids=["one-object", "object-each"])
def test_twenty_waiters_cost_a_few_claims_per_job(redis_server, objects, delay):
    # one queue object stands for one process: each has its own listener; a
    # job due later is looked for, at its due time, by one listener of all
    name = uuid.uuid4().hex
    queues = [RedisDelayQueue(name, redis_server.client(max_connections=64))
              for _ in range(objects)]
    producer = RedisDelayQueue(name, redis_server.client())
    admin = redis_server.client()
    got: List[str] = []
    stop = threading.Event()

    def worker(q: RedisDelayQueue) -> None:
        # a long wait: what is counted is looks for jobs, not gets that timed
        # out (their number grows with the test's length on a busy machine)
        while not stop.is_set():
            job = q.get(timeout=60)
            if job is not None:
                if job.payload != b"wake":
                    got.append(job.id)
                q.ack(job)

    threads = [threading.Thread(target=worker, args=(queues[i % objects],)) for i in range(20)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    admin.config_resetstat()
    for i in range(300):
        producer.put(b"%d" % i, delay)
        time.sleep(0.005)
    end = time.monotonic() + 30
    while len(got) < 300 and time.monotonic() < end:
        time.sleep(0.05)
    calls = admin.info("commandstats")["cmdstat_evalsha"]["calls"]
    stop.set()
    while any(t.is_alive() for t in threads):  # a job each wakes the waiting workers
        producer.put(b"wake")
        time.sleep(0.01)
    for t in threads:
        t.join()
    while (job := producer.get(timeout=0)) is not None:  # the wake-up jobs left over
        producer.ack(job)
    assert len(got) == 300
    claims = calls - 300 - 300  # the puts and the acks
    # a job costs the claim that takes it and the look of the worker's next
    # get; a job due later is looked for at its due time by the one listener
    # that takes the time's ticket, and wake-ups a later look saw are dropped
    assert claims <= 2 * 300, claims / 300
    assert sorted(got) == sorted(set(got))  # none delivered twice
    check(redis_server, name, [])
    for q in queues:
        q.close()
    admin.close()
