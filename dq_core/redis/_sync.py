"""RedisDelayQueue: the protocol on a blocking ``redis.Redis`` (or ``redis.RedisCluster``)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from time import monotonic
from typing import Any, Coroutine, Iterable, Iterator, List, Optional, TypeVar, Union, overload

import redis as _redis

from ._cron import Cron
from ._flows import RETRY_FOR, IfExists, _Flow
from ._job import Job
from ._protocol import _Protocol
from ._pubsub import _PING_DATA, _PubSub
from ._retry import RetryPolicy
from ._serializer import Payload, Serializer

T = TypeVar("T")
R = TypeVar("R")


class RedisDelayQueue(_Protocol[T, "_redis.Redis"]):
    """A delay queue in Redis, shared by every process and machine that opens it by name.

    Thread-safe (redis-py clients are).  At-least-once delivery: a job
    claimed by ``get`` is leased for ``lease`` seconds; unless acked (or
    nacked, or extended) by then it is due again with ``attempts + 1``, and
    past ``max_attempts`` deliveries it goes to the dead set.  Handlers must
    therefore be idempotent.  Time is the Redis server's, read inside the
    scripts.  Payloads are bytes or str (returned as given), or whatever
    ``serializer`` (an object with ``dumps``/``loads``) handles: nothing is
    ever unpickled unless the caller's serializer does it.  A payload the
    serializer cannot decode fails alone: that job goes to the dead set with
    the error as its reason, and the others of its batch are delivered.

    The queue's policy (``max_attempts``, and the dead set's retention
    ``dead_ttl`` seconds and ``dead_max`` jobs) is stored with the queue by
    the first client that states it; a client stating another value gets a
    ValueError, and one passing None uses the stored policy.  ``client`` is
    a ``redis.Redis`` (also one from ``redis.sentinel.Sentinel.master_for``)
    or a ``redis.RedisCluster`` (every key of a queue carries the hash tag
    ``{name}``: one slot).

    ``retry``, a :class:`RetryPolicy`, sets how long ``nack(job)`` without a
    delay waits (exponential backoff with jitter) and, with its
    ``max_attempts``, the queue's; it is stored with the queue as
    ``max_attempts`` is.

    ``rate`` (jobs a second, None: no limit) and ``burst`` limit the claims
    of the queue, by every client together: a token bucket on the server's
    clock, holding at most ``burst`` tokens (full at first), which every
    claimed job takes one of.  A waiting ``get`` sleeps until the next token
    when jobs are due but the bucket is empty.  Stored with the queue, as
    ``max_attempts`` is.

    A lost connection is ridden out: a waiting ``get`` reconnects with
    backoff and subscribes again until its own timeout (then it returns
    None); every other call retries for up to ``retry_for`` seconds (0 to
    50), then raises :class:`Unavailable`.  A retried call acts once.
    """

    __slots__ = ()
    _client_class = (_redis.Redis, _redis.RedisCluster)

    @overload
    def __init__(
        self: "RedisDelayQueue[Payload]",
        name: str,
        client: "Union[_redis.Redis, _redis.RedisCluster]",
        *,
        lease: float = 30.0,
        max_attempts: Optional[int] = None,
        serializer: None = None,
        dead_ttl: Optional[float] = None,
        dead_max: Optional[int] = None,
        retry_for: float = RETRY_FOR,
        retry: Optional[RetryPolicy] = None,
        rate: Optional[float] = None,
        burst: float = 1,
    ) -> None: ...

    @overload
    def __init__(
        self: "RedisDelayQueue[T]",
        name: str,
        client: "Union[_redis.Redis, _redis.RedisCluster]",
        *,
        lease: float = 30.0,
        max_attempts: Optional[int] = None,
        serializer: Serializer[T],
        dead_ttl: Optional[float] = None,
        dead_max: Optional[int] = None,
        retry_for: float = RETRY_FOR,
        retry: Optional[RetryPolicy] = None,
        rate: Optional[float] = None,
        burst: float = 1,
    ) -> None: ...

    def __init__(
        self,
        name: str,
        client: "Union[_redis.Redis, _redis.RedisCluster]",
        *,
        lease: float = 30.0,
        max_attempts: Optional[int] = None,
        serializer: Optional[Serializer[T]] = None,
        dead_ttl: Optional[float] = None,
        dead_max: Optional[int] = None,
        retry_for: float = RETRY_FOR,
        retry: Optional[RetryPolicy] = None,
        rate: Optional[float] = None,
        burst: float = 1,
    ) -> None:
        super().__init__(
            name,
            client,  # type: ignore[arg-type]
            lease,
            max_attempts,
            serializer,
            dead_ttl,
            dead_max,
            retry_for,
            retry,
            rate,
            burst,
        )

    async def _script(self, keys: List[str], args: List[Any], op: str) -> Any:
        return self._scripts[op](keys=keys, args=args)

    async def _config_get_policy(self) -> Any:
        return self.client.config_get("maxmemory-policy")

    async def _info_memory(self) -> Any:
        return self.client.info("memory")

    async def _register(self, score: int) -> None:
        self.client.zadd(self.keys[7], {self._me: score})

    async def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _new_listener(self) -> threading.Lock:
        return threading.Lock()

    def _try_listen(self) -> bool:
        return bool(self._listener.acquire(blocking=False))

    async def _listen(self, seconds: float) -> bool:
        return bool(self._listener.acquire(timeout=seconds))

    def _unlisten(self) -> None:
        self._listener.release()

    def _new_pubsub(self) -> "_PubSub":
        return _BlockingPubSub(self.client.pubsub())  # type: ignore[no-untyped-call, unused-ignore]  # typed in newer redis-py

    def _drive(self, flow: _Flow[R]) -> R:
        return _run_blocking(self._carry_out(flow))

    def put(
        self,
        payload: T,
        delay: float = 0.0,
        *,
        job_id: Optional[str] = None,
        if_exists: IfExists = "replace",
        priority: float = 0,
    ) -> str:
        """Schedule ``payload`` ``delay`` seconds from now (server time); return its job id.

        A ``job_id`` already held (scheduled, leased or dead) is, with
        ``if_exists="replace"`` (the default), replaced: new payload, new
        deadline, attempts back to 0, and a lease it had is lost (a handler
        running it cannot ack it, and the job runs again).  With
        ``if_exists="keep"`` the job held is left exactly as it is (payload,
        deadline, lease, attempts) and the id is returned: a put by id is then
        idempotent while the job exists (scheduled, leased or dead); once it
        was acked or cancelled, the same put schedules it afresh.

        ``priority``: among jobs that are due, lower priorities are claimed
        first, and equal ones by deadline, then first-in first-out; a job
        not yet due waits for its deadline whatever its priority.  A job
        keeps its priority when it is retried (nack, lease ended) or
        requeued.  O(log n).
        """
        return self._drive(self._put_one(payload, delay, "delay", False, job_id, if_exists, priority))

    def put_at(
        self,
        payload: T,
        when: float,
        *,
        job_id: Optional[str] = None,
        if_exists: IfExists = "replace",
        priority: float = 0,
    ) -> str:
        """Schedule ``payload`` at Unix time ``when`` (server clock); return its job id.

        ``job_id``, ``if_exists`` and ``priority`` as for :meth:`put`.  O(log n).
        """
        return self._drive(self._put_one(payload, when, "when", True, job_id, if_exists, priority))

    def put_many(
        self,
        payloads: Iterable[T],
        delays: Optional[Iterable[float]] = None,
        *,
        job_ids: Optional[Iterable[str]] = None,
        if_exists: IfExists = "replace",
        priority: float = 0,
    ) -> List[str]:
        """Schedule many payloads; ``delays`` default to 0.  O(k log n).

        Each script puts 500 jobs atomically, so a big batch never holds the
        server for long; a connection lost midway leaves the scripts already
        run done.  ``job_ids``, ``if_exists`` and ``priority`` (one for the
        batch) as for :meth:`put`.
        """
        return self._drive(self._put_many(payloads, delays, job_ids, if_exists, priority))

    def get(
        self, timeout: Optional[float] = None, *, ack: Union[Job[T], str, None] = None
    ) -> Optional[Job[T]]:
        """Claim the earliest due job, waiting up to ``timeout`` seconds (None: forever).

        Returns None on timeout.  The job is leased: ``ack`` it when done.
        While it waits it rides out a lost connection (a server restart, a
        failover): it reconnects, subscribes again, then looks; a server
        away until the timeout makes it return None.  ``timeout=0`` does not
        wait: it retries for ``retry_for`` seconds, then raises
        :class:`Unavailable`.  O(log n) on the server, one round trip when a
        job is due.

        ``ack``: a job this consumer is done with (a :class:`Job`, or an id:
        whichever lease it has), acked by the same server call that claims,
        before it claims: a worker loop's ack and next get in one round trip
        and one script.  The ack goes at the call's start, whatever the
        wait (alone when a waiting get knows no job is due).  A job whose
        lease was lost is not acked (it may run again elsewhere) and is
        logged as a warning on the ``dq_core.redis`` logger; call
        :meth:`ack` where its outcome matters.
        """
        return self._drive(self._get_flow(timeout, ack))

    def get_many(self, max_items: int, timeout: Optional[float] = 0) -> List[Job[T]]:
        """Claim up to ``max_items`` due jobs, earliest first; one round trip per 500.

        With ``timeout`` > 0 (None: forever), waits until at least one is due.
        O(k log n) on the server.
        """
        return self._drive(self._claim_flow(max_items, timeout))

    def ack(self, job_or_id: Union[Job[T], str]) -> bool:
        """Done with the job: delete it.  False if its lease was lost (it may run elsewhere).

        Given a Job, only that lease counts; given an id, whichever lease it has.
        O(log n).
        """
        return self._drive(self._ack_one(job_or_id))

    def ack_many(self, jobs: Iterable[Union[Job[T], str]]) -> List[bool]:
        """``ack`` for many jobs in one round trip per 500; one bool each.  O(k log n)."""
        return self._drive(self._ack_flow(jobs))

    def nack(self, job_or_id: Union[Job[T], str], delay: Optional[float] = None) -> bool:
        """Give the job back, due again after ``delay`` seconds (or dead past max_attempts).

        Without a delay (None), the queue's :class:`RetryPolicy` (stored with
        the queue, whichever client stated it) sets it from the job's
        attempts; a queue without one makes the job due again at once.
        False if the lease was lost.  O(log n).
        """
        return self._drive(self._nack_flow(job_or_id, delay))

    def extend(self, job_or_id: Union[Job[T], str], lease: Optional[float] = None) -> bool:
        """Keep the lease ``lease`` seconds (default: the queue's) from now; False if lost.  O(log n)."""
        return self._drive(self._extend_flow(job_or_id, lease))

    @contextmanager
    def keep_alive(self, job: Job[T]) -> Iterator[threading.Event]:
        """Extend ``job``'s lease every ``lease``/3 seconds while the block runs.

        For handlers that may run longer than the lease.  Yields an Event set
        when the lease is lost (the job may then run elsewhere): an extend
        found it lost (the job was acked, replaced or cancelled meanwhile),
        the server stayed away until the lease ended, or an extend failed
        otherwise (logged).  A lost connection is retried at each beat.
        O(log n) per extension.
        """
        self._check_job(job)
        lost = threading.Event()
        stop = threading.Event()

        async def pause(seconds: float) -> bool:
            return not stop.wait(seconds)

        async def extend(until: float) -> bool:
            return self._drive(self._extend_flow(job, None, until))

        beat = self._beat(pause, extend, lost.set)
        thread = threading.Thread(
            target=_run_blocking, args=(beat,), name=f"keep_alive {job.id}", daemon=True
        )
        thread.start()
        try:
            yield lost
        finally:
            stop.set()
            thread.join()

    def put_recurring(
        self,
        payload: T,
        *,
        every: Optional[float] = None,
        cron: "Union[str, Cron, None]" = None,
        job_id: Optional[str] = None,
        priority: float = 0,
    ) -> str:
        """Run ``payload`` every ``every`` seconds, or at the times of a ``cron``
        expression (:class:`Cron`: five fields, UTC); return its id.

        One job at a time: the queue holds one instance of it, a job like any
        other (claimed, leased, acked, retried), whose id is
        ``"<job_id>@<deadline in microseconds>"``.  Claiming it schedules the
        next one, at the first firing after that moment: so it runs once per
        firing across every worker, and firings missed while no worker claimed
        (an outage) collapse into one.  ``every`` counts from the put: first
        ``every`` seconds later.  A ``job_id`` already recurring is replaced
        (its scheduled instance goes; a running one goes on).  ``priority``
        as for :meth:`put`.  O(log n); a cron's next firing costs up to a few
        thousand steps of the claim script, once a firing.
        """
        return self._drive(self._recur_flow(payload, every, cron, job_id, priority))

    def cancel_recurring(self, job_id: str) -> bool:
        """Stop a recurring job, and delete its scheduled instance (a running one
        goes on: ack it as usual); False if no such recurring job.  O(log n)."""
        return self._drive(self._by_id_flow("unrecur", job_id))

    def cancel(self, job_id: str) -> bool:
        """Delete the job whatever its state (scheduled, leased, dead); False if unknown.  O(log n)."""
        return self._drive(self._by_id_flow("cancel", job_id))

    def reschedule(self, job_id: str, delay: float) -> bool:
        """Move a scheduled job to ``delay`` seconds from now; False unless it is scheduled.

        It goes behind jobs with an equal deadline.  O(log n).
        """
        us = self._delay(delay)
        return self._drive(self._by_id_flow("reschedule", job_id, us))

    def requeue_dead(self, job_id: str, delay: float = 0.0) -> bool:
        """Schedule a dead job again, its attempts back to 0; False if it is not dead.  O(log n)."""
        us = self._delay(delay)
        return self._drive(self._by_id_flow("requeue_dead", job_id, us))

    def qsize(self) -> int:
        """Jobs not yet done: scheduled (due or not) and leased.  O(log n)."""
        return self._drive(self._qsize_flow())

    def stats(self) -> dict[str, int]:
        """Counts of jobs: ``delayed``, ``due``, ``leased``, ``dead``.  O(log n)."""
        return self._drive(self._stats_flow())

    def dead(self, limit: Optional[int] = None, *, start: int = 0) -> List[Job[T]]:
        """The dead jobs, oldest death first: at most ``limit`` from rank ``start``.

        Each carries its ``reason``; a payload the serializer cannot decode
        comes as its raw bytes.  Read in pages of 500.  O(k + log n).
        """
        return self._drive(self._dead_flow(limit, start))

    def peek(self, limit: int = 10) -> List[Job[T]]:
        """The next ``limit`` (0 to 1000) scheduled jobs, without claiming them.

        Those due first, in the order a claim would take them (priority,
        deadline, first-in first-out), then those not yet due by deadline;
        leased and dead jobs are not among them.  A payload the serializer
        cannot decode comes as its raw bytes.  O(limit + log n).
        """
        jobs, _ = self._drive(self._peek_flow(limit))
        return jobs

    def purge_dead(self, older_than: float = 0.0) -> int:
        """Delete the jobs dead for at least ``older_than`` seconds; return how many.  O(k log n)."""
        return self._drive(self._purge_flow(older_than))

    def clear(self) -> None:
        """Delete every job of the queue, in every state, and its stored policy.  O(n)."""
        self._drive(self._run("clear"))

    def close(self) -> None:
        """Close the subscriptions kept for waiting; the queue stays usable.

        A queue object that waited is among the idle waiters that wake-ups
        name: closing it takes it out (else the next job named for it is
        late by a few seconds)."""
        for pubsub in self._idle_subscriptions():
            _run_blocking(pubsub.close())
        if self._unregistering():
            try:
                self.client.zrem(self.keys[7], self._me)
            except _redis.RedisError:
                pass  # the server is away: it drops this waiter when it names it


class _BlockingPubSub(_PubSub):
    """The blocking face's subscription: its coroutines never suspend."""

    __slots__ = ()

    async def message(self, timeout: float) -> Any:
        return self.raw.get_message(timeout=timeout)

    async def send_subscribe(self, channels: List[str]) -> None:
        self.raw.subscribe(*channels)

    async def ping(self) -> None:
        self.raw.ping(_PING_DATA)

    async def close(self) -> None:
        self.raw.close()

    async def wait(self, seconds: float) -> List[bytes]:
        # A socket timeout waits in poll(), which counts whole milliseconds rounded
        # up: listen until the last millisecond, sleep the rest (nanosleep).
        end = monotonic() + seconds
        msg = self.raw.get_message(timeout=max(0.0, seconds - 0.001))
        if msg is not None:
            return await self.collect(msg)
        left = end - monotonic()
        if left > 0.0:
            time.sleep(left)
        return []


def _run_blocking(step: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine of the blocking face's I/O to its end: it never suspends."""
    try:
        step.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    step.close()
    raise RuntimeError("a blocking RedisDelayQueue step suspended")
