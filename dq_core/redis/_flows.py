"""The queue's flows, sans I/O: validation, each script call's keys and
arguments, the reading of each script's reply, and the flows of steps each
method takes.

A flow is a generator: it yields a step (run a script, become the listener,
subscribe, register as idle, wait for a wake-up) and receives the step's
outcome; its return value is the method's result.  Nothing here touches a
connection or imports redis: the driver (``_protocol``) carries the steps
out, and throws ``_away`` (its ``Unavailable``) into a flow when the server
stayed away until the step's deadline.  A flow is read, and tested, by
sending it plain data (``tests/test_redis_flows.py``).
"""

from __future__ import annotations

import logging
import math
import os
import random
from time import monotonic
from typing import Any, Generator, Generic, Iterable, List, Literal, Optional, Tuple, TypeVar, Union, cast

from .._convert import to_count, to_real
from .._pickling import Uncopyable
from .._validate import check_timeout
from .._waiting import MAX_WAIT
from ._cron import Cron
from ._job import Job
from ._retry import RetryPolicy
from ._scripts import CHUNK, KEY_NAMES, REPLAY_MS
from ._serializer import Serializer, check_serializer, decode, encode
from ._wakeups import Wakeups

T = TypeVar("T")

#: What ``put(..., if_exists=...)`` takes: replace a job held under the id, or keep it.
IfExists = Literal["replace", "keep"]

_US = 1_000_000
#: Deadlines are integer microseconds in a double, exact below 2**53: a
#: delay or a Unix time past 2**52 us (142 years) is refused, so that now +
#: delay stays exact.
_MAX_US = 2**52
#: Delays below this many seconds take the fast path of a put (no overflow check).
_FAST_SECONDS = 1e9
#: A call retried longer than this after its first send gets a new nonce: the
#: server keeps a reply for a replay REPLAY_MS, counted from when the call ran.
_REPLAY_SAFE = REPLAY_MS / 1000 - 10.0
#: Jobs per put or claim script: each holds the server a few milliseconds at most.
_BATCH = 500
#: How long a call that does not wait retries a lost connection by default (seconds).
RETRY_FOR = 10.0
_log = logging.getLogger("dq_core.redis")


class _Run:
    """Step: run the named script with these arguments; the flow gets its reply.

    Retried until ``until`` (monotonic; None: ``retry_for`` seconds after its
    first failure), then ``Unavailable`` is thrown into the flow."""

    __slots__ = ("op", "args", "until")

    def __init__(self, op: str, args: List[Any], until: Optional[float] = None) -> None:
        self.op = op
        self.args = args
        self.until = until


class _Wait:
    """Step: wait on the subscription until a wake-up or ``seconds`` pass (-> False if it broke)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class _Listen:
    """Step: become the queue object's listener, waiting up to ``seconds`` for
    the one before to leave, and hold its subscription (-> False: not in
    time).  Subscribing is tried as _Subscribe does."""

    __slots__ = ("seconds", "until")

    def __init__(self, seconds: float, until: float) -> None:
        self.seconds = seconds
        self.until = until


class _Subscribe:
    """Step: the listener's subscription broke: subscribe anew, trying until
    ``until`` but for a few seconds at most (_RESUBSCRIBE).  Not subscribed
    by then, the listener looks (claims may work where subscriptions fail),
    and its next wait tries again."""

    __slots__ = ("until",)

    def __init__(self, until: float) -> None:
        self.until = until


class _Register:
    """Step: put the listener among the idle ones, trying until ``until``."""

    __slots__ = ("until",)

    def __init__(self, until: float) -> None:
        self.until = until


_TAKE_IDLE = "take idle"  # step: become the listener if free and subscribed already (-> bool)
_Step = Union[_Run, _Wait, _Listen, _Subscribe, _Register, str]
_Flow = Generator[_Step, Any, T]


def _seconds(us: Any) -> float:
    return float(us) / _US


def _micros(seconds: float, name: str) -> int:
    if not seconds > 0.0:
        return 0
    if not seconds * _US <= _MAX_US:  # inf too
        raise OverflowError(f"{name} is too far in the future, got {seconds!r} seconds")
    return math.ceil(seconds * _US)


def _priority(priority: object) -> str:
    """A job's priority as the scripts take it: '0' for none (0 or -0.0)."""
    p = to_real(priority, "priority")
    if not -math.inf < p < math.inf:
        raise ValueError(f"priority must be a finite number, got {priority!r}")
    return "0" if p == 0.0 else repr(p)


def _policy_error(exc: BaseException) -> Optional[ValueError]:
    """The ValueError for a script's refusal of a conflicting policy, else None."""
    words = str(exc).split()
    if len(words) != 4 or words[0] != "DQPOLICY":
        return None
    _, name, stored, given = words
    if name == "retry":

        def show(wire: str) -> str:
            return ", ".join(
                f"{k}={v}" for k, v in zip(("base", "factor", "max_delay", "jitter"), wire.split(","))
            )

        return ValueError(
            f"retry=RetryPolicy({show(given)}, ...) conflicts with the queue's "
            f"stored backoff ({show(stored)}): a queue's policy is set by the "
            f"first client that states it (pass retry=None to use the stored "
            f"one, or clear() the queue)"
        )
    if name == "rate":

        def show(wire: str) -> str:
            return "rate={}, burst={}".format(*wire.split(","))

        return ValueError(
            f"{show(given)} conflicts with the queue's stored {show(stored)}: a "
            f"queue's policy is set by the first client that states it (pass "
            f"rate=None to use the stored one, or clear() the queue)"
        )
    if name == "dead_ttl":
        stored, given = repr(int(stored) / _US), repr(int(given) / _US)
    return ValueError(
        f"{name}={given} conflicts with the queue's stored {name}={stored}: "
        f"a queue's policy is set by the first client that states it "
        f"(pass {name}=None to use the stored one, or clear() the queue)"
    )


class _Away(Exception):
    """The server stayed away (the driver throws its own, ``Unavailable``)."""


class _Flows(Uncopyable, Generic[T]):
    """The queue's flows, written once for both faces: its validation, its
    scripts' arguments and replies, and the generators of steps; the
    driver (``_protocol._Protocol``, a subclass) carries them out."""

    __slots__ = (
        "name",
        "lease",
        "max_attempts",
        "dead_ttl",
        "dead_max",
        "serializer",
        "retry_for",
        "retry",
        "_retry_wire",
        "rate",
        "burst",
        "_rate_wire",
        "channel",
        "keys",
        "_prefix",
        "_head",
        "_me",
        "_wake",
    )
    #: What the driver throws into a flow when the server stayed away until a
    #: step's deadline (the driver's: ``Unavailable``).
    _away: "type[BaseException]" = _Away

    def __init__(
        self,
        name: str,
        lease: float,
        max_attempts: Optional[int],
        serializer: Optional[Serializer[T]],
        dead_ttl: Optional[float] = None,
        dead_max: Optional[int] = None,
        retry_for: float = RETRY_FOR,
        retry: Optional[RetryPolicy] = None,
        rate: Optional[float] = None,
        burst: float = 1,
    ) -> None:
        self._check_name(name)
        lease = to_real(lease, "lease")
        if not 0.0 < lease < math.inf:
            raise ValueError(f"lease must be a positive finite number of seconds, got {lease!r}")
        if max_attempts is not None:
            max_attempts = to_count(max_attempts, "max_attempts")
            if max_attempts < 1:
                raise ValueError("max_attempts must be at least 1 (or None: no limit)")
        if retry is not None:
            if not isinstance(retry, RetryPolicy):
                raise TypeError(f"retry must be a RetryPolicy or None, not {type(retry).__name__!r}")
            if retry.max_attempts is not None:
                if max_attempts is not None and max_attempts != retry.max_attempts:
                    raise ValueError(
                        f"max_attempts={max_attempts!r} conflicts with "
                        f"retry.max_attempts={retry.max_attempts!r}"
                    )
                max_attempts = retry.max_attempts
        burst = to_real(burst, "burst")
        if not 1.0 <= burst < math.inf:
            raise ValueError(f"burst must be a finite number of at least 1, got {burst!r}")
        if rate is not None:
            rate = to_real(rate, "rate")
            if not 0.0 < rate < math.inf:
                raise ValueError(
                    f"rate must be a positive finite number of jobs a second "
                    f"(or None: no limit), got {rate!r}"
                )
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
        retry_for = to_real(retry_for, "retry_for")
        if not 0.0 <= retry_for <= _REPLAY_SAFE:
            raise ValueError(
                f"retry_for must be from 0 to {_REPLAY_SAFE:g} seconds (a call "
                f"retried later could act twice), got {retry_for!r}"
            )
        check_serializer(serializer)
        self.name, self.lease, self.serializer = name, lease, serializer
        self.retry_for = retry_for
        self.retry = retry  # the backoff as this client states it (None: the stored one)
        self._retry_wire = "" if retry is None else retry._wire()
        self.rate, self.burst = rate, burst  # the rate as this client states it (None: stored)
        self._rate_wire = "" if rate is None else f"{rate!r},{burst!r}"
        # the policy as this client states it (None: the queue's stored one)
        self.max_attempts, self.dead_ttl, self.dead_max = max_attempts, dead_ttl, dead_max
        prefix = f"dq:{{{name}}}:"
        self._prefix = prefix
        self.keys = [prefix + k for k in KEY_NAMES]
        self.channel = prefix + "wake"
        stated = (
            "" if max_attempts is None else str(max_attempts),
            ttl_us,
            "" if dead_max is None else str(dead_max),
        )
        self._head = ",".join(stated) if any(stated) else ""  # the policy the calls state
        self._me = os.urandom(8).hex()  # the listener's id (its own channel: channel:id)
        self._wake = Wakeups(self._me)  # what the listener knows: when to look

    def __repr__(self) -> str:
        extra = "".join(
            f", {k}={getattr(self, k)!r}" for k in ("dead_ttl", "dead_max") if getattr(self, k) is not None
        )
        if self.retry_for != RETRY_FOR:
            extra += f", retry_for={self.retry_for!r}"
        if self.retry is not None:
            extra += f", retry={self.retry!r}"
        if self.rate is not None:
            extra += f", rate={self.rate!r}, burst={self.burst!r}"
        return (
            f"{type(self).__name__}({self.name!r}, lease={self.lease!r}, "
            f"max_attempts={self.max_attempts!r}{extra})"
        )

    @staticmethod
    def _check_name(name: object) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, not {name!r}")
        if "{" in name or "}" in name:
            raise ValueError(
                f"name must not contain '{{' or '}}' (it becomes the keys' "
                f"Redis Cluster hash tag), got {name!r}"
            )

    def _call_line(self, args: List[Any], nonce: str) -> Tuple[List[str], List[Any]]:
        """The keys and arguments of a script call: one key, the queue's
        prefix (the scripts name each key from it: one hash tag, one slot);
        the policy the caller states, the nonce, then ``args``.  Each key or
        argument of an EVALSHA costs the server about as much as a small
        command: none is sent that the script can make itself."""
        return [self._prefix], [self._head, nonce, *args]

    # -- conversions

    @staticmethod
    def _id(job_id: object, name: str = "job_id") -> str:
        if not isinstance(job_id, str):
            raise TypeError(
                f"job_id must be a str, not {type(job_id).__name__!r}"
                if name == "job_id"
                else f"{name} must be a str, not {type(job_id).__name__!r}"
            )
        return job_id

    def _lease_of(self, job: object) -> Tuple[str, str]:
        if isinstance(job, Job):
            return job.id, job._token
        return self._id(job, "job_or_id"), ""

    @staticmethod
    def _delay(delay: object, name: str = "delay") -> int:
        return _micros(to_real(delay, name), name)

    def _claimed(self, flat: List[Any]) -> Tuple[List[Job[T]], List[Any]]:
        """The jobs of a claim's reply (after its three heads), and (id, lease,
        reason) for those that cannot run."""
        datas = flat[4::5]
        if self.serializer is None and None not in datas:
            try:  # in bulk; a payload that fails sends every job the long way
                payloads = [d[1:].decode() if d[0] == 115 else d[1:] for d in datas]  # b"s"
                deadlines = [float(d) / _US for d in flat[5::5]]
                return list(
                    map(
                        Job,
                        map(bytes.decode, flat[3::5]),
                        payloads,
                        deadlines,
                        flat[6::5],
                        map(bytes.decode, flat[7::5]),
                    )
                ), []
            except Exception:
                pass
        jobs: List[Job[T]] = []
        bad: List[Any] = []
        for i in range(3, len(flat), 5):
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

    def _dead_jobs(self, flat: List[Any], reasons: bool = True) -> List[Job[T]]:
        """The jobs of a dead (or peek: ``reasons=False``) reply, 5 items each."""
        jobs: List[Job[T]] = []
        for i in range(0, len(flat), 5):
            data = flat[i + 1]
            reason = flat[i + 4].decode(errors="replace") if reasons else None
            payload: Any = None
            if data is not None:
                try:
                    payload = decode(self.serializer, data)
                except Exception:  # dead() never raises on a bad payload: the raw bytes
                    payload = data[1:]
            jobs.append(
                Job(flat[i].decode(), payload, _seconds(flat[i + 2]), int(flat[i + 3]), reason=reason)
            )
        return jobs

    # -- flows: each yields steps and returns the method's result

    def _run(self, op: str, *args: Any) -> _Flow[Any]:
        return (yield _Run(op, list(args)))

    def _put_flow(
        self,
        payloads: Iterable[object],
        times: Iterable[object],
        name: str,
        absolute: bool,
        job_ids: Optional[Iterable[object]],
        if_exists: object,
        priority: object = 0,
    ) -> _Flow[List[str]]:
        if if_exists not in ("replace", "keep"):
            raise ValueError(f"if_exists must be 'replace' or 'keep', got {if_exists!r}")
        head: List[Any] = ["1" if absolute else "0", if_exists, _priority(priority)]
        items = list(payloads)
        n = len(items)
        ts = list(times)
        if len(ts) != n:
            plural = name if name.endswith("s") else name + "s"
            raise ValueError(f"payloads and {plural} differ in length: {n} != {len(ts)}")
        if job_ids is None:  # 128 random bits each, as uuid4 has, drawn at once
            hexes = os.urandom(16 * n).hex()
            ids = [hexes[i : i + 32] for i in range(0, 32 * n, 32)]
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
            datas = [
                encode(self.serializer, p, f"payload[{i}]" if many else "payload")
                for i, p in enumerate(items)
            ]
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
            yield from self._run("put", *head, *args[i : i + width])
        return ids

    def _put_one(
        self,
        payload: object,
        t: object,
        name: str,
        absolute: bool,
        job_id: Optional[object],
        if_exists: object,
        priority: object = 0,
    ) -> _Flow[str]:
        ids = None if job_id is None else [self._id(job_id)]
        out = yield from self._put_flow([payload], [t], name, absolute, ids, if_exists, priority)
        return out[0]

    def _put_many(
        self,
        payloads: Iterable[object],
        delays: Optional[Iterable[object]],
        job_ids: Optional[Iterable[object]],
        if_exists: object,
        priority: object = 0,
    ) -> _Flow[List[str]]:
        items = list(payloads)
        times = [0] * len(items) if delays is None else delays
        return self._put_flow(items, times, "delays", False, job_ids, if_exists, priority)

    def _claim_flow(
        self, max_items: object, timeout: object, ack: Optional[object] = None
    ) -> _Flow[List[Job[T]]]:
        """``ack``: a job (or id) acked by the first claim, before it claims."""
        acks = [] if ack is None else list(self._lease_of(ack))
        try:
            n = to_count(max_items, "max_items")
        except ValueError:  # negative: refused below, with the message of 0
            n = 0
        if n < 1:
            raise ValueError(f"max_items must be at least 1, got {max_items!r}")
        end = math.inf if timeout is None else monotonic() + check_timeout(timeout)
        lease = _micros(self.lease, "lease")
        jobs: List[Job[T]] = []
        if not end > monotonic():  # no wait: claims, retried for retry_for at most
            yield from self._claim(jobs, n, lease, False, None, acks)
            return jobs
        # One waiter per queue object listens (holds the subscription, looks
        # when told to); the others wait for it to leave.  A subscription left
        # by an earlier wait costs nothing to take, and what was heard on it
        # meanwhile says whether to look.  A lost connection is ridden out
        # until the timeout: then Unavailable ends the wait with what it has.
        wake = self._wake
        try:
            listening = yield _TAKE_IDLE
            while True:
                now = monotonic()
                looking = wake.should_look(now, listening)
                if acks and not looking:
                    # an ack goes at once; with nothing heard to look for,
                    # alone (a claim too would cost more and find nothing)
                    held = yield _Run("ack", acks, end)
                    self._acked(acks, held)
                    acks.clear()
                if looking:
                    if (yield from self._claim(jobs, n, lease, listening, end, acks)):
                        return jobs
                    continue
                if not end > now:
                    return jobs
                if not listening:
                    # subscribed before looking again: no put can slip between
                    listening = yield _Listen(min(end - now, MAX_WAIT), end)
                elif not wake.registered:  # named, or busy before: idle again now
                    yield _Register(end)
                # until a look is due (clocks apart: never a negative wait)
                elif not (yield _Wait(max(0.0, min(end, wake.next_time()) - now))):
                    yield _Subscribe(end)  # it broke: subscribe anew; look
        except self._away:  # the server stayed away until the timeout
            return jobs

    def _claim(
        self,
        jobs: List[Job[T]],
        n: int,
        lease: int,
        listening: bool,
        until: Optional[float],
        acks: List[str],
    ) -> _Flow[bool]:
        """Claim due jobs into ``jobs``, in scripts of _BATCH jobs at most, until
        ``n`` or none left due; whether to return them (False: none, look again
        or wait).  ``listening``: this is the listener's look (it waits if none);
        ``until``: the retries' deadline (None: ``retry_for``); ``acks``: (id,
        lease) pairs the first script acks before it claims (emptied once sent)."""
        while True:
            want = min(n - len(jobs), _BATCH)
            me, flags = (self._me, self._wake.flags(monotonic())) if listening else ("", "")
            reply = yield _Run("claim", [want, lease, me, flags, *acks], until)
            came = monotonic()
            if acks:  # the reply ends with the acks' outcomes
                self._acked(acks, reply.pop())
                acks.clear()
            got = (len(reply) - 3) // 5
            self._wake.looked(int(reply[0]), int(reply[1]), reply[2], got, came, listening)
            if not got:
                return bool(jobs)
            more, bad = self._claimed(reply)
            jobs += more
            if bad:  # undecodable: dead with the reason, the others delivered
                yield from self._run("bury", *bad)
            if len(jobs) < n and got == want:
                continue  # a full batch: there may be more due
            if jobs:
                return True
            # every one was bad: look again

    def _get_flow(self, timeout: object, ack: Optional[object] = None) -> _Flow[Optional[Job[T]]]:
        jobs = yield from self._claim_flow(1, timeout, ack)
        return jobs[0] if jobs else None

    def _acked(self, acks: List[str], held: bytes) -> None:
        """Log each job of ``get(ack=...)`` whose lease was lost (b"0")."""
        for i, c in enumerate(held):
            if c != 49:  # b"1"
                _log.warning(
                    "queue %r: get(ack=...) found the lease of job %r lost: it was not "
                    "acked, and may run again elsewhere",
                    self.name,
                    acks[2 * i],
                )

    def _ack_flow(self, jobs: Iterable[object]) -> _Flow[List[bool]]:
        args: List[str] = []
        for job in jobs:
            args += self._lease_of(job)
        out: List[bool] = []
        for i in range(0, len(args), 2 * _BATCH):
            reply = yield from self._run("ack", *args[i : i + 2 * _BATCH])
            out += [c == 49 for c in reply]  # one b"1" (held) or b"0" each
        return out

    def _ack_one(self, job: object) -> _Flow[bool]:
        out = yield from self._ack_flow([job])
        return out[0]

    def _nack_flow(self, job: object, delay: object) -> _Flow[bool]:
        job_id, token = self._lease_of(job)
        if delay is None:  # the queue's retry policy: the script draws the backoff
            args: List[Any] = [job_id, token, "", repr(random.random()), self._retry_wire]
        else:
            args = [job_id, token, self._delay(delay), "", ""]
        return bool((yield from self._run("nack", *args)))

    def _extend_flow(self, job: object, lease: object, until: Optional[float] = None) -> _Flow[bool]:
        job_id, token = self._lease_of(job)
        seconds = self.lease if lease is None else to_real(lease, "lease")
        if not seconds > 0.0:
            raise ValueError(f"lease must be a positive number of seconds, got {seconds!r}")
        us = _micros(seconds, "lease")
        return bool((yield _Run("extend", [job_id, token, us], until)))

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

    def _recur_flow(
        self, payload: object, every: object, cron: object, job_id: object, priority: object
    ) -> _Flow[str]:
        if (every is None) == (cron is None):
            raise TypeError("put_recurring takes every= or cron= (one of them)")
        if every is not None:
            seconds = to_real(every, "every")
            if not 0.001 <= seconds < math.inf:
                raise ValueError(f"every must be a finite number of seconds of at least 0.001, got {every!r}")
            rule = f"e{_micros(seconds, 'every')}"
        else:
            rule = "c" + (cron if isinstance(cron, Cron) else Cron(cast(str, cron)))._wire()
        job_id = os.urandom(16).hex() if job_id is None else self._id(job_id)
        p = _priority(priority)
        data = encode(self.serializer, payload, "payload")
        yield from self._run("recur", job_id, rule, p, data)
        return job_id

    def _peek_flow(self, limit: object) -> _Flow[Tuple[List[Job[T]], List[float]]]:
        """The first ``limit`` scheduled jobs, unclaimed, and their priorities."""
        n = to_count(limit, "limit")
        if not 0 <= n <= CHUNK:
            raise ValueError(f"limit must be from 0 to {CHUNK}, got {limit!r}")
        reply = yield from self._run("peek", n)
        return self._dead_jobs(reply, reasons=False), [float(p) for p in reply[4::5]]

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

    @staticmethod
    def _check_job(job: object) -> None:
        if not isinstance(job, Job):
            raise TypeError(f"job must be a Job, not {type(job).__name__!r}")
