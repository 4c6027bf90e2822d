"""AsyncRedisDelayQueue: the protocol on ``redis.asyncio``."""

from __future__ import annotations

import asyncio
import collections
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Deque, Iterable, List, Optional, TypeVar, Union, overload

import redis.asyncio as _aredis

from ._cron import Cron
from ._flows import RETRY_FOR, IfExists
from ._job import Job
from ._protocol import _Protocol
from ._pubsub import _PING_DATA, _PubSub
from ._retry import RetryPolicy
from ._serializer import Payload, Serializer

T = TypeVar("T")


class _AsyncPubSub(_PubSub):
    """The asyncio face's subscription."""

    __slots__ = ()

    async def message(self, timeout: float) -> Any:
        return await self.raw.get_message(timeout=timeout)

    async def send_subscribe(self, channels: List[str]) -> None:
        await self.raw.subscribe(*channels)

    async def ping(self) -> None:
        await self.raw.ping(_PING_DATA)

    async def close(self) -> None:
        await self.raw.aclose()

    async def wait(self, seconds: float) -> List[bytes]:
        msg = await self.raw.get_message(timeout=seconds)
        return [] if msg is None else await self.collect(msg)


class _AsyncClusterPubSub(_AsyncPubSub):
    """A subscription on ``redis.asyncio.RedisCluster``, which has no pub/sub
    of its own in redis-py 5: a client of the node that serves the channel's
    slot (a publish reaches every node), opened when it subscribes."""

    __slots__ = ("cluster", "node")

    def __init__(self, cluster: "_aredis.RedisCluster") -> None:
        super().__init__(None)
        self.cluster = cluster
        self.node: Optional[_aredis.Redis] = None

    async def send_subscribe(self, channels: List[str]) -> None:
        await self.cluster.initialize()
        where = self.cluster.get_node_from_key(channels[0])  # all in one slot
        if where is None:
            raise _aredis.ConnectionError(f"no cluster node serves {channels[0]!r}")
        pool = _aredis.ConnectionPool(connection_class=where.connection_class, **where.connection_kwargs)
        self.node = _aredis.Redis.from_pool(pool)  # closing it closes the pool
        self.raw = self.node.pubsub()
        await self.raw.subscribe(*channels)

    async def close(self) -> None:
        try:
            if self.raw is not None:
                await self.raw.aclose()
        finally:
            if self.node is not None:
                await self.node.aclose()


class _Baton:
    """The asyncio face's listener role: held by one task, handed to the
    longest waiting one when it leaves (as asyncio.Lock, but with a
    non-blocking take and a timed one)."""

    __slots__ = ("held", "waiters")

    def __init__(self) -> None:
        self.held = False
        self.waiters: Deque["asyncio.Future[bool]"] = collections.deque()

    def try_take(self) -> bool:
        if self.held:
            return False
        self.held = True
        return True

    async def take(self, seconds: float) -> bool:
        if not self.held:
            self.held = True
            return True
        loop = asyncio.get_running_loop()
        fut: "asyncio.Future[bool]" = loop.create_future()
        self.waiters.append(fut)

        def too_late() -> None:
            if not fut.done():
                fut.set_result(False)

        timer = loop.call_later(seconds, too_late)
        try:
            return await fut  # True: handed over; False: not in time
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.result():
                self.release()  # handed over as this task was cancelled: pass it on
            raise
        finally:
            timer.cancel()

    def release(self) -> None:
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(True)
                return
        self.held = False


class AsyncRedisDelayQueue(_Protocol[T, "_aredis.Redis"]):
    """:class:`RedisDelayQueue` on ``redis.asyncio``: the same methods, as coroutines.

    Same keys, scripts and protocol: both kinds of queue may share a queue
    name.  Use it from one event loop.  Cancelling a waiting ``get`` loses
    nothing: cancelled while it sleeps, it has claimed nothing; cancelled
    while its claim script runs, the jobs that script claimed come back
    when their lease ends, as from a consumer that died.  ``client`` is a
    ``redis.asyncio.Redis`` (also one from
    ``redis.asyncio.sentinel.Sentinel.master_for``) or a
    ``redis.asyncio.RedisCluster``.  Outages are ridden out as
    :class:`RedisDelayQueue` rides them out.
    """

    __slots__ = ()
    _client_class = (_aredis.Redis, _aredis.RedisCluster)

    @overload
    def __init__(
        self: "AsyncRedisDelayQueue[Payload]",
        name: str,
        client: "Union[_aredis.Redis, _aredis.RedisCluster]",
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
        self: "AsyncRedisDelayQueue[T]",
        name: str,
        client: "Union[_aredis.Redis, _aredis.RedisCluster]",
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
        client: "Union[_aredis.Redis, _aredis.RedisCluster]",
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
        return await self._scripts[op](keys=keys, args=args)

    async def _config_get_policy(self) -> Any:
        return await self.client.config_get("maxmemory-policy")

    async def _info_memory(self) -> Any:
        return await self.client.info("memory")

    async def _register(self, score: int) -> None:
        await self.client.zadd(self.keys[7], {self._me: score})

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def _new_listener(self) -> "_Baton":
        return _Baton()

    def _try_listen(self) -> bool:
        return self._listener.try_take()  # type: ignore[no-any-return]

    async def _listen(self, seconds: float) -> bool:
        return await self._listener.take(seconds)  # type: ignore[no-any-return]

    def _unlisten(self) -> None:
        self._listener.release()

    def _new_pubsub(self) -> "_PubSub":
        if isinstance(self.client, _aredis.RedisCluster):
            return _AsyncClusterPubSub(self.client)
        return _AsyncPubSub(self.client.pubsub())

    _drive = _Protocol._carry_out

    async def put(
        self,
        payload: T,
        delay: float = 0.0,
        *,
        job_id: Optional[str] = None,
        if_exists: IfExists = "replace",
        priority: float = 0,
    ) -> str:
        """Coroutine of :meth:`RedisDelayQueue.put`."""
        return await self._drive(self._put_one(payload, delay, "delay", False, job_id, if_exists, priority))

    async def put_at(
        self,
        payload: T,
        when: float,
        *,
        job_id: Optional[str] = None,
        if_exists: IfExists = "replace",
        priority: float = 0,
    ) -> str:
        """Coroutine of :meth:`RedisDelayQueue.put_at`."""
        return await self._drive(self._put_one(payload, when, "when", True, job_id, if_exists, priority))

    async def put_many(
        self,
        payloads: Iterable[T],
        delays: Optional[Iterable[float]] = None,
        *,
        job_ids: Optional[Iterable[str]] = None,
        if_exists: IfExists = "replace",
        priority: float = 0,
    ) -> List[str]:
        """Coroutine of :meth:`RedisDelayQueue.put_many`."""
        return await self._drive(self._put_many(payloads, delays, job_ids, if_exists, priority))

    async def get(
        self, timeout: Optional[float] = None, *, ack: Union[Job[T], str, None] = None
    ) -> Optional[Job[T]]:
        """Coroutine of :meth:`RedisDelayQueue.get` (``ack`` as there)."""
        return await self._drive(self._get_flow(timeout, ack))

    async def get_many(self, max_items: int, timeout: Optional[float] = 0) -> List[Job[T]]:
        """Coroutine of :meth:`RedisDelayQueue.get_many`."""
        return await self._drive(self._claim_flow(max_items, timeout))

    async def ack(self, job_or_id: Union[Job[T], str]) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.ack`."""
        return await self._drive(self._ack_one(job_or_id))

    async def ack_many(self, jobs: Iterable[Union[Job[T], str]]) -> List[bool]:
        """Coroutine of :meth:`RedisDelayQueue.ack_many`."""
        return await self._drive(self._ack_flow(jobs))

    async def nack(self, job_or_id: Union[Job[T], str], delay: Optional[float] = None) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.nack`."""
        return await self._drive(self._nack_flow(job_or_id, delay))

    async def extend(self, job_or_id: Union[Job[T], str], lease: Optional[float] = None) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.extend`."""
        return await self._drive(self._extend_flow(job_or_id, lease))

    @asynccontextmanager
    async def keep_alive(self, job: Job[T]) -> AsyncIterator[asyncio.Event]:
        """Async context manager of :meth:`RedisDelayQueue.keep_alive` (a task, not a thread)."""
        self._check_job(job)
        lost = asyncio.Event()

        async def pause(seconds: float) -> bool:
            await asyncio.sleep(seconds)
            return True

        task = asyncio.ensure_future(
            self._beat(pause, lambda until: self._drive(self._extend_flow(job, None, until)), lost.set)
        )
        try:
            yield lost
        finally:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def put_recurring(
        self,
        payload: T,
        *,
        every: Optional[float] = None,
        cron: "Union[str, Cron, None]" = None,
        job_id: Optional[str] = None,
        priority: float = 0,
    ) -> str:
        """Coroutine of :meth:`RedisDelayQueue.put_recurring`."""
        return await self._drive(self._recur_flow(payload, every, cron, job_id, priority))

    async def cancel_recurring(self, job_id: str) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.cancel_recurring`."""
        return await self._drive(self._by_id_flow("unrecur", job_id))

    async def cancel(self, job_id: str) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.cancel`."""
        return await self._drive(self._by_id_flow("cancel", job_id))

    async def reschedule(self, job_id: str, delay: float) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.reschedule`."""
        us = self._delay(delay)
        return await self._drive(self._by_id_flow("reschedule", job_id, us))

    async def requeue_dead(self, job_id: str, delay: float = 0.0) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.requeue_dead`."""
        us = self._delay(delay)
        return await self._drive(self._by_id_flow("requeue_dead", job_id, us))

    async def qsize(self) -> int:
        """Coroutine of :meth:`RedisDelayQueue.qsize`."""
        return await self._drive(self._qsize_flow())

    async def stats(self) -> dict[str, int]:
        """Coroutine of :meth:`RedisDelayQueue.stats`."""
        return await self._drive(self._stats_flow())

    async def dead(self, limit: Optional[int] = None, *, start: int = 0) -> List[Job[T]]:
        """Coroutine of :meth:`RedisDelayQueue.dead`."""
        return await self._drive(self._dead_flow(limit, start))

    async def peek(self, limit: int = 10) -> List[Job[T]]:
        """Coroutine of :meth:`RedisDelayQueue.peek`."""
        jobs, _ = await self._drive(self._peek_flow(limit))
        return jobs

    async def purge_dead(self, older_than: float = 0.0) -> int:
        """Coroutine of :meth:`RedisDelayQueue.purge_dead`."""
        return await self._drive(self._purge_flow(older_than))

    async def clear(self) -> None:
        """Coroutine of :meth:`RedisDelayQueue.clear`."""
        await self._drive(self._run("clear"))

    async def aclose(self) -> None:
        """Close the subscriptions kept for waiting; the queue stays usable.

        As :meth:`RedisDelayQueue.close`, it takes the queue object out of
        the idle waiters."""
        for pubsub in self._idle_subscriptions():
            await pubsub.close()
        if self._unregistering():
            try:
                await self.client.zrem(self.keys[7], self._me)
            except _aredis.RedisError:
                pass  # the server is away: it drops this waiter when it names it
