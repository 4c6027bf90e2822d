"""A DelayQueue shared by processes and machines, kept in Redis.

``pip install dq_core[redis]`` (redis-py).  :class:`RedisDelayQueue` runs on
a ``redis.Redis`` client, :class:`AsyncRedisDelayQueue` on a
``redis.asyncio.Redis`` one; both speak the same protocol and may share a
queue.

Design, in the discipline of the Redis queue libraries that got it right:

- Every state change is one Lua script (registered with ``register_script``,
  so a server that lost its script cache loads it again), and reads the
  time with ``TIME`` inside: a consumer dying between two commands can lose
  or double nothing, and clients with skewed clocks never see a job early.
- Every key of a queue carries the hash tag ``{name}``: one queue lives in
  one Redis Cluster slot.  The scripts name every key they touch.
- Scheduled jobs are a sorted set scored by deadline (microseconds of server
  time, exact in a double) whose members are a 16-digit
  sequence number followed by the job id, so equal deadlines come out
  first-in first-out.  Claimed jobs move to a second sorted set scored by the
  end of their lease, and their state (one hash field per job) becomes a
  lease string whose token is random: the claiming call's random nonce and
  the job's place in its reply (not the sequence number), so tokens are never
  reused, whatever happens to the keys.  An ``ack`` from a consumer whose
  lease ended finds another string (or none) and returns False, so a job
  never has two live leases.
- A waiting ``get`` subscribes to the queue's pub/sub channel (and to its
  own) *before* it looks for a due job, then sleeps on that socket until it
  is told to look, timed on the client.  A script that makes a job due
  names the one waiter that looks for it (an idle one for a job due now,
  the "watcher" for a job due later), so a job costs one look however many
  processes wait; the others stand by and look only if that one is not
  heard from.  Pub/sub rather than a notification list with BLPOP: nothing
  accumulates when nobody listens, and the sleep itself is a ``select`` on
  the client with sub-millisecond precision, where Redis's own blocking
  timeouts follow its event loop's clock.  A silent subscription is pinged:
  a half-open one is replaced.
- A lost connection is ridden out: a waiting ``get`` until its timeout, the
  other calls for ``retry_for`` seconds (then :class:`Unavailable`); a
  retried call carries the same nonce, so it acts once.

The package, one job per module: ``lua/`` the scripts (``_scripts`` reads
them), ``_serializer`` the payloads' bytes, ``_job`` the Job, ``_retry`` the
RetryPolicy, ``_cron`` Cron, ``_cli`` the command line, ``_errors``
Unavailable, ``_wakeups`` what a waiter knows of the wake-ups, ``_flows``
the protocol written once as generators of steps (run a script, subscribe,
wait), without I/O, ``_protocol`` the driver that carries them out and
``_pubsub`` its subscription, ``_sync`` and ``_asyncio`` the
two faces, which only supply their I/O (a script call, a subscription) as
coroutines.
"""

try:
    import redis as _redis  # noqa: F401
except ImportError as exc:  # pragma: no cover - tested in a subprocess
    raise ModuleNotFoundError(
        "dq_core.redis needs redis-py, which the 'redis' extra installs: pip install \"dq_core[redis]\"",
        name=exc.name,
        path=exc.path,
    ) from exc

from ._asyncio import AsyncRedisDelayQueue
from ._cron import Cron
from ._errors import Unavailable
from ._flows import IfExists
from ._job import Job
from ._retry import RetryPolicy
from ._serializer import Payload, Serializer
from ._sync import RedisDelayQueue

__all__ = [
    "AsyncRedisDelayQueue",
    "Cron",
    "IfExists",
    "Job",
    "Payload",
    "RedisDelayQueue",
    "RetryPolicy",
    "Serializer",
    "Unavailable",
]
