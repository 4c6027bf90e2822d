-- The start of every script: its keys and arguments, the queue's policy,
-- the helpers, the time, and the reclaim of ended leases (a put's leaves it out: NO_RECLAIM).  The loader
-- (_scripts.py) puts the constants CHUNK and REPLAY_MS before it and one
-- script's body after it.  A helper whose first line ends '-- lazy' is off
-- the common paths: the loader has it made only when the call may need it
-- (_scripts.NEED: a put, a claim, an ack; the other scripts always).
--
-- KEYS[1]: the queue's prefix, 'dq:{<name>}:', and every key the script
-- touches is the prefix and a name (q, state, pay, lease, dead, seq, meta,
-- idle, qp, rdy, pri, rec, wake, r:<nonce>): one hash tag, one cluster slot.
-- One key and two arguments: each key or argument of an EVALSHA costs the
-- server about as much as a small command.  ARGV[1]: the caller's policy,
-- 'max_attempts,dead_ttl in microseconds,dead_max' ('' in a field, or the
-- whole argument, where the caller states none); ARGV[2]: the call's nonce
-- ('' for read-only calls); the rest is each script's own.
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
-- Jobs put with a priority other than 0 (meta's 'pri' says one ever was; a
-- queue that never saw one never touches these):
-- qp    sorted set: such jobs not yet due, member = 16-digit deadline .. 16-digit
--       sequence .. id, score = deadline (us); state 'P<attempts>:<member>'
-- rdy   sorted set: such jobs found due by a claim (moved from qp), same member,
--       score = priority: a claim takes those below 0, then q's due jobs (the
--       priority-0 ones), then those above 0; by deadline, then sequence, among ties
-- pri   hash: id -> priority (kept while the job exists: retries keep it)
-- rec   hash: recurring jobs (meta's 'rec' says one ever was): id -> 'rule|priority|
--       instance|payload'; rule 'e<every us>:<anchor us>' or 'c<cron lists>';
--       instance: the id, '<id>@<deadline us>', of the one job it has scheduled
--       (claiming it schedules the next, the first firing after now)
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

local P = KEYS[1]
local q, state, pay, lease, dead, seq, meta, idle =
  P .. 'q', P .. 'state', P .. 'pay', P .. 'lease', P .. 'dead', P .. 'seq', P .. 'meta', P .. 'idle'
local qp, rdy, pri, rec = P .. 'qp', P .. 'rdy', P .. 'pri', P .. 'rec'
local chan, nonce = P .. 'wake', ARGV[2]
local rkey = P .. 'r:' .. nonce

local prior = nil
if nonce ~= '' then prior = redis.call('GET', rkey) end

-- the queue's policy: stored with it; a caller stating another one is refused
-- (meta's few fields by one HGETALL: a command costs by its arguments, and
-- HMGET of the nine read here cost twice as much)
local pol = {}
do
  local all = redis.call('HGETALL', meta)
  for i = 1, #all, 2 do pol[all[i]] = all[i + 1] end
end
if ARGV[1] ~= '' then
  local fields, names = {'maxa', 'dttl', 'dmax'}, {'max_attempts', 'dead_ttl', 'dead_max'}
  local told = {string.match(ARGV[1], '^([^,]*),([^,]*),([^,]*)$')}
  for i = 1, 3 do
    local given, f = told[i], fields[i]
    if given ~= '' then
      if pol[f] and pol[f] ~= given then
        return redis.error_reply('DQPOLICY ' .. names[i] .. ' ' .. pol[f] .. ' ' .. given)
      end
      if not pol[f] then redis.call('HSET', meta, f, given) ; pol[f] = given end
    end
  end
end
local maxa, dttl, dmax = tonumber(pol.maxa or '0'), tonumber(pol.dttl or '0'), tonumber(pol.dmax or '0')
local watch, wat = pol.watch, tonumber(pol.wat or '')
local prio = pol.pri and true or false  -- a job with a priority other than 0 was ever put
local recur = pol.rec and true or false  -- a recurring job was ever put

-- keep the reply r (a number or a string) for a replay of this call.  A full
-- server (maxmemory, noeviction) refuses a script's first write that may add
-- memory: only a call that changed nothing is refused its record, and its
-- replay changes nothing either
local function remember(r)
  if nonce ~= '' then
    redis.pcall('SET', rkey, type(r) == 'number' and string.format('%d', r) or r, 'PX', REPLAY_PX)
  end
  return r
end

local now
do
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- integer microseconds as a string, every digit kept ('..' would write %.14g).
-- A number given to redis.call is written with %.17g, ten times the cost of
-- the rest of a call: the scripts give strings
local function us(x)
  return string.format('%d', x)
end
local now_s = us(now)

-- the leases that ended: the reclaim's (read here: whether there are any
-- decides which helpers a claim or an ack makes; a put reads none)
local ended = redis.call('ZRANGEBYSCORE', lease, '-inf', now_s, 'WITHSCORES', 'LIMIT', '0', CHUNK_S)

-- sorted-set member: equal scores sort by member, hence FIFO by sequence
-- ('%016d' formats as '%016.0f' does below 2**53, in half the time)
local function member(s, id)
  return string.format('%016d', s) .. id
end

-- a state string: its kind ('S', 'L', 'D'), attempts, and the rest
local function split(v)  -- lazy
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

-- the queue's rate (meta's 'rate': 'rate,burst', tokens a second and at most
-- stored; absent: none) and its token bucket (meta's 'rtok': 'tokens:since',
-- since in us; absent: full), on the server's clock: a claim takes a token a job
local rate, burst, tokens = nil, nil, nil
if pol.rate then
  local r, b = string.match(pol.rate, '^([^,]+),([^,]+)$')
  rate, burst = tonumber(r) / 1000000, tonumber(b)
  tokens = burst
  if pol.rtok then
    local t, since = string.match(pol.rtok, '^([^:]+):(.+)$')
    tokens = math.min(burst, tonumber(t) + math.max(0, now - tonumber(since)) * rate)
  end
end

-- the earliest time a job due at d can be claimed: when the bucket holds a token
local function ready_at(d)
  if rate and tokens < 1 then return math.max(d, now + math.ceil((1 - tokens) / rate)) end
  return d
end

-- q's earliest score as a claim's take_due read it (false: q empty), kept
-- until q changes again (nil: not known)
local q_first = nil

-- the earliest score of the sorted set z, or nil
local function first_score(z)
  if z == q and q_first ~= nil then return q_first or nil end
  local h = redis.call('ZRANGE', z, '0', '0', 'WITHSCORES')
  if h[2] then return tonumber(h[2]) end
  return nil
end

-- the earliest of two scores (nil: none)
local function earliest(a, b)
  if a and (not b or a <= b) then return a end
  return b
end

-- the earliest deadline of a scheduled job (a prioritised one found due: now)
local function head_score()
  local h = first_score(q)
  if prio then
    h = earliest(h, first_score(qp))
    if redis.call('EXISTS', rdy) == 1 then h = earliest(h, now) end
  end
  return h
end

-- when a job may next be due: the earliest deadline or lease end (-1: none)
local function next_due()
  local a, b = head_score(), first_score(lease)
  if a then a = ready_at(a) end
  if a and (not b or a <= b) then return a end
  return b or -1
end

local function wake_up(kind, d, who)
  return kind .. ':' .. us(d) .. ':' .. who .. ':' .. now_s
end

-- up to n idle listeners, the most recently idle first, taken out of idle and
-- told on their own channel that jobs are due at d; the gone ones are dropped
local function pick(n, d)
  local got = {}
  while #got < n do
    local last = redis.call('ZPOPMAX', idle)[1]  -- Redis 5.0: the most recently idle
    if not last then break end
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
  d = ready_at(d)
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

-- jobs were made due at d by a put, nack, reschedule or requeue: must the
-- listeners be told (tell)?  Yes when they are due later, before the watcher
-- would look, or due now while no job was due before (head: the earliest
-- deadline before; lazy: not read yet, and read only if needed) or a listener
-- is idle.  The cheapest reads first; before the writes if head is lazy
local function wakes(d, head, lazy)
  if d > now then return true end
  if not lazy and (head == nil or head > now) then return true end
  if redis.call('EXISTS', idle) == 1 then return true end
  if not lazy then return false end
  head = head_score()
  return head == nil or head > now
end

-- the priority of id ('0' for none)
local function priority_of(id)  -- lazy
  if not prio then return '0' end
  return redis.call('HGET', pri, id) or '0'
end

-- schedule id at d with a attempts: in q, or in qp if it has a priority
local function schedule(id, d, a)  -- lazy
  local s = redis.call('INCR', seq)
  q_first = nil
  if priority_of(id) ~= '0' then
    local m = member(d, '') .. member(s, id)
    redis.call('ZADD', qp, d, m)
    redis.call('HSET', state, id, 'P' .. a .. ':' .. m)
    return
  end
  local m = member(s, id)
  redis.call('ZADD', q, d, m)
  redis.call('HSET', state, id, 'S' .. a .. ':' .. m)
end

-- a scheduled job's state v ('S' or 'P') leaves its sorted set
local function unschedule(v)  -- lazy
  local kind, _, m = split(v)
  q_first = nil
  if kind == 'S' then
    redis.call('ZREM', q, m)
  else
    redis.call('ZREM', qp, m)
    redis.call('ZREM', rdy, m)
  end
end

-- prioritised jobs due now move from qp to rdy, scored by their priority
local function promote()  -- lazy
  while true do
    local ms = redis.call('ZRANGEBYSCORE', qp, '-inf', now, 'LIMIT', 0, CHUNK)
    if #ms == 0 then return end
    local ids, args = {}, {}
    for i = 1, #ms do ids[i] = string.sub(ms[i], 33) end
    local ps = hmget(pri, ids)
    for i = 1, #ms do args[2 * i - 1] = ps[i] or 0 ; args[2 * i] = ms[i] end
    redis.call('ZADD', rdy, unpack(args))
    redis.call('ZREM', qp, unpack(ms))
    if #ms < CHUNK then return end
  end
end

-- up to n due jobs, taken out of their sorted set in the order a claim takes
-- them (priority, then deadline, then sequence): {id, deadline, ...}
local function take_due(n)
  local out = {}
  if rate then n = math.min(n, math.floor(tokens)) end
  local function from_q(k)
    if k <= 0 then return end
    local due, ms, few = nil, {}, k <= 8 and not prio
    if few then  -- the first k + 1 by deadline: the due ones taken, the next is q's head after
      due = redis.call('ZRANGE', q, '0', us(k), 'WITHSCORES')
      q_first = false
    else
      due = redis.call('ZRANGEBYSCORE', q, '-inf', now_s, 'WITHSCORES', 'LIMIT', '0', us(k))
    end
    for i = 1, #due, 2 do
      if few and (#ms == k or tonumber(due[i + 1]) > now) then
        q_first = tonumber(due[i + 1])
        break
      end
      ms[#ms + 1] = due[i]
      out[#out + 1] = string.sub(due[i], 17) ; out[#out + 1] = due[i + 1]
    end
    if #ms > 0 then each('ZREM', q, ms, 1) end
  end
  if not prio then
    from_q(n)
  else  -- (from_rdy made only here: a closure costs the server as much as a small command)
    local function from_rdy(lo, hi, k)
      if k <= 0 then return end
      local ms = redis.call('ZRANGEBYSCORE', rdy, lo, hi, 'LIMIT', 0, k)
      for i = 1, #ms do
        out[#out + 1] = string.sub(ms[i], 33) ; out[#out + 1] = us(tonumber(string.sub(ms[i], 1, 16)))
      end
      if #ms > 0 then each('ZREM', rdy, ms, 1) end
    end
    promote()
    from_rdy('-inf', '(0', n)
    from_q(n - #out / 2)
    from_rdy('(0', '+inf', n - #out / 2)
  end
  local k = #out / 2
  if rate and k > 0 then  -- a token for each job taken
    tokens = tokens - k
    redis.call('HSET', meta, 'rtok', string.format('%.17g', tokens) .. ':' .. us(now))
  end
  return out
end

-- how many scheduled jobs are due now
local function due_count()
  local n = redis.call('ZCOUNT', q, '-inf', now_s)
  if prio then n = n + redis.call('ZCARD', rdy) + redis.call('ZCOUNT', qp, '-inf', now) end
  return n
end

-- jobs that go for good: out of the sorted set zset (dead by default), state and payload
local function forget(ids, zset)
  if #ids > 0 then
    each('ZREM', zset or dead, ids, 1)
    each('HDEL', state, ids, 1)
    each('HDEL', pay, ids, 1)
    if prio then each('HDEL', pri, ids, 1) end
  end
  return #ids
end

-- dead jobs past the queue's retention in number go for good, oldest first
local function trim_count()  -- lazy
  if dmax > 0 then
    local over = redis.call('ZCARD', dead) - dmax
    if over > 0 then forget(redis.call('ZRANGE', dead, 0, math.min(over, CHUNK) - 1)) end
  end
end

-- dead jobs past the queue's retention (age, count) go for good
local function trim_dead(now)  -- lazy
  if dttl > 0 then
    forget(redis.call('ZRANGEBYSCORE', dead, '-inf', now - dttl, 'LIMIT', 0, CHUNK))
  end
  trim_count()
end

-- a job goes dead (past dead_max, the oldest death goes for good at once)
local function bury(id, a, d, now, why)  -- lazy
  redis.call('ZADD', dead, now, id)
  redis.call('HSET', state, id, 'D' .. a .. ':' .. us(d) .. ':' .. why)
  if dmax > 0 then trim_count() end  -- (made only then, in a claim)
end

-- a job that failed a attempts (nack, lease ended) is due again at d, or dead
local function retry(id, d, a, now, why)  -- lazy
  if maxa > 0 and a >= maxa then
    bury(id, a, d, now, why .. ' after ' .. a .. ' attempts (max_attempts ' .. maxa .. ')')
    return false
  end
  schedule(id, d, a)
  return true
end

-- the queue's policy in meta's field ('retry': 'base,factor,max_delay,jitter';
-- 'rate': 'rate,burst'; nil: none), stored by the first caller that states one
-- (given ~= ''); a caller stating another gets, second, the error to reply
local function stated(field, given)  -- lazy
  local s = redis.call('HGET', meta, field) or nil
  if given ~= '' then
    if s and s ~= given then return nil, 'DQPOLICY ' .. field .. ' ' .. s .. ' ' .. given end
    if not s then redis.call('HSET', meta, field, given) ; s = given end
  end
  return s
end

-- the proleptic Gregorian date (year, month, day) of a day counted from 1970-01-01
local function civil(days)  -- lazy
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
                          - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  return yoe + era * 400 + (m <= 2 and 1 or 0), m, d
end

-- a recurring rule's first firing strictly after t (us): 'e<n>:<anchor>' every
-- n us from anchor; 'c<min>;<hour>;<dom>;<month>;<dow>;<flags>' the lists of a
-- cron expression (UTC; flags: day of month '*', day of week '*'), as
-- dq_core/redis/_cron.py computes it; nil if none within four years
local function next_fire(rule, t)  -- lazy
  if string.sub(rule, 1, 1) == 'e' then
    local n, a = string.match(rule, '^e(%d+):(%d+)$')
    n, a = tonumber(n), tonumber(a)
    return a + (math.floor((t - a) / n) + 1) * n
  end
  local f = {}
  for part in string.gmatch(string.sub(rule, 2), '[^;]+') do f[#f + 1] = part end
  local function list(text, keyed)
    local out = {}
    for v in string.gmatch(text, '%d+') do
      if keyed then out[tonumber(v)] = true else out[#out + 1] = tonumber(v) end
    end
    return out
  end
  local mins, hours = list(f[1]), list(f[2])
  local doms, months, dows = list(f[3], true), list(f[4], true), list(f[5], true)
  local any = string.find(f[6], '1', 1, true) ~= nil  -- either day field is '*'
  local minute = math.floor(t / 60000000) + 1
  local day0 = math.floor(minute / 1440)
  local start = minute - day0 * 1440
  for off = 0, 4 * 366 do
    local days = day0 + off
    local _, m, d = civil(days)
    if months[m] then
      local dom, dow = doms[d] or false, dows[(days + 4) % 7] or false
      if (any and dom and dow) or (not any and (dom or dow)) then
        local first = off == 0 and start or 0
        for _, h in ipairs(hours) do
          for _, mi in ipairs(mins) do
            if h * 60 + mi >= first then return (days * 1440 + h * 60 + mi) * 60000000 end
          end
        end
      end
    end
  end
  return nil
end

-- a new job (attempts 0) with payload data, due at d, priority p ('0': none)
local function add_job(id, data, d, p)  -- lazy
  if p ~= '0' then
    if not prio then redis.call('HSET', meta, 'pri', '1') ; prio = true end
    redis.call('HSET', pri, id, p)
  end
  redis.call('HSET', pay, id, data)
  schedule(id, d, 0)
end

-- a scheduled job (not leased, not dead) goes for good; whether there was one
local function drop_scheduled(id)  -- lazy
  local v = redis.call('HGET', state, id)
  local kind = v and string.sub(v, 1, 1)
  if kind ~= 'S' and kind ~= 'P' then return false end
  unschedule(v)
  redis.call('HDEL', state, id)
  redis.call('HDEL', pay, id)
  if prio then redis.call('HDEL', pri, id) end
  return true
end

-- the recurring job base's next instance: its first firing after now; returns its id and deadline
local function recur_from(base, rule, p, data)  -- lazy
  local d = next_fire(rule, now)
  if not d then redis.call('HDEL', rec, base) ; return nil, nil end  -- never again
  local inst = base .. '@' .. us(d)
  add_job(inst, data, d, p)
  redis.call('HSET', rec, base, rule .. '|' .. p .. '|' .. inst .. '|' .. data)
  return inst, d
end

-- the parts of a recurring job's record: rule, priority, instance, payload
local function recurring(spec)  -- lazy
  return string.match(spec, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
end

-- claimed jobs that are recurring instances schedule their next (missed firings collapse)
local function recur_next(ids)  -- lazy
  for _, id in ipairs(ids) do
    local base = string.match(id, '^(.*)@%d+$')
    local spec = base and redis.call('HGET', rec, base)
    if spec then
      local rule, p, inst, data = recurring(spec)
      if inst == id then recur_from(base, rule, p, data) end
    end
  end
end

-- leases that ended are due again (at their end), attempts already counted
local function reclaim(now)
  for i = 1, #ended, 2 do
    local id = ended[i]
    redis.call('ZREM', lease, id)
    local a = attempts(redis.call('HGET', state, id))
    retry(id, tonumber(ended[i + 1]), math.max(a, 1), now, 'lease ended')
  end
end

-- ack the (id, lease) pairs of ARGV[from..] (lease '': any): each job whose
-- lease is held goes for good; a string of '1' (held) and '0', one a pair
local function ack_leases(from)
  local ids, want, out, seen, done = {}, {}, {}, {}, {}
  for i = from, #ARGV, 2 do ids[#ids + 1] = ARGV[i] ; want[#want + 1] = ARGV[i + 1] end
  local cur = hmget(state, ids)
  for i = 1, #ids do
    local id, v = ids[i], cur[i]
    if v and string.sub(v, 1, 1) == 'L' and (want[i] == '' or v == want[i]) and not seen[id] then
      seen[id] = true
      done[#done + 1] = id
      out[i] = '1'
    else
      out[i] = '0'
    end
  end
  forget(done, lease)
  return table.concat(out)
end

-- the state of id if it is leased, with lease s ('' matches any lease)
local function holds(id, s)
  local v = redis.call('HGET', state, id)
  if v and string.sub(v, 1, 1) == 'L' and (s == '' or v == s) then return v end
  return nil
end

reclaim(now)
if dttl > 0 or dmax > 0 then trim_dead(now) end
