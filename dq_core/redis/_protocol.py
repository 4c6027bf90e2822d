"""The queue's driver: it carries a flow's steps out (``_flows``: the flows,
sans I/O) with the I/O a face supplies as coroutines.

The driver (``_Protocol._carry_out``) is written once for both faces; the
blocking face's coroutines never suspend (their sleeps block), so it runs
the driver to its end with one ``send``.  It issues the scripts' calls (each
with a nonce, so that a retried call acts once), rides out a lost
connection: a step that fails for one is sent again at once (a lost reply),
then with backoff until the step's deadline (a waiting get's timeout;
``retry_for`` seconds for the others), then ``Unavailable`` is thrown into
the flow; and it holds the listener's role, its subscription and its
registration among the idle listeners.
"""

from __future__ import annotations

import logging
import math
import os
import random
import sys
import threading
import warnings
from time import monotonic
from typing import Any, Awaitable, Callable, Generic, List, Optional, Tuple, TypeVar

import redis as _redis

from ._errors import Unavailable
from ._flows import (
    _REPLAY_SAFE,
    _TAKE_IDLE,
    _US,
    _Flow,
    _Flows,
    _Listen,
    _policy_error,
    _Register,
    _Run,
    _Step,
    _Subscribe,
    _Wait,
)
from ._pubsub import _PubSub
from ._scripts import READ_ONLY, SOURCES
from ._wakeups import Wakeups

T = TypeVar("T")
R = TypeVar("R")
C = TypeVar("C")  # the client a face runs on

#: What a lost connection raises: a step that fails with one is retried
#: (redis-py's AuthenticationError, a ConnectionError, is not: it never heals).
_LOST = (_redis.ConnectionError, _redis.TimeoutError, OSError)
#: After this many seconds without a message, a waiting listener pings its
#: subscription; without an answer within _PONG seconds the subscription is
#: dead (half-open: a NAT or load balancer forgot it) and is replaced.
_PING_AFTER = 2.0
_PONG = 1.0
#: How long a listener tries to subscribe before it looks for jobs meanwhile.
_RESUBSCRIBE = 2.0
#: Reconnection backoff (seconds): doubling from the first to the last, less up to a half at random.
_BACKOFF = (0.05, 1.0)
#: Wake-ups read from an idle subscription before it is cheaper to subscribe anew.
_STALE = 64
_log = logging.getLogger("dq_core.redis")


class _Protocol(_Flows[T], Generic[T, C]):
    """The queue's driver, written once: it carries a flow's steps out with
    the face's I/O (``_script``, ``_new_pubsub``); the flows, their
    validation and the scripts' arguments and replies are ``_Flows``'."""

    __slots__ = (
        "client",
        "_stated",
        "_scripts",
        "_idle",
        "_idle_lock",
        "_pid",
        "_checked",
        "_listener",
        "_down",
    )
    _away = Unavailable
    _client_class: Any  # what the face runs on: redis.Redis or redis.asyncio.Redis

    def __init__(self, name: str, client: C, *policy: Any) -> None:
        """``policy``: the rest of ``_Flows``' arguments (lease, max_attempts, ...)."""
        expected = self._client_class
        if not isinstance(client, expected):
            module = expected[0].__module__.split(".client")[0]
            raise TypeError(
                f"client must be a {module}.Redis or {module}.RedisCluster, not {type(client).__name__!r}"
            )
        self._check_name(name)
        kwargs = client.get_connection_kwargs()
        if kwargs.get("decode_responses"):
            raise ValueError("client must be made with decode_responses=False: payloads are bytes")
        super().__init__(name, *policy)
        # the retry policy and rate, stated to the server (at first contact)
        self._stated = self.retry is None and self.rate is None
        self._scripts = {op: client.register_script(src) for op, src in SOURCES.items()}
        self.client = client
        self._idle: List[_PubSub] = []  # subscriptions kept between two waits
        self._pid = os.getpid()  # whose they are: a forked child subscribes anew
        self._listener = self._new_listener()  # held by the one waiter that listens
        self._checked = False  # the server's eviction policy, looked at on first contact
        self._down: Optional[float] = None  # since when the server is unreachable
        # the blocking face's threads share _idle; the asyncio face holds it
        # across no await, so the lock never blocks its loop
        self._idle_lock = threading.Lock()

    # -- keeping a lease alive: the beat written once; the faces supply its pause
    # (a thread's Event wait, an asyncio sleep) and their extend

    async def _beat(
        self,
        pause: Callable[[float], Awaitable[bool]],
        extend: Callable[[float], Awaitable[bool]],
        lost: Callable[[], None],
    ) -> None:
        """Extend a lease after every pause of ``lease``/3 (a pause returning
        False ends it) until the lease is lost: then call ``lost``.

        Never ends silently: ``lost`` is called when an extend finds the lease
        lost, when the server stayed away until the lease (as last extended)
        ended, and on any other error (logged).  ``extend(until)`` retries a
        lost connection until that monotonic time: a beat's worth at a time,
        then again at once, until the lease's end."""
        held = monotonic() + self.lease  # the lease ends by then at the latest
        retrying = False
        try:
            while await pause(0.0 if retrying else self.lease / 3):
                sent = monotonic()
                try:
                    if not await extend(min(held, sent + self.lease / 3)):
                        lost()
                        return
                except _LOST:  # the server is away (Unavailable too)
                    if monotonic() >= held:
                        lost()  # it may be due again elsewhere by now
                        return
                    retrying = True
                    continue
                held, retrying = sent + self.lease, False
        except Exception:
            _log.exception("keep_alive of a job of queue %r failed: its lease may be lost", self.name)
            lost()

    # -- carrying a flow out: written once for both faces, which supply the I/O
    # as coroutines (the blocking face's never suspend; see _run_blocking)

    async def _script(self, keys: List[str], args: List[Any], op: str) -> Any:
        raise NotImplementedError

    async def _config_get_policy(self) -> Any:
        raise NotImplementedError

    async def _info_memory(self) -> Any:
        raise NotImplementedError

    async def _register(self, score: int) -> None:
        """Put this listener among the idle ones (a ZADD)."""
        raise NotImplementedError

    async def _sleep(self, seconds: float) -> None:
        raise NotImplementedError

    def _new_pubsub(self) -> "_PubSub":
        raise NotImplementedError

    async def _check_eviction(self) -> None:
        """Warn once if the server may evict keys: its maxmemory-policy, from
        CONFIG GET, or INFO memory where CONFIG is disabled (managed Redis)."""
        try:
            try:
                reply = await self._config_get_policy()
                if isinstance(reply, dict):
                    values = list(reply.values())
                else:
                    values = list(reply)[1::2] if isinstance(reply, (list, tuple)) else []
            except _redis.ResponseError:  # CONFIG renamed or refused
                info = await self._info_memory()
                nodes = [info] if "maxmemory_policy" in info else list(info.values())
                values = [
                    n["maxmemory_policy"] for n in nodes if isinstance(n, dict) and "maxmemory_policy" in n
                ]
        except _redis.ResponseError:
            self._checked = True  # INFO refused too: nothing to go by
            return
        except _LOST:
            return  # the call itself rides it out; look next time
        self._checked = True
        for value in values:
            policy = value.decode() if isinstance(value, bytes) else str(value)
            if policy != "noeviction":
                warnings.warn(
                    f"Redis maxmemory-policy is {policy!r}: the server may evict the keys of "
                    f"queue {self.name!r} and lose its jobs; set maxmemory-policy noeviction",
                    RuntimeWarning,
                    stacklevel=_caller_level(),
                )
                return

    async def _retrying(self, attempt: Callable[[], Awaitable[R]], until: Optional[float]) -> R:
        """``attempt()``, again at once if the connection was lost (a lost
        reply), then with backoff until ``until`` (None: ``retry_for`` seconds
        after the first failure); then Unavailable."""
        failures = 0
        first = 0.0
        end = math.inf if until is None else until
        while True:
            try:
                out = await attempt()
            except _redis.AuthenticationError:
                raise  # a wrong password does not heal
            except _LOST as exc:
                now = monotonic()
                failures += 1
                if failures == 1:
                    first = now
                    if until is None:
                        end = now + self.retry_for
                    continue
                if now >= end:
                    raise Unavailable(
                        f"the Redis server of queue {self.name!r} stayed unreachable for "
                        f"{now - first:.1f} s ({type(exc).__name__}: {exc})",
                        now - first,
                    ) from exc
                if self._down is None:
                    self._down = first
                    _log.warning(
                        "queue %r lost its Redis connection (%s: %s); retrying",
                        self.name,
                        type(exc).__name__,
                        exc,
                    )
                low, high = _BACKOFF
                pause = min(high, low * 2.0 ** (failures - 2)) * (0.5 + 0.5 * random.random())
                await self._sleep(min(pause, max(0.0, end - now)))
                continue
            if self._down is not None:
                down, self._down = self._down, None
                _log.warning(
                    "queue %r reached its Redis server again after %.1f s", self.name, monotonic() - down
                )
            return out

    async def _call(self, step: _Run) -> Any:
        """Run a script; a lost connection is ridden out (_retrying), every retry
        with the call's nonce, so that a call that ran returns its first reply."""
        if not self._checked:
            await self._check_eviction()
        if not self._stated:  # the retry policy and rate go with the queue at first contact
            self._stated = True
            try:
                await self._call(_Run("policy", [self._retry_wire, self._rate_wire], step.until))
            except _redis.OutOfMemoryError:
                self._stated = False  # a full server: stated at a later call (a nack too)
            except BaseException:
                self._stated = False
                raise
        op = step.op
        nonce = "" if op in READ_ONLY else os.urandom(8).hex()
        keys, args = self._call_line(step.args, nonce)
        sent = monotonic()

        async def attempt() -> Any:
            nonlocal sent, keys, args
            if nonce and monotonic() - sent > _REPLAY_SAFE:
                # the first send's reply is no longer kept: a new call (a
                # claim's jobs then come back when their lease ends)
                keys, args = self._call_line(step.args, os.urandom(8).hex())
                sent = monotonic()
            return await self._script(keys, args, op)

        try:
            return await self._retrying(attempt, step.until)
        except _redis.OutOfMemoryError as exc:
            raise _redis.OutOfMemoryError(
                f"the Redis server is full (used memory over maxmemory, policy noeviction): "
                f"queue {self.name!r} refused {op} (it takes no new job until memory is "
                f"freed; gets, acks, nacks and extends still work): {exc}"
            ) from exc
        except _redis.ResponseError as exc:
            policy = _policy_error(exc)
            if policy is not None:
                raise policy from None
            raise
        finally:
            if op == "clear":  # the stored policy went with it: state it again
                self._stated = self.retry is None and self.rate is None

    async def _carry_out(self, flow: _Flow[R]) -> R:
        held = _Held()
        ok = False
        self._forked()
        try:
            going, step = _finish(flow, None)
            while going:
                try:
                    value = await self._carry(step, held)
                except Unavailable as exc:  # the flow ends the wait, or raises it
                    going, step = _finish(flow, exc, throw=True)
                    continue
                going, step = _finish(flow, value)
            ok = True
            return step  # type: ignore[no-any-return]
        finally:
            pubsub = held.pubsub
            try:
                if pubsub is not None:
                    if ok and self._pid == os.getpid():
                        with self._idle_lock:
                            self._idle.append(pubsub)
                    else:  # a broken, cancelled or half-read connection is not reused
                        await pubsub.close()
            finally:
                if held.listening:  # the next waiter listens now
                    self._unlisten()

    async def _carry(self, step: _Step, held: "_Held") -> Any:
        """Carry one step out; its outcome goes to the flow."""
        if type(step) is _Run:
            return await self._call(step)
        if type(step) is _Wait:
            if held.pubsub is None:
                return False  # not subscribed: subscribe first
            if await self._wait(held.pubsub, step.seconds):
                return True
            old, held.pubsub = held.pubsub, None  # killed or broken: the flow subscribes anew
            await old.close()
            return False
        if type(step) is _Listen:
            held.listening = await self._listen(step.seconds)
            if held.listening:
                held.pubsub = await self._subscribe(step.until)
            return held.listening
        if type(step) is _Subscribe:
            if held.pubsub is not None:  # a broken one, given up
                old, held.pubsub = held.pubsub, None
                await old.close()
            held.pubsub = await self._subscribe(step.until)
            return held.pubsub is not None
        if type(step) is _Register:
            score = int((monotonic() - (self._wake.offset or 0.0)) * _US)

            async def register() -> None:
                try:
                    await self._register(score)
                except _redis.OutOfMemoryError:
                    pass  # a full server: not named, this listener hears what every one hears

            await self._retrying(register, step.until)
            self._wake.registered = True
            return None
        assert step is _TAKE_IDLE
        if self._try_listen():
            held.listening = True
            held.pubsub = await self._take_idle()
            if held.pubsub is None:  # none kept: listen later, if it must wait
                held.listening = False
                self._unlisten()
        return held.pubsub is not None

    async def _wait(self, pubsub: "_PubSub", seconds: float) -> bool:
        """Wait on the subscription until wake-ups come (taken in) or ``seconds``
        pass: True; False if it broke, did not answer a ping in time, or was
        reconnected by redis-py (it is then replaced, and the listener looks)."""
        end = monotonic() + seconds
        try:
            while True:
                if pubsub.reconnected:
                    return False  # by redis-py: what was published meanwhile is lost
                now = monotonic()
                if pubsub.pinged is None and now - pubsub.heard >= _PING_AFTER:
                    await pubsub.ping()  # silent for long: is it still there?
                    pubsub.pinged = now
                if pubsub.pinged is not None:
                    if now - pubsub.pinged >= _PONG:
                        return False  # half-open: what it should hear, it does not
                    until = min(end, pubsub.pinged + _PONG)
                else:
                    until = min(end, pubsub.heard + _PING_AFTER)
                wakeups = await pubsub.wait(max(0.0, until - now))
                if wakeups:
                    self._wake.hear(wakeups)
                    return not pubsub.reconnected
                if monotonic() >= end:
                    return True
        except _LOST:
            return False

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
            self._me = os.urandom(8).hex()  # the parent's id is the parent's
            self._wake = Wakeups(self._me)
        return True

    def _new_listener(self) -> Any:
        raise NotImplementedError

    async def _take_idle(self) -> Optional["_PubSub"]:
        with self._idle_lock:
            pubsub = self._idle.pop() if self._idle else None
        if pubsub is not None:
            try:
                # wake-ups that came while nobody listened: taken in as a wait
                # takes them; a pile of them (a long busy spell) is dropped with
                # its connection, and then the listener looks
                n, wakeups = await pubsub.drain(_STALE)
                if n <= _STALE and not pubsub.reconnected:
                    self._wake.hear(wakeups)
                    return pubsub
                await pubsub.close()
                self._wake.must = True
                return None
            except BaseException as exc:  # cancelled too: close what would leak
                await pubsub.close()
                if not isinstance(exc, _LOST):
                    raise
                # the server went away since: subscribe afresh
        return None

    async def _subscribe(self, until: float) -> Optional["_PubSub"]:
        """The idle subscription, or a new one, trying until ``until`` but
        _RESUBSCRIBE seconds at most (None: not in time).  A new one, or none,
        makes the listener look: what was published meanwhile was missed."""
        pubsub = await self._take_idle()
        if pubsub is not None:
            return pubsub
        self._wake.must = True
        end = min(until, monotonic() + _RESUBSCRIBE)

        async def attempt() -> "_PubSub":
            pubsub = self._new_pubsub()
            try:
                await pubsub.subscribe([self.channel, f"{self.channel}:{self._me}"], end)
                return pubsub
            except BaseException:
                await pubsub.close()
                raise

        try:
            return await self._retrying(attempt, end)
        except Unavailable:
            return None

    def _unregistering(self) -> bool:
        """Whether this listener is among the idle ones (no longer, from now)."""
        if self._pid != os.getpid() or not self._wake.registered:
            return False
        self._wake.registered = False
        return True

    def _idle_subscriptions(self) -> List["_PubSub"]:
        with self._idle_lock:
            idle, self._idle = self._idle, []
            if self._pid != os.getpid():
                return []  # the parent's: not ours to close
        return idle


class _Held:
    """What one carrying out of a flow holds: the listener's role, its subscription."""

    __slots__ = ("listening", "pubsub")

    def __init__(self) -> None:
        self.listening = False
        self.pubsub: Optional[_PubSub] = None


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside this package, for a
    warning issued from the frame that calls this (frames of coroutines
    awaited or sent to count as their caller's)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(__package__ or "?"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _finish(flow: _Flow[T], value: Any, throw: bool = False) -> Tuple[bool, Any]:
    """Send ``value`` into ``flow`` (or throw it, an exception, in): (True, next
    step) or (False, the flow's result)."""
    try:
        return True, (flow.throw(value) if throw else flow.send(value))
    except StopIteration as stop:
        return False, stop.value
