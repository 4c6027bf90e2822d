"""dq_core.redis under real faults: lost replies, broken subscriptions, a
flushed script cache, a killed server, eviction, fork, poison payloads, big
batches, many waiters.  A real redis-server (tests/redis_server.py), a
fault-injecting TCP proxy (tests/redis_proxy.py) between it and the queue
under test, and after every scenario the invariants, read from Redis itself
(tests/redis_queues.py's ``check``).  Outages are in test_redis_outage.py,
a full server in test_redis_full.py.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import threading
import time
import uuid
import warnings
from collections import Counter
from typing import Any, Dict, List

import pytest

from dq_core.redis import RedisDelayQueue, _protocol
from dq_core.redis._scripts import SOURCES
from redis_queues import call, check, kind, lose_a_reply, proxy, run_on, subscribed  # noqa: F401
from redis_server import own_server, redis_server  # noqa: F401 (fixtures)

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
            (jid, p, 1) for jid, p in zip(jids, [b"a", b"b", b"c"])
        ]
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


def test_a_lost_claim_reply_still_tells_the_watcher_it_watches(kind, redis_server, proxy):
    # the watcher (told to look when the next job falls due) loses its
    # subscription, subscribes anew and looks, as after any break; that look's
    # reply is lost and the look replayed: the replay still says it is the
    # watcher, and the job comes at its due time, not when a waiter standing
    # by gives up on the watcher (2 to 3 s later)
    name = uuid.uuid4().hex
    other = RedisDelayQueue(name, redis_server.client())
    admin = redis_server.client()

    def break_its_subscription() -> None:
        proxy.drop_reply(q_sha[0])  # the look that follows
        admin.client_kill_filter(_type="pubsub")

    q_sha: List[bytes] = []

    async def scenario(q: Any) -> None:
        q_sha.append(q._scripts["claim"].sha.encode())
        await subscribed(q)  # subscribed, idle
        other.put(b"x", 1.0)  # q is told to watch its due time
        timer = threading.Timer(0.3, break_its_subscription)
        timer.start()
        job = await call(q, "get", 10)
        timer.join()
        assert proxy.dropped == 1
        s, us = other.client.time()
        assert s + us / 1e6 - job.deadline < 1.0
        assert await call(q, "ack", job)
        check(redis_server, name, [])

    run_on(kind, proxy.port, name, scenario)
    other.close()
    admin.close()


# ---------------------------------------------------------------- subscriptions that break


def test_when_every_subscription_stays_half_open_jobs_still_come(kind, redis_server, proxy, monkeypatch):
    # every subscription, the new ones too, hears nothing: a ping goes
    # unanswered, the subscription is replaced but its SUBSCRIBE never
    # confirmed, and the listener looks meanwhile: every few seconds (the
    # ping's 2 s + 1 s, and 2 s trying to subscribe; shortened here)
    monkeypatch.setattr(_protocol, "_PING_AFTER", 0.5)
    monkeypatch.setattr(_protocol, "_PONG", 0.3)
    monkeypatch.setattr(_protocol, "_RESUBSCRIBE", 0.5)
    name = uuid.uuid4().hex
    direct = RedisDelayQueue(name, redis_server.client())

    async def scenario(q: Any) -> None:
        await subscribed(q)  # subscribed, now idle
        assert proxy.half_open(b"SUBSCRIBE") == 1
        for _ in range(2):
            put_at = time.monotonic()
            timer = threading.Timer(0.3, direct.put, (b"x", 0.2))
            timer.start()
            job = await call(q, "get", 30)
            timer.join()
            waited = time.monotonic() - put_at
            assert job.payload == b"x"
            assert waited < 6.0, waited  # not the 30 s timeout
            assert await call(q, "ack", job)
        check(redis_server, name, [])

    run_on(kind, proxy.port, name, scenario)
    direct.close()


def test_wake_ups_a_look_saw_are_dropped_unread(kind, redis_server):
    # a busy worker, taking jobs without waiting, leaves its subscription idle:
    # the wake-ups of the jobs it took pile there (fewer than make it subscribe
    # anew); its looks saw what they tell, so its next wait drops them: no
    # look made for any of them, and no write but the jobs'
    name = uuid.uuid4().hex
    other = RedisDelayQueue(name, redis_server.client())
    admin = redis_server.client()

    async def scenario(q: Any) -> None:
        await subscribed(q)  # subscribed, now idle
        for i in range(50):  # each put is the head: each publishes a wake-up
            other.put(b"%d" % i)
            assert await call(q, "ack", await call(q, "get", 0))
        assert await call(q, "put", b"later", 0.3)
        before = admin.info("commandstats")["cmdstat_evalsha"]["calls"]
        job = await call(q, "get", 5)
        looks = admin.info("commandstats")["cmdstat_evalsha"]["calls"] - before
        assert job.payload == b"later"
        assert looks == 1  # at the job's due time, by the one told to
        assert await call(q, "ack", job)
        check(redis_server, name, [])

    run_on(kind, redis_server.port, name, scenario)
    other.close()
    admin.close()


def test_a_closed_queue_is_no_longer_named_to_look(kind, redis_server):
    # a waiter that stopped waiting and closed its queue leaves the idle ones:
    # a job put later is not named for it (a late job), but for a waiter there
    name = uuid.uuid4().hex
    admin = redis_server.client()
    idle = f"dq:{{{name}}}:idle"

    async def scenario(q: Any) -> None:
        await subscribed(q)
        assert admin.zscore(idle, q._me) is not None  # idle, after its look
        if isinstance(q, RedisDelayQueue):
            q.close()
        else:
            await q.aclose()
        assert admin.zscore(idle, q._me) is None
        await subscribed(q)  # usable: idle again
        assert admin.zscore(idle, q._me) is not None

    run_on(kind, redis_server.port, name, scenario)
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
        await subscribed(q)
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


def test_the_eviction_warning_points_at_the_caller_and_needs_no_config_command(kind, own_server):
    # managed Redis often disables CONFIG: the policy is read from INFO memory then
    hidden = ["--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", "config-" + uuid.uuid4().hex]
    own_server.kill()
    own_server.start(*hidden)

    async def scenario(q: Any) -> None:
        with pytest.warns(RuntimeWarning, match="maxmemory-policy is 'allkeys-lru'") as got:
            if kind == "sync":
                line = sys._getframe().f_lineno + 1
                q.put(b"x")
            else:
                line = sys._getframe().f_lineno + 1
                await q.put(b"x")
        [warning] = got.list
        assert (warning.filename, warning.lineno) == (__file__, line)  # the caller's line
        assert (await call(q, "get", 0)).payload == b"x"

    run_on(kind, own_server.port, uuid.uuid4().hex, scenario)
    own_server.kill()  # INFO refused too: nothing to go by, no warning
    own_server.start(*hidden, "--rename-command", "INFO", "info-" + uuid.uuid4().hex)

    async def quiet(q: Any) -> None:
        await call(q, "put", b"y")  # filterwarnings=error: any warning fails
        assert (await call(q, "get", 0)).payload == b"y"

    run_on(kind, own_server.port, uuid.uuid4().hex, quiet)


# ---------------------------------------------------------------- fork


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_subscribes_anew(redis_server):
    name = uuid.uuid4().hex
    q = RedisDelayQueue(name, redis_server.client())
    asyncio.run(subscribed(q))  # leaves a subscription idle
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
            ok = (
                job is not None
                and job.payload == b"for the child"
                and q.ack(job)
                and q._idle
                and q._idle[0] is not parents[0]
            )
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


def test_a_big_batch_runs_in_bounded_scripts(redis_server):
    # a 100k batch in one script held the server ~900 ms: every batch goes in
    # scripts of at most 500 jobs (_BATCH), each running a bounded number of
    # commands of at most 1000 items (CHUNK), however big the batch or the
    # queue; how long each holds the server is measured in perf/redis_batches.py
    name = uuid.uuid4().hex
    client = redis_server.client()
    q = RedisDelayQueue(name, client, lease=0.2, max_attempts=1)
    ops = {s.sha: op for op, s in q._scripts.items()}
    sent: List[tuple[str, int]] = []  # (script, arguments past the common ones)
    execute = client.execute_command

    def record(*args: Any, **options: Any) -> Any:
        if args[0] == "EVALSHA":
            # EVALSHA sha numkeys keys... policy nonce args...
            sent.append((ops[args[1]], len(args) - 3 - args[2] - 2))
        return execute(*args, **options)

    client.execute_command = record  # type: ignore[method-assign]
    admin = redis_server.client()
    for src in SOURCES.values():  # no NOSCRIPT: each script sent once
        admin.script_load(src)
    n = 4000

    def inner() -> int:  # the commands the scripts ran
        return sum(
            v["calls"]
            for k, v in admin.info("commandstats").items()
            if k not in ("cmdstat_evalsha", "cmdstat_info", "cmdstat_script|load")
        )

    before = inner()
    ids = q.put_many([b"p%d" % i for i in range(n)])
    assert len(q.get_many(n)) == n
    bulk = inner() - before  # each a few commands over all its jobs
    early = admin.zcard(q.keys[4])  # leases that ended while get_many ran (a busy machine)
    # every lease ends: each script reclaims CHUNK of them at most
    time.sleep(0.3)
    dead = admin.zcard(q.keys[4])
    before = inner()
    while dead < n:
        now = q.stats()["dead"]
        assert now - dead == min(1000, n - dead), (dead, now)
        dead = now
    reclaimed = inner() - before  # a few commands per job
    assert sorted(j.id for j in q.dead()) == sorted(ids)
    assert q.purge_dead() == n
    per = {op: [k for o, k in sent if o == op] for op in ("put", "claim", "dead", "purge_dead")}
    # (absolute, if_exists, priority) and 500 jobs a script
    assert len(per["put"]) == n // 500 and max(per["put"]) == 3 + 3 * 500
    assert len(per["claim"]) == n // 500 and set(per["claim"]) == {4}  # of 500 at most
    assert len(per["dead"]) == n // 500 + 1  # pages of 500, the last one empty
    assert len(per["purge_dead"]) == n // 1000 + 1  # CHUNK a script
    assert bulk <= 30 * (len(per["put"]) + len(per["claim"])) + 6 * early, (bulk, early)
    assert reclaimed <= 6 * n + 30 * 4, reclaimed
    check(redis_server, name, [])
    q.close()
    admin.close()


# ---------------------------------------------------------------- many waiters


@pytest.mark.parametrize("delay", [0.0, 0.05], ids=["due-now", "due-later"])
@pytest.mark.parametrize("objects", [1, 20], ids=["one-object", "object-each"])
def test_twenty_waiters_cost_a_few_claims_per_job(redis_server, objects, delay):
    # one queue object stands for one process: each has its own listener; a
    # job is looked for by the one listener (of all) told to
    name = uuid.uuid4().hex
    queues = [RedisDelayQueue(name, redis_server.client(max_connections=64)) for _ in range(objects)]
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
    # a job costs the look of the one listener told to look for it (an idle
    # one, or the watcher of its due time), sometimes the look of its worker's
    # next get; wake-ups a later look saw are dropped
    assert claims <= 2 * 300, claims / 300
    assert sorted(got) == sorted(set(got))  # none delivered twice
    check(redis_server, name, [])
    for q in queues:
        q.close()
    admin.close()


def counted(q: RedisDelayQueue, counts: "Counter[str]") -> None:
    """Count the commands ``q``'s client sends (a script by its name) into ``counts``."""
    client = q.client
    ops = {s.sha: op for op, s in q._scripts.items()}
    execute = client.execute_command

    def count(*args: Any, **options: Any) -> Any:
        counts[ops.get(args[1], "?") if args[0] == "EVALSHA" else str(args[0]).upper()] += 1
        return execute(*args, **options)

    client.execute_command = count  # type: ignore[method-assign]


@pytest.mark.parametrize("pattern", ["together", "sparse"])
def test_eight_waiting_processes_cost_one_to_two_claims_per_job(redis_server, pattern):
    # eight queue objects, a client each, stand for eight processes running the
    # README's loop.  together: jobs fall due together, 16 at a time, the loops
    # on get(timeout=5); sparse: one job at a time, the loops on get(timeout=0.3),
    # most of whose gets time out.  A job costs the look of the one waiter told
    # to look (and sometimes one more); a get that times out costs nothing, and
    # no waiter writes anything per job but, at most, its own return to idle
    name = uuid.uuid4().hex
    admin = redis_server.client()
    for src in SOURCES.values():  # no NOSCRIPT: each call counted once
        admin.script_load(src)
    admin.close()
    counts: Counter[str] = Counter()
    queues = [RedisDelayQueue(name, redis_server.client()) for _ in range(8)]
    for q in queues:
        counted(q, counts)
    producer = RedisDelayQueue(name, redis_server.client())
    done: List[str] = []
    timeout = 5.0 if pattern == "together" else 0.3

    def work(q: RedisDelayQueue) -> None:
        while True:
            job = q.get(timeout=timeout)
            if job is None:
                continue
            q.ack(job)
            if job.payload == b"stop":
                return
            done.append(job.id)

    workers = [threading.Thread(target=work, args=(q,)) for q in queues]
    for w in workers:
        w.start()
    time.sleep(0.3)  # all waiting
    counts.clear()
    if pattern == "together":
        for _ in range(2):
            producer.put_many([b"j"] * 16, [0.1] * 16)
            time.sleep(0.3)
        jobs = 32
    else:
        for _ in range(12):
            producer.put(b"j")
            time.sleep(0.1)
        jobs = 12
    end = time.monotonic() + 10
    while len(done) < jobs and time.monotonic() < end:
        time.sleep(0.01)
    time.sleep(0.1)  # the last workers back in their gets
    spent = Counter(counts)
    producer.put_many([b"stop"] * 8)
    for w in workers:
        w.join(10)
    assert len(done) == jobs and len(set(done)) == jobs
    assert spent["ack"] == jobs
    assert spent["claim"] <= 2 * jobs, spent  # one to two claims per job
    writes = sum(v for k, v in spent.items() if k not in ("claim", "ack"))
    assert spent["SET"] + spent["GET"] == 0 and writes <= jobs + 8, spent
    for q in queues:
        q.close()
    producer.close()
    check(redis_server, name, [])
