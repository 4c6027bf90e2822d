-- The start of every script: its keys and arguments, the queue's policy,
-- the helpers, the time, and the reclaim of ended leases.  The loader
-- (_scripts.py) puts the constants CHUNK and REPLAY_MS before it and one
-- script's body after it.
--
-- KEYS: the queue's keys (q, state, pay, lease, dead, seq, meta, idle), then
-- the call's replay record.  ARGV[1]: the wake-up channel; ARGV[2..4]: the
-- caller's policy (max_attempts, dead_ttl in microseconds, dead_max; ''
-- where the caller states none); ARGV[5]: the call's nonce ('' for
-- read-only calls); the rest is each script's own.
--
-- q     sorted set: scheduled jobs, member = 16-digit sequence .. id, score = deadline (us)
-- state hash: id -> 'S<attempts>:<member>' (scheduled), 'L<attempts>:<token>'
--       (leased), 'D<attempts>:<deadline>:<reason>' (dead); absent: no such job
-- pay   hash: id -> payload
-- lease sorted set: leased ids, score = end of the lease (us)
-- dead  sorted set: dead ids, score = time of death (us)
-- seq   counter for members (FIFO among equal deadlines)
-- meta  hash: the queue's policy (maxa, dttl, dmax), stored by the first client
--       stating it; and the watcher: the listener that looks when the next
--       job falls due (watch), and that time in us (wat)
-- idle  sorted set: the listeners waiting with nothing to do, score = since (us)
-- r:<nonce>  a state-changing call's reply, kept REPLAY_MS: the same call
--       replayed (a reply lost, the client library sending it again) returns it
--       (a number, a string of 0s and 1s, or what a claim needs to answer again)
--
-- A leased job's state string is its lease: a Job carries it, and an ack,
-- nack or extend counts only while the state is still that string.  Its
-- token is the call's random nonce and the job's place in the call's
-- reply, so tokens are never reused, whatever happens to the keys.
--
-- Wake-ups.  A listener (a queue object waiting in get) subscribes to the
-- channel and to its own, '<channel>:<id>'; whoever makes a job due tells
-- one listener to look for it, so that a job costs one look however many
-- wait: a job due now goes to an idle listener (taken out of idle), a job
-- due later to the watcher (made of an idle listener if there is none),
-- which looks when it falls due.  A listener told on its own channel is
-- known to be there (PUBLISH counts it); one that is gone is dropped.
-- On the channel, every listener hears '<kind>:<due>:<who>:<now>': kind 'P',
-- jobs due at <due> that <who> looks for; kind 'L', a look at <now> after
-- which <due> is due next (-1: nothing) and <who> watches it; <who> is ids
-- joined by ',', '*': every listener that hears it, or '': none named.  A listener not named
-- looks itself if no look ('L') is heard by a while after <due>: a listener
-- that died or stopped waiting costs one late job.

local q, state, pay, lease, dead, seq, meta, idle, rkey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local chan, nonce = ARGV[1], ARGV[5]

local prior = nil
if nonce ~= '' then prior = redis.call('GET', rkey) end

-- the queue's policy: stored with it; a caller stating another one is refused
local fields, names = {'maxa', 'dttl', 'dmax'}, {'max_attempts', 'dead_ttl', 'dead_max'}
local pol = redis.call('HMGET', meta, 'maxa', 'dttl', 'dmax', 'watch', 'wat')
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
local watch, wat = pol[4] or nil, tonumber(pol[5] or '')

-- keep the reply r (a number or a string) for a replay of this call.  A full
-- server (maxmemory, noeviction) refuses a script's first write that may add
-- memory: only a call that changed nothing is refused its record, and its
-- replay changes nothing either
local function remember(r)
  if nonce ~= '' then redis.pcall('SET', rkey, r, 'PX', REPLAY_MS) end
  return r
end

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local now = now_us()

-- integer microseconds as a string, every digit kept ('..' would write %.14g)
local function us(x)
  return string.format('%d', x)
end

-- sorted-set member: equal scores sort by member, hence FIFO by sequence
-- ('%016d' formats as '%016.0f' does below 2**53, in half the time)
local function member(s, id)
  return string.format('%016d', s) .. id
end

-- a state string: its kind ('S', 'L', 'D'), attempts, and the rest
local function split(v)
  local p = string.find(v, ':', 2, true)
  return string.sub(v, 1, 1), tonumber(string.sub(v, 2, p - 1)), string.sub(v, p + 1)
end

-- the attempts of a state string alone; 0 for a state that was lost
local function attempts(v)
  if not v then return 0 end
  return tonumber(string.match(v, '^.(%d+)')) or 0
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

-- the earliest score of the sorted set z, or nil
local function first_score(z)
  local h = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')
  if h[2] then return tonumber(h[2]) end
  return nil
end

local function head_score()
  return first_score(q)
end

-- when a job may next be due: the earliest deadline or lease end (-1: none)
local function next_due()
  local a, b = first_score(q), first_score(lease)
  if a and (not b or a <= b) then return a end
  return b or -1
end

local function wake_up(kind, d, who)
  return kind .. ':' .. us(d) .. ':' .. who .. ':' .. us(now)
end

-- up to n idle listeners, the most recently idle first, taken out of idle and
-- told on their own channel that jobs are due at d; the gone ones are dropped
local function pick(n, d)
  local got = {}
  while #got < n do
    local last = redis.call('ZRANGE', idle, -1, -1)[1]
    if not last then break end
    redis.call('ZREM', idle, last)
    if redis.call('PUBLISH', chan .. ':' .. last, wake_up('P', d, last)) > 0 then
      got[#got + 1] = last
    end
  end
  return got
end

-- the watcher w (nil: none) looks at d (nil: nothing to watch)
local function set_watch(w, d)
  if w ~= watch then
    if w then redis.call('HSET', meta, 'watch', w) else redis.call('HDEL', meta, 'watch') end
  end
  if d ~= wat then
    if d then redis.call('HSET', meta, 'wat', us(d)) else redis.call('HDEL', meta, 'wat') end
  end
  watch, wat = w, d
end

-- whether the watcher is there (it is told, on its own channel, to look at
-- d); one that is gone is dropped
local function watcher_told(d)
  if not watch then return false end
  if redis.call('PUBLISH', chan .. ':' .. watch, wake_up('P', d, watch)) > 0 then return true end
  set_watch(nil, wat)
  return false
end

-- n jobs are due at d: make sure a listener looks for them then.  Due now,
-- idle listeners look (one a job), the watcher too if they are too few, else
-- (unless quiet: the caller looks again itself) every listener; due later and
-- before the watcher looks, the watcher looks at d instead (an idle listener
-- becomes the watcher if there is none; else every listener looks at d)
local function tell(d, n, quiet)
  if d <= now then
    local who = pick(math.min(n, 64), d)
    if #who < n and watcher_told(d) then who[#who + 1] = watch end
    if #who > 0 or not quiet then
      redis.call('PUBLISH', chan, wake_up('P', d, #who > 0 and table.concat(who, ',') or '*'))
    end
  elseif not wat or d < wat or wat <= now then
    local w = watcher_told(d) and watch or pick(1, d)[1]
    set_watch(w, d)
    redis.call('PUBLISH', chan, wake_up('P', d, w or '*'))
  end
end

-- n jobs (default 1) were made due at d by a put, nack, reschedule or
-- requeue (head: the earliest deadline before): tell the listeners when they
-- are due later, before the watcher would look, or due now while no job was
-- due before or a listener is idle
local function wake_if_head(d, head, n)
  if d > now or head == nil or head > now or redis.call('EXISTS', idle) == 1 then
    tell(d, n or 1)
  end
end

local function schedule(id, d, a)
  local m = member(redis.call('INCR', seq), id)
  redis.call('ZADD', q, d, m)
  redis.call('HSET', state, id, 'S' .. a .. ':' .. m)
end

-- jobs that go for good: out of the sorted set zset (dead by default), state and payload
local function forget(ids, zset)
  if #ids > 0 then
    each('ZREM', zset or dead, ids, 1)
    each('HDEL', state, ids, 1)
    each('HDEL', pay, ids, 1)
  end
  return #ids
end

-- dead jobs past the queue's retention in number go for good, oldest first
local function trim_count()
  if dmax > 0 then
    local over = redis.call('ZCARD', dead) - dmax
    if over > 0 then forget(redis.call('ZRANGE', dead, 0, math.min(over, CHUNK) - 1)) end
  end
end

-- dead jobs past the queue's retention (age, count) go for good
local function trim_dead(now)
  if dttl > 0 then
    forget(redis.call('ZRANGEBYSCORE', dead, '-inf', now - dttl, 'LIMIT', 0, CHUNK))
  end
  trim_count()
end

-- a job goes dead (past dead_max, the oldest death goes for good at once)
local function bury(id, a, d, now, why)
  redis.call('ZADD', dead, now, id)
  redis.call('HSET', state, id, 'D' .. a .. ':' .. us(d) .. ':' .. why)
  trim_count()
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

-- the state of id if it is leased, with lease s ('' matches any lease)
local function holds(id, s)
  local v = redis.call('HGET', state, id)
  if v and string.sub(v, 1, 1) == 'L' and (s == '' or v == s) then return v end
  return nil
end

reclaim(now)
trim_dead(now)
