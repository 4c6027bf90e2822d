"""dq_core.redis on Redis Sentinel: a real master, replica and redis-sentinel on
loopback (tests/redis_server.py), the queue on
``redis.sentinel.Sentinel(...).master_for(...)``; the master is killed while
workers claim and ack, and a producer puts through the failover.

The sentinel declares the master down after 300 ms (``down-after-milliseconds``;
30 s by default) and promotes the replica: about a second and a half in all.
``perf/redis_sentinel.py`` runs the same under more load and prints its counts.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from typing import Dict, List, Tuple

import redis
import redis.sentinel

from dq_core.redis import RedisDelayQueue
from redis_server import Sentinel, sentinel  # noqa: F401 (fixture)


def replicated(sentinels: Sentinel) -> bool:
    """Whether the replica has every change the master made."""
    offsets = []
    for server, field in ((sentinels.master, "master_repl_offset"), (sentinels.replica, "slave_repl_offset")):
        client = server.client()
        offsets.append(client.info("replication")[field])
        client.close()
    return offsets[0] == offsets[1]


def test_a_failover_under_load_loses_no_job_and_the_workers_resume(sentinel):
    watch = redis.sentinel.Sentinel([("127.0.0.1", sentinel.port)], socket_timeout=1.0)

    def queue() -> RedisDelayQueue:  # one client each, as separate processes would have
        return RedisDelayQueue(name, watch.master_for(Sentinel.NAME, socket_timeout=1.0), lease=30.0)

    name = uuid.uuid4().hex
    producer = queue()
    # due one after another over 3 s: the workers claim and ack when the master dies
    before = producer.put_many([b"b%d" % i for i in range(150)], [i * 0.02 for i in range(150)])
    end = time.monotonic() + 10
    while not replicated(sentinel):  # puts that returned before the kill are on the replica
        assert time.monotonic() < end
        time.sleep(0.01)
    deliveries: Dict[str, List[Tuple[float, bool]]] = defaultdict(list)  # id -> (when, acked)
    lock = threading.Lock()
    stop = threading.Event()
    errors: List[BaseException] = []

    def work() -> None:
        q = queue()
        try:
            while not stop.is_set():
                job = q.get(timeout=0.5)
                if job is None:
                    continue
                at = time.monotonic()
                acked = q.ack(job)
                with lock:
                    deliveries[job.id].append((at, acked))
        except BaseException as exc:  # the loop must never die
            errors.append(exc)
        finally:
            q.close()
            q.client.close()

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    time.sleep(1.0)
    after: List[str] = []
    putter = threading.Thread(  # puts that ride the failover out
        target=lambda: after.extend(producer.put_many([b"a%d" % i for i in range(20)]))
    )
    killed = time.monotonic()
    sentinel.master.kill()  # SIGKILL, mid-load
    putter.start()
    while sentinel.master_address()[1] != sentinel.replica.port:
        assert time.monotonic() < killed + 10, "no failover"
        time.sleep(0.02)
    failover = time.monotonic() - killed
    putter.join(15)
    assert len(after) == 20, "the puts did not ride the failover out"
    end = time.monotonic() + 15
    while len(deliveries) < len(before) + len(after) and time.monotonic() < end:
        time.sleep(0.05)
    stop.set()
    for w in workers:
        w.join(10)
    assert errors == []
    assert set(deliveries) == set(before) | set(after)  # nothing lost
    # the workers' outage: the longest pause in the deliveries after the kill
    # (a get that claimed before it may return just after it)
    times = sorted(t for runs in deliveries.values() for t, _ in runs if t > killed - 0.5)
    gap, resumed = max((b - a, b - killed) for a, b in zip(times, times[1:]))
    assert resumed < failover + 2.0, (resumed, failover, gap)
    # a job runs twice only when its ack (or claim) was lost with the master:
    # the first run was acked (True) before the kill and the replica never
    # heard of it, or claimed before the kill and its ack came too late (False)
    twice = {i: runs for i, runs in deliveries.items() if len(runs) > 1}
    for job_id, runs in twice.items():
        assert len(runs) == 2 and runs[0][0] < killed, (job_id, runs)
        assert runs[1][1] is True
    assert not set(twice) & set(after)  # puts through the failover: each once
    stats = producer.stats()
    assert stats == {"delayed": 0, "due": 0, "leased": 0, "dead": 0}, stats
    producer.close()
    producer.client.close()
    for client in watch.sentinels:
        client.close()
    print(
        f"failover {failover:.2f} s, resumed {resumed:.2f} s, "
        f"{len(before) + len(after)} jobs, {len(twice)} run twice"
    )
