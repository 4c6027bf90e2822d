"""Unavailable: the one error a queue raises when the Redis server stays away."""

from __future__ import annotations

import redis


class Unavailable(redis.ConnectionError):
    """The Redis server stayed unreachable for as long as the call may wait.

    A call that does not wait (``put``, ``ack``, ``nack``, ``extend``,
    ``get(timeout=0)``, ...) reconnects with backoff for up to the queue's
    ``retry_for`` seconds, then raises this; a waiting ``get`` rides the outage
    out until its own timeout and returns None (``[]``) instead.  Every retry
    is sent with the call's nonce, so a call that ran but whose reply was lost
    acts once.  When raised, the call may or may not have run (its reply may
    be what was lost): a put may be there, an ack may have counted.  A
    subclass of ``redis.ConnectionError``; ``__cause__`` is the last error
    redis-py raised, ``seconds`` how long the call retried.
    """

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds
