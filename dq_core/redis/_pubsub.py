"""A face's subscription to a queue's wake-up channels: the driver's side of
pub/sub (what it heard, a pending ping, a reconnection by redis-py), its I/O
supplied by each face as coroutines."""

from __future__ import annotations

import math
from time import monotonic
from typing import Any, List, Optional, Tuple

import redis as _redis

#: A SUBSCRIBE is confirmed within this many seconds, or the connection is replaced.
_SUBSCRIBE_WAIT = 10.0

#: What a listener's ping carries, so that its answer is told from redis-py's own health checks.
_PING_DATA = "dq_core"


class _PubSub:
    """A face's subscription to the wake-up channels, its I/O as coroutines.

    ``heard``: when it last heard anything (monotonic); ``pinged``: since
    when a ping of its waits no answer (None: none pending);
    ``reconnected``: redis-py reconnected it by itself (redis-py 6+ retries:
    it subscribes again, but what was published meanwhile is lost)."""

    __slots__ = ("raw", "heard", "pinged", "reconnected", "__weakref__")

    def __init__(self, raw: Any) -> None:
        self.raw = raw  # redis-py's PubSub: blocking or asyncio
        self.heard = monotonic()
        self.pinged: Optional[float] = None
        self.reconnected = False

    def _on_connect(self, connection: Any) -> None:
        self.reconnected = True

    def _watch_reconnects(self) -> None:
        """From now on, note when redis-py reconnects the subscription's connection."""
        connection = getattr(self.raw, "connection", None)
        if connection is not None:  # a weak reference: dropped with this object
            connection.register_connect_callback(self._on_connect)

    async def message(self, timeout: float) -> Any:
        raise NotImplementedError

    async def send_subscribe(self, channels: List[str]) -> None:
        raise NotImplementedError

    async def ping(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def wait(self, seconds: float) -> List[bytes]:
        """Wait until messages arrive (the wake-ups' data, [] if only others) or ``seconds`` pass ([])."""
        raise NotImplementedError

    def _note(self, msg: Any) -> Optional[bytes]:
        """Note a message heard; a wake-up's data, else None."""
        self.heard = monotonic()
        kind = msg.get("type")
        if kind == "message":
            return msg["data"]  # type: ignore[no-any-return]
        if kind == "pong":
            self.pinged = None
        return None

    async def collect(self, first: Any) -> List[bytes]:
        """The data of ``first`` and of the wake-ups already waiting."""
        out: List[bytes] = []
        msg = first
        while msg is not None:
            data = self._note(msg)
            if data is not None:
                out.append(data)
            msg = await self.message(0.0)
        return out

    async def subscribe(self, channels: List[str], until: float = math.inf) -> None:
        await self.send_subscribe(channels)
        # wait for the confirmations: from then on no publish is missed
        left, end = len(channels), min(until, monotonic() + _SUBSCRIBE_WAIT)
        while left:
            if monotonic() > end:
                raise _redis.TimeoutError("no confirmation of SUBSCRIBE")
            msg = await self.message(max(0.0, end - monotonic()))
            if msg is not None:
                self._note(msg)
                left -= msg["type"] == "subscribe"
        self._watch_reconnects()

    async def drain(self, most: float = math.inf) -> Tuple[int, List[bytes]]:
        """Read the messages waiting, up to one more than ``most``: how many, and
        the wake-ups' data."""
        n, out = 0, []
        while n <= most:
            msg = await self.message(0.0)
            if msg is None:
                break
            n += 1
            data = self._note(msg)
            if data is not None:
                out.append(data)
        return n, out
