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
  lease string with a fresh token from the same sequence: an ``ack`` from a
  consumer whose lease ended finds another string (or none) and returns
  False, so a job never has two live leases.
- A waiting ``get`` subscribes to the queue's pub/sub channel *before* it
  looks for a due job, then sleeps on that socket until the earliest
  deadline (or lease end) the script reported, timed on the client; a
  script that makes an earlier job due publishes on the channel.  Pub/sub
  rather than a notification list with BLPOP: every waiter learns of a new
  head at once (a list wakes one waiter and must be trimmed when nobody
  waits), nothing accumulates when nobody listens, and the sleep itself is
  a ``select`` on the client with sub-millisecond precision, where Redis's
  own blocking timeouts follow its event loop's clock.

The package, one job per module: ``lua/`` the scripts (``_scripts`` reads
them), ``_serializer`` the payloads' bytes, ``_job`` the Job, ``_protocol``
the protocol written once as generators of steps (run a script, subscribe,
wait) and the driver that carries them out, ``_sync`` and ``_asyncio`` the
two faces, which only supply their I/O (a script call, a subscription) as
coroutines.
"""

from ._asyncio import AsyncRedisDelayQueue
from ._job import Job
from ._protocol import IfExists
from ._scripts import SOURCES
from ._serializer import Payload, Serializer
from ._sync import RedisDelayQueue

__all__ = ["AsyncRedisDelayQueue", "Job", "RedisDelayQueue", "Serializer"]
