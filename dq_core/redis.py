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

The protocol is written once, as generators that yield the steps to take
(run a script, subscribe, wait), and so is the driver that carries the
steps out (``_Protocol._carry_out``, a coroutine): each face only supplies
its I/O (a script call, a subscription) as coroutines.  The blocking
face's never suspend, so it runs the driver to its end with one ``send``.
"""

from __future__ import annotations

import asyncio
import collections
import math
import os
import threading
import time
import warnings
from contextlib import asynccontextmanager, contextmanager
from time import monotonic
from typing import (
    TYPE_CHECKING, Any, AsyncIterator, Callable, Coroutine, Deque, Generator, Generic, Iterable, Iterator,
    List, Literal, Optional, Protocol,
    Sequence, Tuple, TypeVar, Union, overload,
)

import redis as _redis
import redis.asyncio as _aredis

from ._convert import to_count, to_real
from ._waiting import MAX_WAIT, Uncopyable, check_timeout

__all__ = ["AsyncRedisDelayQueue", "Job", "RedisDelayQueue", "Serializer"]

T = TypeVar("T")
R = TypeVar("R")
C = TypeVar("C")  # the client a face runs on
Payload = Union[bytes, str]
#: What ``put(..., if_exists=...)`` takes: replace a job held under the id, or keep it.
IfExists = Literal["replace", "keep"]

_US = 1_000_000
#: Deadlines are integer microseconds in a double, exact below 2**53: a
#: delay or a Unix time past 2**52 us (142 years) is refused, so that now +
#: delay stays exact.
_MAX_US = 2**52
#: Delays below this many seconds take the fast path of a put (no overflow check).
_FAST_SECONDS = 1e9
#: Lua's unpack takes a few thousand values at most; scripts work in chunks.
_CHUNK = 1000


class Serializer(Protocol[T]):
    """What ``serializer=`` takes: ``dumps(obj) -> bytes | str``, ``loads(bytes) -> obj``."""

    def dumps(self, obj: T, /) -> Union[bytes, str]: ...

    def loads(self, data: bytes, /) -> T: ...


class Job(Generic[T]):
    """One claimed (or dead) job: ``id``, ``payload``, ``deadline``, ``attempts``, ``reason``.

    ``deadline`` is the Unix time (server clock, seconds) at which the job
    became due; ``attempts`` counts its deliveries, this one included.
    ``reason`` is None for a claimed job and says why a dead one died (from
    :meth:`RedisDelayQueue.dead`); a dead job whose payload the serializer
    cannot decode carries its raw bytes as ``payload``.  The
    job also carries its lease token, so ``ack(job)`` acks this lease only.
    """

    __slots__ = ("id", "payload", "deadline", "attempts", "reason", "_token")

    def __init__(self, id: str, payload: T, deadline: float, attempts: int,
                 _token: str = "", *, reason: Optional[str] = None) -> None:
        self.id = id
        self.payload = payload
        self.deadline = deadline
        self.attempts = attempts
        self.reason = reason
        self._token = _token

    def __repr__(self) -> str:
        why = "" if self.reason is None else f", reason={self.reason!r}"
        return (f"Job(id={self.id!r}, payload={self.payload!r}, deadline={self.deadline!r}, "
                f"attempts={self.attempts!r}{why})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Job):
            return NotImplemented
        return ((self.id, self.payload, self.deadline, self.attempts, self.reason, self._token)
                == (other.id, other.payload, other.deadline, other.attempts, other.reason,
                    other._token))

    __hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------- Lua

# KEYS: the queue's keys in _KEY_NAMES order, then the call's replay record.
# ARGV[1]: the wake-up channel; ARGV[2..4]: the caller's policy (max_attempts,
# dead_ttl in microseconds, dead_max; '' where the caller states none);
# ARGV[5]: the call's nonce ('' for read-only calls); the rest is each script's own.
#
# q     sorted set: scheduled jobs, member = 16-digit sequence .. id, score = deadline (us)
# state hash: id -> 'S<attempts>:<member>' (scheduled), 'L<attempts>:<token>'
#       (leased), 'D<attempts>:<deadline>:<reason>' (dead); absent: no such job
# pay   hash: id -> payload
# lease sorted set: leased ids, score = end of the lease (us)
# dead  sorted set: dead ids, score = time of death (us)
# seq   counter for members (FIFO among equal deadlines)
# meta  hash: the queue's policy (maxa, dttl, dmax), stored by the first client stating it
# r:<nonce>  a state-changing call's reply, kept _REPLAY_MS: the same call
#       replayed (a reply lost, the client library sending it again) returns it
#
# A leased job's state string is its lease: a Job carries it, and an ack,
# nack or extend counts only while the state is still that string.  Its
# token is the call's random nonce and the job's place in the call, so
# tokens are never reused, whatever happens to the keys.
_KEY_NAMES = ("q", "state", "pay", "lease", "dead", "seq", "meta")
#: How long a state-changing call's reply is kept for a replay (milliseconds).
_REPLAY_MS = 60_000

_PRELUDE = """
local q, state, pay, lease, dead, seq, meta, rkey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local chan, nonce = ARGV[1], ARGV[5]
local CHUNK = %d

local prior = nil
if nonce ~= '' then prior = redis.call('GET', rkey) end

-- the queue's policy: stored with it; a caller stating another one is refused
local fields, names = {'maxa', 'dttl', 'dmax'}, {'max_attempts', 'dead_ttl', 'dead_max'}
local pol = redis.call('HMGET', meta, 'maxa', 'dttl', 'dmax')
for i = 1, 3 do
  local given = ARGV[i + 1]
  if given ~= '' then
    if pol[i] and pol[i] ~= given then
      return redis.error_reply('DQPOLICY ' .. names[i] .. ' ' .. pol[i] .. ' ' .. given)
    end
    if not pol[i] then redis.call('HSET', meta, fields[i], given) ; pol[i] = given end
  end
end
local maxa, dttl, dmax = tonumber(pol[1] or '0'), tonumber(pol[2] or '0'), tonumber(pol[3] or '0')

local function remember(r)
  if nonce ~= '' then redis.call('SET', rkey, cmsgpack.pack(r), 'PX', %d) end
  return r
end

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- integer microseconds as a string, every digit kept ('..' would write %%.14g)
local function us(x)
  return string.format('%%d', x)
end

-- sorted-set member: equal scores sort by member, hence FIFO by sequence
-- ('%%016d' formats as '%%016.0f' does below 2**53, in half the time)
local function member(s, id)
  return string.format('%%016d', s) .. id
end

-- a state string: its kind ('S', 'L', 'D'), attempts, and the rest
local function split(v)
  local p = string.find(v, ':', 2, true)
  return string.sub(v, 1, 1), tonumber(string.sub(v, 2, p - 1)), string.sub(v, p + 1)
end

-- the attempts of a state string alone; 0 for a state that was lost
local function attempts(v)
  if not v then return 0 end
  return tonumber(string.match(v, '^.(%%d+)')) or 0
end

-- run cmd key list[...] in chunks of width-element items
local function each(cmd, key, list, width)
  local size = CHUNK * width
  for i = 1, #list, size do
    redis.call(cmd, key, unpack(list, i, math.min(i + size - 1, #list)))
  end
end

local function hmget(key, ids)
  local out = {}
  for i = 1, #ids, CHUNK do
    local part = redis.call('HMGET', key, unpack(ids, i, math.min(i + CHUNK - 1, #ids)))
    for j = 1, #part do out[#out + 1] = part[j] end
  end
  return out
end

local function head_score()
  local h = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
  if h[2] then return tonumber(h[2]) end
  return nil
end

-- tell waiting consumers when a job due at d is due before the current head:
-- '<d>:<ticket>:<jobs>'; for one job, the listener that takes the ticket
-- (this call's nonce) looks, the others do not
local function wake_if_head(d, head, n)
  if head == nil or d < head then
    redis.call('PUBLISH', chan, us(d) .. ':' .. nonce .. ':' .. (n or 1))
  end
end

local function schedule(id, d, a)
  local m = member(redis.call('INCR', seq), id)
  redis.call('ZADD', q, d, m)
  redis.call('HSET', state, id, 'S' .. a .. ':' .. m)
end

local function bury(id, a, d, now, why)
  redis.call('ZADD', dead, now, id)
  redis.call('HSET', state, id, 'D' .. a .. ':' .. us(d) .. ':' .. why)
end

-- a job that failed a attempts (nack, lease ended) is due again at d, or dead
local function retry(id, d, a, now, why)
  if maxa > 0 and a >= maxa then
    bury(id, a, d, now, why .. ' after ' .. a .. ' attempts (max_attempts ' .. maxa .. ')')
    return false
  end
  schedule(id, d, a)
  return true
end

-- leases that ended are due again (at their end), attempts already counted
local function reclaim(now)
  local ended = redis.call('ZRANGEBYSCORE', lease, '-inf', now, 'WITHSCORES', 'LIMIT', 0, CHUNK)
  for i = 1, #ended, 2 do
    local id = ended[i]
    redis.call('ZREM', lease, id)
    local a = attempts(redis.call('HGET', state, id))
    retry(id, tonumber(ended[i + 1]), math.max(a, 1), now, 'lease ended')
  end
end

local function forget(ids)
  if #ids > 0 then
    each('ZREM', dead, ids, 1)
    each('HDEL', state, ids, 1)
    each('HDEL', pay, ids, 1)
  end
  return #ids
end

-- dead jobs past the queue's retention (age, count) go for good
local function trim_dead(now)
  if dttl > 0 then
    forget(redis.call('ZRANGEBYSCORE', dead, '-inf', now - dttl, 'LIMIT', 0, CHUNK))
  end
  if dmax > 0 then
    local over = redis.call('ZCARD', dead) - dmax
    if over > 0 then forget(redis.call('ZRANGE', dead, 0, math.min(over, CHUNK) - 1)) end
  end
end

-- the state of id if it is leased, with lease s ('' matches any lease)
local function holds(id, s)
  local v = redis.call('HGET', state, id)
  if v and string.sub(v, 1, 1) == 'L' and (s == '' or v == s) then return v end
  return nil
end

local now = now_us()
reclaim(now)
trim_dead(now)
""" % (_CHUNK, _REPLAY_MS)

#: The start of every script that changes state: a replay returns the first reply.
_REPLAY = """
if prior then return cmsgpack.unpack(prior) end
"""

_PUT = _REPLAY + """
-- ARGV[6]: '1' if times are absolute; ARGV[7]: 'keep' to skip ids already held
-- (else they are replaced); then (id, payload, microseconds) triples
local absolute, keep = ARGV[6] == '1', ARGV[7] == 'keep'
local n = (#ARGV - 7) / 3
local first = redis.call('INCRBY', seq, n) - n + 1  -- fresh numbers, none reused
local head = head_score()
local seen, ids, zargs, sargs, pargs = {}, {}, {}, {}, {}
local k, best = 0, nil
-- of repeated ids the last one wins (replace) or the first (keep)
local from, to, step = n - 1, 0, -1
if keep then from, to, step = 0, n - 1, 1 end
for i = from, to, step do
  local id = ARGV[8 + 3 * i]
  if not seen[id] then
    seen[id] = true
    local d = tonumber(ARGV[10 + 3 * i])
    if not absolute then d = now + d end
    local m = member(first + i, id)
    k = k + 1
    ids[k] = id
    zargs[2 * k - 1] = d ; zargs[2 * k] = m
    sargs[2 * k - 1] = id ; sargs[2 * k] = 'S0:' .. m
    pargs[2 * k - 1] = id ; pargs[2 * k] = ARGV[9 + 3 * i]
  end
end
local old = hmget(state, ids)
if keep then  -- ids already held stay as they are
  local z, s, p, j = {}, {}, {}, 0
  for i = 1, k do
    if not old[i] then
      j = j + 1
      z[2 * j - 1] = zargs[2 * i - 1] ; z[2 * j] = zargs[2 * i]
      s[2 * j - 1] = sargs[2 * i - 1] ; s[2 * j] = sargs[2 * i]
      p[2 * j - 1] = pargs[2 * i - 1] ; p[2 * j] = pargs[2 * i]
    end
  end
  zargs, sargs, pargs, old = z, s, p, {}
else  -- ids already held leave their old state: a new put starts from 0 attempts
  local gone, leased, died = {}, {}, {}
  for i = 1, k do
    if old[i] then
      local kind, _, rest = split(old[i])
      if kind == 'S' then gone[#gone + 1] = rest
      elseif kind == 'L' then leased[#leased + 1] = ids[i]
      else died[#died + 1] = ids[i] end
    end
  end
  if #gone > 0 then each('ZREM', q, gone, 1) end
  if #leased > 0 then each('ZREM', lease, leased, 1) end
  if #died > 0 then each('ZREM', dead, died, 1) end
end
for i = 1, #zargs, 2 do
  if best == nil or zargs[i] < best then best = zargs[i] end
end
if #zargs > 0 then
  each('ZADD', q, zargs, 2)
  each('HSET', state, sargs, 2)
  each('HSET', pay, pargs, 2)
end
if best ~= nil then wake_if_head(best, head, #zargs / 2) end
return remember(#zargs / 2)
"""

_CLAIM = """
-- ARGV[6]: max items, ARGV[7]: lease in microseconds
-- returns {now, wake, id, payload, deadline, attempts, lease, ...};
-- wake: when something may next be due (-1: nothing scheduled or leased)
if prior then  -- the record keeps no payloads: read them again
  local out = cmsgpack.unpack(prior)
  for o = 3, #out, 5 do out[o + 1] = redis.call('HGET', pay, out[o]) or false end
  return out
end
local function next_wake()
  local wake = head_score() or -1
  local l = redis.call('ZRANGE', lease, 0, 0, 'WITHSCORES')
  if l[2] and (wake < 0 or tonumber(l[2]) < wake) then wake = tonumber(l[2]) end
  return wake
end
local due = redis.call('ZRANGEBYSCORE', q, '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[6]))
if #due == 0 then return {now, next_wake()} end
local k = #due / 2
local until_ = now + tonumber(ARGV[7])
local ms, ids = {}, {}
for i = 1, k do
  ms[i] = due[2 * i - 1]
  ids[i] = string.sub(ms[i], 17)
end
each('ZREM', q, ms, 1)
local olds, pays = hmget(state, ids), hmget(pay, ids)
local sargs, largs, out, rec = {}, {}, {now, -1}, {now, -1}
local j = 0
for i = 1, k do
  local id = ids[i]
  local a = attempts(olds[i]) + 1
  if not pays[i] then  -- a lost payload is an error, never an empty one
    bury(id, a - 1, tonumber(due[2 * i]), now, 'payload missing')
  else
    j = j + 1
    local s = 'L' .. a .. ':' .. nonce .. '.' .. i
    sargs[2 * j - 1] = id ; sargs[2 * j] = s
    largs[2 * j - 1] = until_ ; largs[2 * j] = id
    local o = 5 * j - 2
    out[o] = id ; out[o + 1] = pays[i] ; out[o + 2] = due[2 * i]
    out[o + 3] = a ; out[o + 4] = s
    rec[o] = id ; rec[o + 1] = '' ; rec[o + 2] = due[2 * i]
    rec[o + 3] = a ; rec[o + 4] = s
  end
end
if j > 0 then
  each('HSET', state, sargs, 2)
  each('ZADD', lease, largs, 2)
end
out[2] = next_wake() ; rec[2] = out[2]
remember(rec)
return out
"""

_ACK = _REPLAY + """
-- ARGV[6..]: (id, lease) pairs; returns 1/0 for each: was the lease held
local ids, want, out, seen, done = {}, {}, {}, {}, {}
for i = 6, #ARGV, 2 do ids[#ids + 1] = ARGV[i] ; want[#want + 1] = ARGV[i + 1] end
local cur = hmget(state, ids)
for i = 1, #ids do
  local id, v = ids[i], cur[i]
  if v and string.sub(v, 1, 1) == 'L' and (want[i] == '' or v == want[i]) and not seen[id] then
    seen[id] = true
    done[#done + 1] = id
    out[i] = 1
  else
    out[i] = 0
  end
end
if #done > 0 then
  each('ZREM', lease, done, 1)
  each('HDEL', state, done, 1)
  each('HDEL', pay, done, 1)
end
return remember(out)
"""

_BURY = _REPLAY + """
-- ARGV[6..]: (id, lease, reason) triples: leased jobs that cannot run go dead
local n = 0
for i = 6, #ARGV, 3 do
  local id = ARGV[i]
  local v = holds(id, ARGV[i + 1])
  if v then
    redis.call('ZREM', lease, id)
    bury(id, attempts(v), now, now, ARGV[i + 2])
    n = n + 1
  end
end
return remember(n)
"""

_NACK = _REPLAY + """
-- ARGV[6]: id, ARGV[7]: lease, ARGV[8]: delay in microseconds
local id = ARGV[6]
local v = holds(id, ARGV[7])
if not v then return remember(0) end
redis.call('ZREM', lease, id)
local a = attempts(v)
local d, head = now + tonumber(ARGV[8]), head_score()
if retry(id, d, a, now, 'nacked') then wake_if_head(d, head) end
return remember(1)
"""

_EXTEND = _REPLAY + """
-- ARGV[6]: id, ARGV[7]: lease, ARGV[8]: lease length in microseconds
local id = ARGV[6]
if not holds(id, ARGV[7]) then return remember(0) end
redis.call('ZADD', lease, now + tonumber(ARGV[8]), id)
return remember(1)
"""

_CANCEL = _REPLAY + """
-- ARGV[6]: id; the job goes whatever its state
local id = ARGV[6]
local v = redis.call('HGET', state, id)
redis.call('HDEL', pay, id)
if not v then return remember(0) end
local kind, _, rest = split(v)
if kind == 'S' then redis.call('ZREM', q, rest)
elseif kind == 'L' then redis.call('ZREM', lease, id)
else redis.call('ZREM', dead, id) end
redis.call('HDEL', state, id)
return remember(1)
"""

_RESCHEDULE = _REPLAY + """
-- ARGV[6]: id, ARGV[7]: delay in microseconds; scheduled jobs only
local id = ARGV[6]
local v = redis.call('HGET', state, id)
if not v then return remember(0) end
local kind, a, m = split(v)
if kind ~= 'S' then return remember(0) end
redis.call('ZREM', q, m)
local d, head = now + tonumber(ARGV[7]), head_score()
schedule(id, d, a)
wake_if_head(d, head)
return remember(1)
"""

_REQUEUE_DEAD = _REPLAY + """
-- ARGV[6]: id, ARGV[7]: delay in microseconds; attempts start again from 0
local id = ARGV[6]
if redis.call('ZREM', dead, id) == 0 then return remember(0) end
local d, head = now + tonumber(ARGV[7]), head_score()
schedule(id, d, 0)
wake_if_head(d, head)
return remember(1)
"""

_PURGE_DEAD = _REPLAY + """
-- ARGV[6]: age in microseconds; deletes up to CHUNK jobs dead at least that long
return remember(forget(redis.call('ZRANGEBYSCORE', dead, '-inf', now - tonumber(ARGV[6]),
                                  'LIMIT', 0, CHUNK)))
"""

_STATS = """
local due, total = redis.call('ZCOUNT', q, '-inf', now), redis.call('ZCARD', q)
return {total - due, due, redis.call('ZCARD', lease), redis.call('ZCARD', dead)}
"""

_DEAD = """
-- ARGV[6]: the first rank, ARGV[7]: the last; returns {id, payload, deadline,
-- attempts, reason, ...}, oldest death first; a lost payload or state reads as false
local got = redis.call('ZRANGE', dead, tonumber(ARGV[6]), tonumber(ARGV[7]), 'WITHSCORES')
local ids = {}
for i = 1, #got, 2 do ids[#ids + 1] = got[i] end
local states, pays, out = hmget(state, ids), hmget(pay, ids), {}
for i = 1, #ids do
  local a, d, why = 0, got[2 * i], 'state lost'
  if states[i] then
    local _, n, rest = split(states[i])
    local p = string.find(rest, ':', 1, true)
    a = n
    if p then d, why = string.sub(rest, 1, p - 1), string.sub(rest, p + 1) else d, why = rest, '' end
  end
  out[#out + 1] = ids[i] ; out[#out + 1] = pays[i] or false
  out[#out + 1] = d ; out[#out + 1] = a ; out[#out + 1] = why
end
return out
"""

_CLEAR = """
return redis.call('DEL', unpack(KEYS))
"""

_SCRIPTS = {
    "put": _PUT, "claim": _CLAIM, "ack": _ACK, "bury": _BURY, "nack": _NACK, "extend": _EXTEND,
    "cancel": _CANCEL, "reschedule": _RESCHEDULE, "requeue_dead": _REQUEUE_DEAD,
    "purge_dead": _PURGE_DEAD, "stats": _STATS, "dead": _DEAD, "clear": _CLEAR,
}
#: The scripts that only read (and reclaim, which a replay may repeat): no replay record.
_READ_ONLY = frozenset({"stats", "dead", "clear"})
#: Each script is the prelude (policy, helpers, TIME, reclaim of ended leases) plus its body.
SOURCES = {op: _PRELUDE + body for op, body in _SCRIPTS.items()}


# ---------------------------------------------------------------- steps

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
                 "_pid", "_checked", "_listener", "_quiet", "_offset", "_me")
    _client_class: Any  # what the face runs on: redis.Redis or redis.asyncio.Redis

    def __init__(self, name: str, client: C, lease: float, max_attempts: Optional[int],
                 serializer: Optional[Serializer[T]], dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None:
        expected = self._client_class
        if not isinstance(client, expected):
            raise TypeError(f"client must be a {expected[0].__module__.split('.client')[0]}.Redis, "
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
        if serializer is not None and not (callable(getattr(serializer, "dumps", None))
                                           and callable(getattr(serializer, "loads", None))):
            raise TypeError("serializer must have dumps and loads methods, "
                            f"not {type(serializer).__name__!r}")
        self.name = name
        self.lease = lease
        self.max_attempts = max_attempts
        self.dead_ttl = dead_ttl
        self.dead_max = dead_max
        self.serializer = serializer
        prefix = f"dq:{{{name}}}:"
        self._prefix = prefix
        self.keys = [prefix + k for k in _KEY_NAMES]
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
        # this process's monotonic clock minus the server's (as a look found it)
        self._offset: Optional[float] = None
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

    def _encode(self, payload: object, name: str = "payload") -> bytes:
        s = self.serializer
        if s is not None:
            payload = s.dumps(payload)  # type: ignore[arg-type]
            name = "serializer.dumps()"
        if isinstance(payload, bytes):
            return b"b" + payload
        if isinstance(payload, str):
            return b"s" + payload.encode()
        what = "return" if s is not None else "be"
        raise TypeError(f"{name} must {what} bytes or str, not {type(payload).__name__!r}")

    def _decode(self, data: bytes) -> T:
        body = data[1:]
        if self.serializer is not None:
            return self.serializer.loads(body)
        return (body.decode() if data[:1] == b"s" else body)  # type: ignore[return-value]

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
        jobs: List[Job[T]] = []
        bad: List[Any] = []
        for i in range(2, len(flat), 5):
            job_id, data, token = flat[i].decode(), flat[i + 1], flat[i + 4].decode()
            if data is None:  # a replayed claim whose payload went meanwhile
                bad += (job_id, token, "payload missing")
                continue
            try:
                payload = self._decode(data)
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
                    payload = self._decode(data)
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
        else:
            ids = [self._id(j, f"job_ids[{i}]") for i, j in enumerate(job_ids)]
            if len(ids) != n:
                raise ValueError(f"payloads and job_ids differ in length: {n} != {len(ids)}")
        plain = self.serializer is None
        many = n > 1 or name.endswith("s")
        args: List[Any] = []
        for i, (job_id, payload, t) in enumerate(zip(ids, items, ts)):
            # fast paths for the common types; the general ones name what failed
            if plain and type(payload) is bytes:
                data = b"b" + payload
            else:
                data = self._encode(payload, f"payload[{i}]" if many else "payload")
            if type(t) is float and 0.0 <= t < _FAST_SECONDS:
                us = math.ceil(t * _US)
            else:
                label = f"{name}[{i}]" if many else name
                us = _micros(to_real(t, label), label)
            args += (job_id, data, us)
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
        while True:
            if not look:
                look = True
                reply = [0, -1]  # as an empty look: no jobs, nothing to time
            else:
                # in scripts of _BATCH jobs at most, until enough or none left due
                want = min(n - len(jobs), _BATCH)
                sent = monotonic()
                reply = yield from self._run("claim", want, lease)
                now, wake = reply[0], reply[1]
                self._offset = sent - now / _US
                if listening:  # a look made while subscribed: it stays true until a wake-up
                    self._quiet = math.inf if wake < 0 else sent + (wake - now) / _US
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
            if not (yield _Wait(min(left, _RECHECK))):
                yield _SUBSCRIBE  # it broke: subscribe anew, then look

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
            out += [bool(r) for r in reply]
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
            if n < _CHUNK:
                return total

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
        nonce = "" if op in _READ_ONLY else os.urandom(8).hex()
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
                            if not wakeups:
                                break  # the time is up: look
                            if await self._must_look(wakeups):
                                self._quiet = 0.0  # whatever was known is old
                                break
                            end = min(end, self._quiet)  # nothing due before then
                        value = True
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

    async def _must_look(self, wakeups: List[bytes]) -> bool:
        """Whether the listener must look after these wake-ups.

        A job due later only brings the listener's wait forward; a job due
        now is looked for by the one listener (of all processes) that takes
        its ticket; several jobs, or a wake-up not understood, by every one.
        """
        for data in wakeups:
            parts = data.split(b":")
            if len(parts) != 3 or parts[2] != b"1" or self._offset is None:
                return True
            due = int(parts[0]) / _US + self._offset  # on this process's monotonic clock
            if due > monotonic() + 0.001:
                self._quiet = min(self._quiet, due)
                continue
            # the ticket is no job's state: a plain SET NX, and a GET in case
            # this is a replay of our own SET whose reply was lost
            key = self._prefix + "t:" + parts[1].decode()
            if await self._ticket(key) or await self._ticket_holder(key) == self._me.encode():
                return True
        return False

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
                # wake-ups that came while nobody listened: whatever was known
                # is old; a pile of them (a long busy spell) is dropped with
                # its connection
                n = await pubsub.drain(_STALE)
                if n:
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
    a ``redis.Redis`` or a ``redis.RedisCluster`` (every key of a queue
    carries the hash tag ``{name}``: one slot).
    """

    __slots__ = ()
    _client_class = (_redis.Redis, _redis.RedisCluster)

    @overload
    def __init__(self: "RedisDelayQueue[Payload]", name: str,
                 client: "Union[_redis.Redis, _redis.RedisCluster]", *,
                 lease: float = 30.0, max_attempts: Optional[int] = None,
                 serializer: None = None, dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None: ...

    @overload
    def __init__(self: "RedisDelayQueue[T]", name: str,
                 client: "Union[_redis.Redis, _redis.RedisCluster]", *,
                 lease: float = 30.0, max_attempts: Optional[int] = None,
                 serializer: Serializer[T], dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None: ...

    def __init__(self, name: str, client: "Union[_redis.Redis, _redis.RedisCluster]", *,
                 lease: float = 30.0, max_attempts: Optional[int] = None,
                 serializer: Optional[Serializer[T]] = None, dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None:
        super().__init__(name, client, lease, max_attempts, serializer,  # type: ignore[arg-type]
                         dead_ttl, dead_max)

    async def _script(self, keys: List[str], args: List[Any], op: str) -> Any:
        return self._scripts[op](keys=keys, args=args)

    async def _eviction_policy(self) -> Any:
        return self.client.config_get("maxmemory-policy")

    async def _ticket(self, key: str) -> bool:
        return bool(self.client.set(key, self._me, nx=True, px=_TICKET_MS))

    async def _ticket_holder(self, key: str) -> Any:
        return self.client.get(key)

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

    def put(self, payload: T, delay: float = 0.0, *, job_id: Optional[str] = None,
            if_exists: IfExists = "replace") -> str:
        """Schedule ``payload`` ``delay`` seconds from now (server time); return its job id.

        A ``job_id`` already held (scheduled, leased or dead) is, with
        ``if_exists="replace"`` (the default), replaced: new payload, new
        deadline, attempts back to 0, and a lease it had is lost (a handler
        running it cannot ack it, and the job runs again).  With
        ``if_exists="keep"`` the job held is left exactly as it is (payload,
        deadline, lease, attempts) and the id is returned: a put by id is then
        idempotent while the job exists (scheduled, leased or dead); once it
        was acked or cancelled, the same put schedules it afresh.  O(log n).
        """
        return self._drive(self._put_one(payload, delay, "delay", False, job_id, if_exists))

    def put_at(self, payload: T, when: float, *, job_id: Optional[str] = None,
               if_exists: IfExists = "replace") -> str:
        """Schedule ``payload`` at Unix time ``when`` (server clock); return its job id.

        ``job_id`` and ``if_exists`` as for :meth:`put`.  O(log n).
        """
        return self._drive(self._put_one(payload, when, "when", True, job_id, if_exists))

    def put_many(self, payloads: Iterable[T], delays: Optional[Iterable[float]] = None, *,
                 job_ids: Optional[Iterable[str]] = None,
                 if_exists: IfExists = "replace") -> List[str]:
        """Schedule many payloads; ``delays`` default to 0.  O(k log n).

        Each script puts 500 jobs atomically, so a big batch never holds the
        server for long; a connection lost midway leaves the scripts already
        run done.  ``job_ids`` and ``if_exists`` as for :meth:`put`.
        """
        return self._drive(self._put_many(payloads, delays, job_ids, if_exists))

    def get(self, timeout: Optional[float] = None) -> Optional[Job[T]]:
        """Claim the earliest due job, waiting up to ``timeout`` seconds (None: forever).

        Returns None on timeout.  The job is leased: ``ack`` it when done.
        O(log n) on the server, one round trip when a job is due.
        """
        return self._drive(self._get_flow(timeout))

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

    def nack(self, job_or_id: Union[Job[T], str], delay: float = 0.0) -> bool:
        """Give the job back, due again after ``delay`` (or dead past max_attempts).

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
        when an extend found the lease lost (the job may then run elsewhere).
        O(log n) per extension.
        """
        if not isinstance(job, Job):
            raise TypeError(f"job must be a Job, not {type(job).__name__!r}")
        lost = threading.Event()
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.lease / 3):
                try:
                    if not self.extend(job):
                        lost.set()
                        return
                except _LOST_REPLY:
                    pass  # the server is away: try again at the next beat

        thread = threading.Thread(target=beat, name=f"keep_alive {job.id}", daemon=True)
        thread.start()
        try:
            yield lost
        finally:
            stop.set()
            thread.join()

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

    def purge_dead(self, older_than: float = 0.0) -> int:
        """Delete the jobs dead for at least ``older_than`` seconds; return how many.  O(k log n)."""
        return self._drive(self._purge_flow(older_than))

    def clear(self) -> None:
        """Delete every job of the queue, in every state, and its stored policy.  O(n)."""
        self._drive(self._run("clear"))

    def close(self) -> None:
        """Close the subscriptions kept for waiting; the queue stays usable."""
        for pubsub in self._idle_subscriptions():
            _run_blocking(pubsub.close())


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

    async def drain(self, most: float = math.inf) -> float:
        """Read the wake-ups waiting, up to one more than ``most``; how many."""
        n = 0
        while n <= most and await self.message(0.0) is not None:
            n += 1
        return n


class _BlockingPubSub(_PubSub):
    """The blocking face's subscription: its coroutines never suspend."""

    __slots__ = ()

    async def message(self, timeout: float) -> Any:
        return self.raw.get_message(timeout=timeout)

    async def send_subscribe(self, channel: str) -> None:
        self.raw.subscribe(channel)

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


class _AsyncPubSub(_PubSub):
    """The asyncio face's subscription."""

    __slots__ = ()

    async def message(self, timeout: float) -> Any:
        return await self.raw.get_message(timeout=timeout)

    async def send_subscribe(self, channel: str) -> None:
        await self.raw.subscribe(channel)

    async def close(self) -> None:
        await self.raw.aclose()

    async def wait(self, seconds: float) -> List[bytes]:
        msg = await self.raw.get_message(timeout=seconds)
        return [] if msg is None else await self.collect(msg)


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


def _run_blocking(step: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine of the blocking face's I/O to its end: it never suspends."""
    try:
        step.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    step.close()
    raise RuntimeError("a blocking RedisDelayQueue step suspended")


class AsyncRedisDelayQueue(_Protocol[T, "_aredis.Redis"]):
    """:class:`RedisDelayQueue` on ``redis.asyncio``: the same methods, as coroutines.

    Same keys, scripts and protocol: both kinds of queue may share a queue
    name.  Use it from one event loop.  Cancelling a waiting ``get`` loses
    nothing: cancelled while it sleeps, it has claimed nothing; cancelled
    while its claim script runs, the jobs that script claimed come back
    when their lease ends, as from a consumer that died.
    """

    __slots__ = ()
    _client_class = (_aredis.Redis,)

    @overload
    def __init__(self: "AsyncRedisDelayQueue[Payload]", name: str, client: "_aredis.Redis", *,
                 lease: float = 30.0, max_attempts: Optional[int] = None,
                 serializer: None = None, dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None: ...

    @overload
    def __init__(self: "AsyncRedisDelayQueue[T]", name: str, client: "_aredis.Redis", *,
                 lease: float = 30.0, max_attempts: Optional[int] = None,
                 serializer: Serializer[T], dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None: ...

    def __init__(self, name: str, client: "_aredis.Redis", *, lease: float = 30.0,
                 max_attempts: Optional[int] = None,
                 serializer: Optional[Serializer[T]] = None, dead_ttl: Optional[float] = None,
                 dead_max: Optional[int] = None) -> None:
        super().__init__(name, client, lease, max_attempts, serializer, dead_ttl, dead_max)

    async def _script(self, keys: List[str], args: List[Any], op: str) -> Any:
        return await self._scripts[op](keys=keys, args=args)

    async def _eviction_policy(self) -> Any:
        return await self.client.config_get("maxmemory-policy")

    async def _ticket(self, key: str) -> bool:
        return bool(await self.client.set(key, self._me, nx=True, px=_TICKET_MS))

    async def _ticket_holder(self, key: str) -> Any:
        return await self.client.get(key)

    def _new_listener(self) -> "_Baton":
        return _Baton()

    def _try_listen(self) -> bool:
        return self._listener.try_take()  # type: ignore[no-any-return]

    async def _listen(self, seconds: float) -> bool:
        return await self._listener.take(seconds)  # type: ignore[no-any-return]

    def _unlisten(self) -> None:
        self._listener.release()

    def _new_pubsub(self) -> "_PubSub":
        return _AsyncPubSub(self.client.pubsub())

    _drive = _Protocol._carry_out

    async def put(self, payload: T, delay: float = 0.0, *, job_id: Optional[str] = None,
                  if_exists: IfExists = "replace") -> str:
        """Coroutine of :meth:`RedisDelayQueue.put`."""
        return await self._drive(self._put_one(payload, delay, "delay", False, job_id, if_exists))

    async def put_at(self, payload: T, when: float, *, job_id: Optional[str] = None,
                     if_exists: IfExists = "replace") -> str:
        """Coroutine of :meth:`RedisDelayQueue.put_at`."""
        return await self._drive(self._put_one(payload, when, "when", True, job_id, if_exists))

    async def put_many(self, payloads: Iterable[T], delays: Optional[Iterable[float]] = None, *,
                       job_ids: Optional[Iterable[str]] = None,
                       if_exists: IfExists = "replace") -> List[str]:
        """Coroutine of :meth:`RedisDelayQueue.put_many`."""
        return await self._drive(self._put_many(payloads, delays, job_ids, if_exists))

    async def get(self, timeout: Optional[float] = None) -> Optional[Job[T]]:
        """Coroutine of :meth:`RedisDelayQueue.get`."""
        return await self._drive(self._get_flow(timeout))

    async def get_many(self, max_items: int, timeout: Optional[float] = 0) -> List[Job[T]]:
        """Coroutine of :meth:`RedisDelayQueue.get_many`."""
        return await self._drive(self._claim_flow(max_items, timeout))

    async def ack(self, job_or_id: Union[Job[T], str]) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.ack`."""
        return await self._drive(self._ack_one(job_or_id))

    async def ack_many(self, jobs: Iterable[Union[Job[T], str]]) -> List[bool]:
        """Coroutine of :meth:`RedisDelayQueue.ack_many`."""
        return await self._drive(self._ack_flow(jobs))

    async def nack(self, job_or_id: Union[Job[T], str], delay: float = 0.0) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.nack`."""
        return await self._drive(self._nack_flow(job_or_id, delay))

    async def extend(self, job_or_id: Union[Job[T], str], lease: Optional[float] = None) -> bool:
        """Coroutine of :meth:`RedisDelayQueue.extend`."""
        return await self._drive(self._extend_flow(job_or_id, lease))

    @asynccontextmanager
    async def keep_alive(self, job: Job[T]) -> AsyncIterator[asyncio.Event]:
        """Async context manager of :meth:`RedisDelayQueue.keep_alive` (a task, not a thread)."""
        if not isinstance(job, Job):
            raise TypeError(f"job must be a Job, not {type(job).__name__!r}")
        lost = asyncio.Event()

        async def beat() -> None:
            while True:
                await asyncio.sleep(self.lease / 3)
                try:
                    if not await self.extend(job):
                        lost.set()
                        return
                except _LOST_REPLY:
                    pass  # the server is away: try again at the next beat

        task = asyncio.ensure_future(beat())
        try:
            yield lost
        finally:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

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

    async def purge_dead(self, older_than: float = 0.0) -> int:
        """Coroutine of :meth:`RedisDelayQueue.purge_dead`."""
        return await self._drive(self._purge_flow(older_than))

    async def clear(self) -> None:
        """Coroutine of :meth:`RedisDelayQueue.clear`."""
        await self._drive(self._run("clear"))

    async def aclose(self) -> None:
        """Close the subscriptions kept for waiting; the queue stays usable."""
        for pubsub in self._idle_subscriptions():
            await pubsub.close()
