"""The queue's protocol, sans I/O: validation, the scripts' arguments and
replies, the flows of steps each method takes, and the driver that carries
a flow's steps out with the I/O a face supplies as coroutines.

A flow is a generator: it yields a step (run a script, become the listener,
subscribe, wait for a wake-up) and receives the step's outcome.  The driver
(``_Protocol._carry_out``) is written once for both faces; the blocking
face's coroutines never suspend, so it runs the driver to its end with one
``send``.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from time import monotonic
from typing import (
    Any, Awaitable, Callable, Generator, Generic, Iterable, List, Literal, Optional, Tuple,
    TypeVar, Union, cast,
)

import redis as _redis

from .._convert import to_count, to_real
from .._pickling import Uncopyable
from .._validate import check_timeout
from .._waiting import MAX_WAIT
from ._job import Job
from ._scripts import CHUNK, KEY_NAMES, READ_ONLY, SOURCES
from ._serializer import Serializer, check_serializer, decode, encode

T = TypeVar("T")
R = TypeVar("R")
C = TypeVar("C")  # the client a face runs on
#: What ``put(..., if_exists=...)`` takes: replace a job held under the id, or keep it.
IfExists = Literal["replace", "keep"]

_US = 1_000_000
#: Deadlines are integer microseconds in a double, exact below 2**53: a
#: delay or a Unix time past 2**52 us (142 years) is refused, so that now +
#: delay stays exact.
_MAX_US = 2**52
#: Delays below this many seconds take the fast path of a put (no overflow check).
_FAST_SECONDS = 1e9


class _Run:
    """Step: run the named script with these arguments; the flow gets its reply."""

    __slots__ = ("op", "args")

    def __init__(self, op: str, args: List[Any]) -> None:
        self.op = op
        self.args = args


class _Wait:
    """Step: wait on the subscription until a wake-up or ``seconds`` pass (-> False if it broke)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class _Listen:
    """Step: become the queue object's listener, waiting up to ``seconds`` for
    the one before to leave, and hold its subscription (-> False: not in time)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


#: What an idle subscription may raise once the server restarted.
_IDLE_ERRORS = (_redis.ConnectionError, _redis.TimeoutError, OSError)
#: What a script call may raise when its reply was lost: it is sent once more,
#: with the same nonce, so that the script returns its first reply.
_LOST_REPLY = (_redis.ConnectionError, _redis.TimeoutError)
#: A waiting get looks again at least this often (seconds), whatever the
#: subscription says: a half-open subscription costs at most this much delay.
_RECHECK = 2.0
#: How long a wake-up's ticket is kept (milliseconds): past any replay of its SET.
_TICKET_MS = 10_000
#: Jobs per put or claim script: each holds the server a few milliseconds at most.
_BATCH = 500

_SUBSCRIBE = "subscribe"  # step: the listener subscribes anew (its subscription broke)
# what a wait tells the flow besides True (look) and False (broken): look as the
# one listener that took a due time's ticket (and tell the others what is due
# next), or leave the look to the listener that took it
_WON = "won"
_PASS = "pass"
_TAKE_IDLE = "take idle"  # step: become the listener if free and subscribed already (-> bool)
#: Wake-ups read from an idle subscription before it is cheaper to subscribe anew.
_STALE = 64
_Step = Union[_Run, _Wait, _Listen, str]
_Flow = Generator[_Step, Any, T]
_POLICY = ("max_attempts", "dead_ttl", "dead_max")


def _seconds(us: Any) -> float:
    return float(us) / _US


def _micros(seconds: float, name: str) -> int:
    if not seconds > 0.0:
        return 0
    if not seconds * _US <= _MAX_US:  # inf too
        raise OverflowError(f"{name} is too far in the future, got {seconds!r} seconds")
    return math.ceil(seconds * _US)


def _policy_error(exc: _redis.ResponseError) -> Optional[ValueError]:
    """The ValueError for a script's refusal of a conflicting policy, else None."""
    words = str(exc).split()
    if len(words) != 4 or words[0] != "DQPOLICY":
        return None
    _, name, stored, given = words
    if name == "dead_ttl":
        stored, given = repr(int(stored) / _US), repr(int(given) / _US)
    return ValueError(f"{name}={given} conflicts with the queue's stored {name}={stored}: "
                      f"a queue's policy is set by the first client that states it "
                      f"(pass {name}=None to use the stored one, or clear() the queue)")


class _Protocol(Uncopyable, Generic[T, C]):
    """The queue's protocol, written once: validation, the scripts' arguments,
    their replies, the flows of steps, and the driver that carries a flow's
    steps out with the face's I/O (``_script``, ``_new_pubsub``)."""

    __slots__ = ("name", "client", "lease", "max_attempts", "dead_ttl", "dead_max", "serializer",
                 "channel", "keys", "_prefix", "_head", "_scripts", "_idle", "_idle_lock",
                 "_pid", "_checked", "_listener", "_quiet", "_ticket_for", "_ticket_next", "_offset", "_seen",
                 "_me")
    _client_class: Any  # what the face runs on: redis.Redis or redis.asyncio.Redis

    def __init__(self, name: str, client: C, lease: float, max_attempts: Optional[int],
                 serializer: Optional[Serializer[T]], dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None:
        expected = self._client_class
        if not isinstance(client, expected):
            module = expected[0].__module__.split(".client")[0]
            raise TypeError(f"client must be a {module}.Redis or {module}.RedisCluster, "
                            f"not {type(client).__name__!r}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, not {name!r}")
        if "{" in name or "}" in name:
            raise ValueError(f"name must not contain '{{' or '}}' (it becomes the keys' "
                             f"Redis Cluster hash tag), got {name!r}")
        kwargs = client.get_connection_kwargs()
        if kwargs.get("decode_responses"):
            raise ValueError("client must be made with decode_responses=False: payloads are bytes")
        lease = to_real(lease, "lease")
        if not 0.0 < lease < math.inf:
            raise ValueError(f"lease must be a positive finite number of seconds, got {lease!r}")
        if max_attempts is not None:
            max_attempts = to_count(max_attempts, "max_attempts")
            if max_attempts < 1:
                raise ValueError("max_attempts must be at least 1 (or None: no limit)")
        ttl_us = ""
        if dead_ttl is not None:
            dead_ttl = to_real(dead_ttl, "dead_ttl")
            if not dead_ttl > 0.0:
                raise ValueError(f"dead_ttl must be a positive number of seconds, got {dead_ttl!r}")
            ttl_us = str(_micros(dead_ttl, "dead_ttl"))
        if dead_max is not None:
            dead_max = to_count(dead_max, "dead_max")
            if dead_max < 1:
                raise ValueError("dead_max must be at least 1 (or None: no limit)")
        check_serializer(serializer)
        self.name, self.lease, self.serializer = name, lease, serializer
        # the policy as this client states it (None: the queue's stored one)
        self.max_attempts, self.dead_ttl, self.dead_max = max_attempts, dead_ttl, dead_max
        prefix = f"dq:{{{name}}}:"
        self._prefix = prefix
        self.keys = [prefix + k for k in KEY_NAMES]
        self.channel = prefix + "wake"
        self._head = [self.channel, "" if max_attempts is None else str(max_attempts), ttl_us,
                      "" if dead_max is None else str(dead_max)]
        self._scripts = {op: client.register_script(src) for op, src in SOURCES.items()}
        self.client = client
        self._idle: List[_PubSub] = []  # subscriptions kept between two waits
        self._pid = os.getpid()  # whose they are: a forked child subscribes anew
        self._listener = self._new_listener()  # held by the one waiter that listens
        # Until this monotonic time no job can be due, as a look made while
        # subscribed found; any wake-up since resets it.  A waiter arriving
        # while another listens then waits for it without a look of its own.
        self._quiet = 0.0
        # (time, ticket key) when _quiet is the due time a wake-up announced:
        # then at that time only the listener (of all processes) that takes
        # the ticket looks
        self._ticket_for: Optional[Tuple[float, str]] = None
        # the earliest due time announced after _quiet: what a listener that
        # left a look to another waits for next
        self._ticket_next: Optional[Tuple[float, str]] = None
        # this process's monotonic clock minus the server's (as a look found it,
        # taken when its reply came: a due time is then never reached early)
        self._offset: Optional[float] = None
        # the server's time (microseconds) of the latest look that left no job
        # due: a wake-up published before it tells nothing new
        self._seen = -1
        self._me = os.urandom(8).hex()  # who takes a wake-up's ticket
        self._checked = False  # the server's eviction policy, looked at on first contact
        # the blocking face's threads share _idle; the asyncio face holds it
        # across no await, so the lock never blocks its loop
        self._idle_lock = threading.Lock()

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in ("dead_ttl", "dead_max")
                        if getattr(self, k) is not None)
        return (f"{type(self).__name__}({self.name!r}, lease={self.lease!r}, "
                f"max_attempts={self.max_attempts!r}{extra})")

    # -- conversions

    @staticmethod
    def _id(job_id: object, name: str = "job_id") -> str:
        if not isinstance(job_id, str):
            raise TypeError(f"job_id must be a str, not {type(job_id).__name__!r}"
                            if name == "job_id" else
                            f"{name} must be a str, not {type(job_id).__name__!r}")
        return job_id

    def _lease_of(self, job: object) -> Tuple[str, str]:
        if isinstance(job, Job):
            return job.id, job._token
        return self._id(job, "job_or_id"), ""

    @staticmethod
    def _delay(delay: object, name: str = "delay") -> int:
        return _micros(to_real(delay, name), name)

    def _claimed(self, flat: List[Any]) -> Tuple[List[Job[T]], List[Any]]:
        """The jobs of a claim's reply, and (id, lease, reason) for those that cannot run."""
        datas = flat[3::5]
        if self.serializer is None and None not in datas:
            try:  # in bulk; a payload that fails sends every job the long way
                payloads = [d[1:].decode() if d[0] == 115 else d[1:] for d in datas]  # b"s"
                deadlines = [float(d) / _US for d in flat[4::5]]
                return list(map(Job, map(bytes.decode, flat[2::5]), payloads, deadlines,
                                flat[5::5], map(bytes.decode, flat[6::5]))), []
            except Exception:
                pass
        jobs: List[Job[T]] = []
        bad: List[Any] = []
        for i in range(2, len(flat), 5):
            job_id, data, token = flat[i].decode(), flat[i + 1], flat[i + 4].decode()
            if data is None:  # a replayed claim whose payload went meanwhile
                bad += (job_id, token, "payload missing")
                continue
            try:
                payload = decode(self.serializer, data)
            except Exception as exc:  # the serializer's: this job fails alone
                bad += (job_id, token, f"payload undecodable: {type(exc).__name__}: {exc}")
                continue
            jobs.append(Job(job_id, payload, _seconds(flat[i + 2]), int(flat[i + 3]), token))
        return jobs, bad

    def _dead_jobs(self, flat: List[Any]) -> List[Job[T]]:
        jobs: List[Job[T]] = []
        for i in range(0, len(flat), 5):
            data, reason = flat[i + 1], flat[i + 4].decode(errors="replace")
            payload: Any = None
            if data is not None:
                try:
                    payload = decode(self.serializer, data)
                except Exception:  # dead() never raises on a bad payload: the raw bytes
                    payload = data[1:]
            jobs.append(Job(flat[i].decode(), payload, _seconds(flat[i + 2]), int(flat[i + 3]),
                            reason=reason))
        return jobs

    # -- flows: each yields steps and returns the method's result

    def _run(self, op: str, *args: Any) -> _Flow[Any]:
        return (yield _Run(op, list(args)))

    def _put_flow(self, payloads: Iterable[object], times: Iterable[object], name: str,
                  absolute: bool, job_ids: Optional[Iterable[object]],
                  if_exists: object) -> _Flow[List[str]]:
        if if_exists not in ("replace", "keep"):
            raise ValueError(f"if_exists must be 'replace' or 'keep', got {if_exists!r}")
        items = list(payloads)
        n = len(items)
        head: List[Any] = ["1" if absolute else "0", if_exists]
        ts = list(times)
        if len(ts) != n:
            plural = name if name.endswith("s") else name + "s"
            raise ValueError(f"payloads and {plural} differ in length: {n} != {len(ts)}")
        if job_ids is None:  # 128 random bits each, as uuid4 has, drawn at once
            hexes = os.urandom(16 * n).hex()
            ids = [hexes[i:i + 32] for i in range(0, 32 * n, 32)]
            head[1] = "new"  # ids no job holds: the script looks none up
        else:
            ids = [self._id(j, f"job_ids[{i}]") for i, j in enumerate(job_ids)]
            if len(ids) != n:
                raise ValueError(f"payloads and job_ids differ in length: {n} != {len(ids)}")
        many = n > 1 or name.endswith("s")
        # fast paths for the common types, in bulk; the general ones name what failed
        if self.serializer is None and all(type(p) is bytes for p in items):
            datas = [b"b" + p for p in cast(List[bytes], items)]
        else:
            datas = [encode(self.serializer, p, f"payload[{i}]" if many else "payload")
                     for i, p in enumerate(items)]
        if all(type(t) is float and 0.0 <= t < _FAST_SECONDS for t in ts):
            micros = [math.ceil(t * _US) for t in cast(List[float], ts)]
        else:
            labels = [f"{name}[{i}]" if many else name for i in range(n)]
            micros = [_micros(to_real(t, label), label) for t, label in zip(ts, labels)]
        args: List[Any] = [None] * (3 * n)
        args[0::3], args[1::3], args[2::3] = ids, datas, micros
        # in scripts of _BATCH jobs: each holds the server a few milliseconds
        width = 3 * _BATCH
        for i in range(0, len(args), width):
            yield from self._run("put", *head, *args[i:i + width])
        return ids

    def _put_one(self, payload: object, t: object, name: str, absolute: bool,
                 job_id: Optional[object], if_exists: object) -> _Flow[str]:
        ids = None if job_id is None else [self._id(job_id)]
        out = yield from self._put_flow([payload], [t], name, absolute, ids, if_exists)
        return out[0]

    def _put_many(self, payloads: Iterable[object], delays: Optional[Iterable[object]],
                  job_ids: Optional[Iterable[object]], if_exists: object) -> _Flow[List[str]]:
        items = list(payloads)
        times = [0] * len(items) if delays is None else delays
        return self._put_flow(items, times, "delays", False, job_ids, if_exists)

    def _claim_flow(self, max_items: object, timeout: object) -> _Flow[List[Job[T]]]:
        try:
            n = to_count(max_items, "max_items")
        except ValueError:  # negative: refused below, with the message of 0
            n = 0
        if n < 1:
            raise ValueError(f"max_items must be at least 1, got {max_items!r}")
        end = math.inf if timeout is None else monotonic() + check_timeout(timeout)
        lease = _micros(self.lease, "lease")
        # One waiter per queue object listens (holds the subscription, looks
        # on each wake-up); the others wait for it to leave, so a wake-up
        # costs one claim per process, not one per waiter.  A subscription
        # left by an earlier wait costs nothing to take: then the first look
        # already counts, saving a round trip when it must wait.
        listening = end > monotonic() and (yield _TAKE_IDLE)
        jobs: List[Job[T]] = []
        look = not (end > monotonic() and monotonic() < self._quiet)
        announce = ""  # '1': this look took a ticket, so it tells the others what is due next
        while True:
            if not look:
                look = True
                reply = [0, -1]  # as an empty look: no jobs, nothing to time
            else:
                # in scripts of _BATCH jobs at most, until enough or none left due
                want = min(n - len(jobs), _BATCH)
                reply = yield from self._run("claim", want, lease, announce)
                came = monotonic()
                announce = ""
                now, wake = reply[0], reply[1]
                self._offset = came - now / _US
                if (wake < 0 or wake > now) and now > self._seen:
                    self._seen = now  # nothing left due: it saw every job due by now
                if listening:  # a look made while subscribed: it stays true until a wake-up
                    self._quiet = math.inf if wake < 0 else came + (wake - now) / _US
                    # every listener that knows of that time races for its ticket
                    self._ticket_for = (self._quiet, f"{self._prefix}t:{wake}")
                    self._ticket_next = None
            got = (len(reply) - 2) // 5
            if got:
                more, bad = self._claimed(reply)
                jobs += more
                if bad:  # undecodable: dead with the reason, the others delivered
                    yield from self._run("bury", *bad)
                if len(jobs) < n and got == want:
                    continue
                if jobs:
                    return jobs
                continue  # every one was bad: look again
            if jobs:
                return jobs
            left = end - monotonic()
            if left <= 0.0:
                return []
            if not listening:
                # subscribed before looking again: no put can slip between
                if not (yield _Listen(min(left, MAX_WAIT))):
                    if end - monotonic() <= 0.0:
                        return []  # the listener looks for due jobs meanwhile
                    continue
                listening = True
                look = not monotonic() < self._quiet
                continue
            # until something may be due (clocks apart: never a negative wait)
            left = max(0.0, min(left, self._quiet - monotonic()))
            # never trust the subscription for long: it may be half-open
            waited = yield _Wait(min(left, _RECHECK))
            if not waited:
                yield _SUBSCRIBE  # it broke: subscribe anew, then look
            elif waited is _PASS:
                look = False  # another listener looks, and tells what is due next
            elif waited is _WON:
                announce = "1"

    def _get_flow(self, timeout: object) -> _Flow[Optional[Job[T]]]:
        jobs = yield from self._claim_flow(1, timeout)
        return jobs[0] if jobs else None

    def _ack_flow(self, jobs: Iterable[object]) -> _Flow[List[bool]]:
        args: List[str] = []
        for job in jobs:
            args += self._lease_of(job)
        out: List[bool] = []
        for i in range(0, len(args), 2 * _BATCH):
            reply = yield from self._run("ack", *args[i:i + 2 * _BATCH])
            out += [c == 49 for c in reply]  # one b"1" (held) or b"0" each
        return out

    def _ack_one(self, job: object) -> _Flow[bool]:
        out = yield from self._ack_flow([job])
        return out[0]

    def _nack_flow(self, job: object, delay: object) -> _Flow[bool]:
        job_id, token = self._lease_of(job)
        return bool((yield from self._run("nack", job_id, token, self._delay(delay))))

    def _extend_flow(self, job: object, lease: object) -> _Flow[bool]:
        job_id, token = self._lease_of(job)
        seconds = self.lease if lease is None else to_real(lease, "lease")
        if not seconds > 0.0:
            raise ValueError(f"lease must be a positive number of seconds, got {seconds!r}")
        return bool((yield from self._run("extend", job_id, token, _micros(seconds, "lease"))))

    def _by_id_flow(self, op: str, job_id: object, *args: Any) -> _Flow[bool]:
        return bool((yield from self._run(op, self._id(job_id), *args)))

    def _stats_flow(self) -> _Flow[dict[str, int]]:
        reply = yield from self._run("stats")
        return dict(zip(("delayed", "due", "leased", "dead"), map(int, reply)))

    def _qsize_flow(self) -> _Flow[int]:
        stats = yield from self._stats_flow()
        return stats["delayed"] + stats["due"] + stats["leased"]

    def _dead_flow(self, limit: Optional[object], start: object) -> _Flow[List[Job[T]]]:
        first = to_count(start, "start")
        if first < 0:
            raise ValueError(f"start must be a non-negative int, got {start!r}")
        total = None if limit is None else to_count(limit, "limit")
        if total is not None and total < 0:
            raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
        jobs: List[Job[T]] = []
        while total is None or len(jobs) < total:  # in pages of _BATCH: never one long script
            want = _BATCH if total is None else min(_BATCH, total - len(jobs))
            rank = first + len(jobs)
            reply = yield from self._run("dead", rank, rank + want - 1)
            jobs += self._dead_jobs(reply)
            if len(reply) < 5 * want:
                break
        return jobs

    def _purge_flow(self, older_than: object) -> _Flow[int]:
        age = to_real(older_than, "older_than")
        if not age >= 0.0:
            raise ValueError(f"older_than must be a non-negative number of seconds, got {age!r}")
        us = _micros(age, "older_than")
        total = 0
        while True:
            n = yield from self._run("purge_dead", us)
            total += int(n)
            if n < CHUNK:
                return total

    # -- keeping a lease alive: the beat written once; the faces supply its pause
    # (a thread's Event wait, an asyncio sleep) and their extend

    @staticmethod
    def _check_job(job: object) -> None:
        if not isinstance(job, Job):
            raise TypeError(f"job must be a Job, not {type(job).__name__!r}")

    async def _beat(self, pause: Callable[[float], Awaitable[bool]],
                    extend: Callable[[], Awaitable[bool]], lost: Callable[[], None]) -> None:
        """Extend a lease after every pause of ``lease``/3 (a pause returning False
        ends it) until an extend finds the lease lost: then call ``lost``."""
        while await pause(self.lease / 3):
            try:
                if not await extend():
                    lost()
                    return
            except _LOST_REPLY:
                pass  # the server is away: try again at the next beat

    # -- carrying a flow out: written once for both faces, which supply the I/O
    # as coroutines (the blocking face's never suspend; see _run_blocking)

    async def _script(self, keys: List[str], args: List[Any], op: str) -> Any:
        raise NotImplementedError

    async def _eviction_policy(self) -> Any:
        raise NotImplementedError

    def _new_pubsub(self) -> "_PubSub":
        raise NotImplementedError

    async def _check_eviction(self) -> None:
        """Warn once if the server may evict keys (CONFIG may be disabled: then say nothing)."""
        self._checked = True
        try:
            reply = await self._eviction_policy()
        except _redis.ResponseError:
            return
        if isinstance(reply, dict):
            values = list(reply.values())
        else:
            values = list(reply)[1::2] if isinstance(reply, (list, tuple)) else []
        for value in values:
            policy = value.decode() if isinstance(value, bytes) else str(value)
            if policy != "noeviction":
                warnings.warn(
                    f"Redis maxmemory-policy is {policy!r}: the server may evict the keys of "
                    f"queue {self.name!r} and lose its jobs; set maxmemory-policy noeviction",
                    RuntimeWarning, stacklevel=4)
                return

    async def _call(self, step: _Run) -> Any:
        """Run a script; a lost reply is retried once with the same nonce (replay-safe)."""
        if not self._checked:
            await self._check_eviction()
        op = step.op
        nonce = "" if op in READ_ONLY else os.urandom(8).hex()
        keys = self.keys + [self._prefix + "r:" + nonce]
        args = self._head + [nonce] + step.args
        try:
            try:
                return await self._script(keys, args, op)
            except _LOST_REPLY:
                if not nonce:
                    raise
            return await self._script(keys, args, op)  # the script returns its first reply
        except _redis.ResponseError as exc:
            policy = _policy_error(exc)
            if policy is not None:
                raise policy from None
            raise

    async def _carry_out(self, flow: _Flow[R]) -> R:
        pubsub: Optional[_PubSub] = None
        listening = False
        ok = False
        self._forked()
        try:
            going, step = _finish(flow, None)
            while going:
                value: Any = None
                if type(step) is _Run:
                    value = await self._call(step)
                elif type(step) is _Listen:
                    listening = value = await self._listen(step.seconds)
                    if listening:
                        pubsub = await self._subscribe()
                elif step is _SUBSCRIBE:
                    if pubsub is not None:  # a broken one, given up
                        old, pubsub = pubsub, None
                        await old.close()
                    pubsub = await self._subscribe()
                elif step is _TAKE_IDLE:
                    if self._try_listen():
                        listening = True
                        pubsub = await self._take_idle()
                        if pubsub is None:  # none kept: listen later, if it must wait
                            listening = False
                            self._unlisten()
                    value = pubsub is not None
                else:
                    assert pubsub is not None and isinstance(step, _Wait)
                    try:
                        end = monotonic() + step.seconds
                        while True:
                            wakeups = await pubsub.wait(max(0.0, end - monotonic()))
                            if not wakeups:  # the time is up: look, or leave it
                                value = await self._time_up()
                                break
                            value = await self._must_look(wakeups)
                            if value:
                                self._quiet = 0.0  # whatever was known is old
                                break
                            end = min(end, self._quiet)  # nothing due before then
                    except _IDLE_ERRORS:  # killed or broken: the flow subscribes anew
                        self._quiet = 0.0
                        old, pubsub = pubsub, None
                        await old.close()
                        value = False
                going, step = _finish(flow, value)
            ok = True
            return step  # type: ignore[no-any-return]
        finally:
            try:
                if pubsub is not None:
                    if ok and self._pid == os.getpid():
                        with self._idle_lock:
                            self._idle.append(pubsub)
                    else:  # a broken, cancelled or half-read connection is not reused
                        await pubsub.close()
            finally:
                if listening:  # the next waiter listens now
                    self._unlisten()

    async def _must_look(self, wakeups: List[bytes]) -> Any:
        """Whether the listener must look after these wake-ups: True, _WON, or False.

        A wake-up published before a look that left no job due is dropped.  A job due later only brings the listener's wait forward, with
        the ticket of its time (see _time_up); a job due now is looked for by the
        one listener (of all processes) that takes its ticket (_WON); several
        jobs, or a wake-up not understood, by every one (True).
        """
        for data in wakeups:
            parts = data.split(b":")
            if len(parts) != 4 or self._offset is None:
                return True
            at, sent = int(parts[0]), int(parts[3])
            if sent < self._seen and at <= self._seen:
                continue  # stale: a later look saw it (a clock stepped back costs a re-check)
            if parts[2] != b"1":
                return True
            due = at / _US + self._offset  # on this process's monotonic clock
            # due later on the server when published, or on this clock now
            if at > sent or due > monotonic() + 0.001:
                # the earliest known: at that time the listener that takes the
                # time's ticket looks (the same ticket as for a look that found it)
                key = self._prefix + "t:" + parts[0].decode()
                if due <= self._quiet + 0.001:
                    self._quiet = min(self._quiet, due)
                    self._ticket_for = (self._quiet, key)
                elif self._ticket_next is None or due < self._ticket_next[0]:
                    self._ticket_next = (due, key)
                continue
            if await self._take(self._prefix + "t:" + parts[1].decode()):
                return _WON
        return False

    async def _time_up(self) -> Any:
        """At the end of a wait: look (True); or, at a due time a wake-up
        announced, look as the one listener that takes its ticket (_WON), or
        leave the look to that one (_PASS), which tells what is due next."""
        ticket, self._ticket_for = self._ticket_for, None
        if ticket is None or ticket[0] != self._quiet or monotonic() < self._quiet - 0.001:
            return True  # what this listener's own look found, a re-check, or the timeout
        if await self._take(ticket[1]):
            return _WON
        # Nothing else is known until the winner's announcement (a winner
        # that died costs a re-check at most), unless it came already
        later, self._ticket_next = self._ticket_next, None
        self._quiet = math.inf if later is None else later[0]
        self._ticket_for = later
        return _PASS

    async def _take(self, key: str) -> bool:
        """Take a wake-up's ticket (one listener of all processes does)."""
        # the ticket is no job's state: a plain SET NX, and a GET in case
        # this is a replay of our own SET whose reply was lost
        return await self._ticket(key) or await self._ticket_holder(key) == self._me.encode()

    async def _ticket(self, key: str) -> bool:
        raise NotImplementedError

    async def _ticket_holder(self, key: str) -> Any:
        raise NotImplementedError

    def _try_listen(self) -> bool:
        """Become the listener if nobody is (never waits)."""
        raise NotImplementedError

    async def _listen(self, seconds: float) -> bool:
        """Become the listener, waiting up to ``seconds`` for the one before to leave."""
        raise NotImplementedError

    def _unlisten(self) -> None:
        raise NotImplementedError

    def _forked(self) -> bool:
        """True (once) in a child forked since the subscriptions were made: they are the parent's."""
        if self._pid == os.getpid():
            return False
        with self._idle_lock:
            if self._pid == os.getpid():
                return False
            # forget them unclosed (their sockets are shared with the parent)
            self._idle, self._pid = [], os.getpid()
            self._listener = self._new_listener()
            self._quiet = 0.0
        return True

    def _new_listener(self) -> Any:
        raise NotImplementedError

    async def _take_idle(self) -> Optional["_PubSub"]:
        with self._idle_lock:
            pubsub = self._idle.pop() if self._idle else None
        if pubsub is not None:
            try:
                # wake-ups that came while nobody listened: read as a wait reads
                # them; a pile of them (a long busy spell) is dropped with its
                # connection, and whatever was known is old
                n, wakeups = await pubsub.drain(_STALE)
                if n > _STALE or (wakeups and await self._must_look(wakeups)):
                    self._quiet = 0.0
                if n <= _STALE:
                    return pubsub
                await pubsub.close()
                return None
            except BaseException as exc:  # cancelled too: close what would leak
                await pubsub.close()
                if not isinstance(exc, _IDLE_ERRORS):
                    raise
                # the server went away since: subscribe afresh
        return None

    async def _subscribe(self) -> "_PubSub":
        pubsub = await self._take_idle()
        if pubsub is not None:
            return pubsub
        pubsub = self._new_pubsub()
        self._quiet = 0.0  # what was known came from no subscription of ours
        try:
            await pubsub.subscribe(self.channel)
            return pubsub
        except BaseException:
            await pubsub.close()
            raise

    def _idle_subscriptions(self) -> List["_PubSub"]:
        with self._idle_lock:
            idle, self._idle = self._idle, []
            if self._pid != os.getpid():
                return []  # the parent's: not ours to close
        return idle


def _finish(flow: _Flow[T], value: Any) -> Tuple[bool, Any]:
    """Send ``value`` into ``flow``: (True, next step) or (False, the flow's result)."""
    try:
        return True, flow.send(value)
    except StopIteration as stop:
        return False, stop.value

class _PubSub:
    """A face's subscription to the wake-up channel, its I/O as coroutines."""

    __slots__ = ("raw",)

    def __init__(self, raw: Any) -> None:
        self.raw = raw  # redis-py's PubSub: blocking or asyncio

    async def message(self, timeout: float) -> Any:
        raise NotImplementedError

    async def send_subscribe(self, channel: str) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def wait(self, seconds: float) -> List[bytes]:
        """Wait until wake-ups arrive (their data) or ``seconds`` pass ([])."""
        raise NotImplementedError

    async def collect(self, first: Any) -> List[bytes]:
        """The data of ``first`` and of the wake-ups already waiting."""
        out: List[bytes] = []
        msg = first
        while msg is not None:
            if msg.get("type") == "message":
                out.append(msg["data"])
            msg = await self.message(0.0)
        return out

    async def subscribe(self, channel: str) -> None:
        await self.send_subscribe(channel)
        # wait for the confirmation: from then on no publish is missed
        while True:
            msg = await self.message(MAX_WAIT)
            if msg is not None and msg["type"] == "subscribe":
                return

    async def drain(self, most: float = math.inf) -> Tuple[int, List[bytes]]:
        """Read the messages waiting, up to one more than ``most``: how many, and
        the wake-ups' data."""
        n, out = 0, []
        while n <= most:
            msg = await self.message(0.0)
            if msg is None:
                break
            n += 1
            if msg.get("type") == "message":
                out.append(msg["data"])
        return n, out

