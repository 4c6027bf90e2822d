-- ARGV[3]: max items, ARGV[4]: lease in microseconds, ARGV[5]: the caller's
-- listener id ('' unless it is a waiting get), ARGV[6]: its flags: 'w' it
-- waits if this claims nothing, 'o' the look is owed (it was told to look, or
-- looks for one that was and was not heard): it tells the others it looked,
-- 'b' (with 'o') it looks for one that was not heard: it becomes the watcher.
-- Returns {now, next, role, id, payload, deadline, attempts, lease, ...}:
-- next: when a job may next be due (-1: nothing scheduled or leased); role:
-- 'w' the caller is the watcher (it looks at next), 'i' it is idle, '' neither.
-- The j-th job of the reply holds the lease 'L<attempts>:<nonce>.<j>'.
-- ARGV[7..]: (id, lease) pairs acked before the claim, as ack does (a
-- worker's ack sent with its next get: one call for both); the reply then
-- ends with the acks' string of '1' and '0', and the call's record starts
-- with 'A<that string>|' (a replay answers the acks as they were answered).
local acks = nil
if prior then
  local function reply_again(rec)
    -- the record: 'now:next:end of the leases:deadline,deadline,...' (the jobs'
    -- deadlines in reply order); the jobs are those still holding this call's
    -- leases, their payloads read again.  Only a claim that leased jobs has a
    -- record, and its caller was neither watcher nor idle after it (role '');
    -- one that found none is run again: its registry writes are idempotent
    local now_, wake, until_, ds = string.match(rec, '^([^:]*):([^:]*):([^:]*):(.*)$')
    local out, mine, tail = {tonumber(now_), tonumber(wake), ''}, {}, ':' .. nonce .. '.'
    local held = redis.call('ZRANGEBYSCORE', lease, until_, until_)
    local states = hmget(state, held)
    for i = 1, #held do
      local v = states[i]
      local p = v and string.find(v, tail, 1, true)
      if p and string.sub(v, 1, 1) == 'L' and string.sub(v, p + #tail) ~= '' then
        mine[tonumber(string.sub(v, p + #tail))] = {held[i], tonumber(string.sub(v, 2, p - 1)), v}
      end
    end
    local j = 0
    for d in string.gmatch(ds, '[^,]+') do
      j = j + 1
      local m = mine[j]
      if m then
        local o = #out
        out[o + 1] = m[1] ; out[o + 2] = redis.call('HGET', pay, m[1]) or false
        out[o + 3] = d ; out[o + 4] = m[2] ; out[o + 5] = m[3]
      end
    end
    return out
  end
  local bits, rest = string.match(prior, '^A([01]*)|(.*)$')
  if not bits then return reply_again(prior) end
  if rest ~= '' then
    local out = reply_again(rest)
    out[#out + 1] = bits
    return out
  end
  acks = bits  -- it claimed none: the claim runs again, the acks stand
elseif #ARGV > 6 then
  acks = ack_leases(7)
end

local me, flags = ARGV[5], ARGV[6]
local waits, owed, blind = string.find(flags, 'w', 1, true), string.find(flags, 'o', 1, true),
  string.find(flags, 'b', 1, true)

-- after a claim of k jobs: where the caller goes (watcher, idle or neither),
-- who is told of what is due next, and the look announced; returns the
-- next due time and the caller's role
local function settle(k)
  local nxt, role, before = next_due(), '', watch
  if me ~= '' then
    -- the first write: on a full server (noeviction) it lets the ones below
    -- through, which keep the registry of a bounded number of listeners
    redis.call('ZREM', idle, me)
    if k == 0 and waits and nxt >= 0 and (not watch or watch == me or blind) then
      set_watch(me, nxt)
      role = 'w'
    else
      if watch == me then set_watch(nil, nil) end  -- busy, or nothing to watch
      if k == 0 and waits then
        redis.call('ZADD', idle, now_s, me)
        role = 'i'
      end
    end
  end
  if nxt < 0 then
    if wat then set_watch(watch, nil) end
  elseif nxt > now then
    tell(nxt, 1)  -- a lease that ends before the watcher looks, or no watcher
  elseif k > 0 then  -- jobs left due: idle listeners take them (the caller looks again)
    tell(nxt, due_count(), true)
  end
  if me ~= '' and (owed or watch ~= before) then
    -- no '*': due now, tell() named who looks; due later with no watcher,
    -- it told every listener already
    redis.call('PUBLISH', chan, wake_up('L', nxt, watch or ''))
  end
  return nxt, role
end

local due = take_due(tonumber(ARGV[3]))  -- {id, deadline, ...}, out of their sorted sets
if #due == 0 then
  local nxt, role = settle(0)
  if acks then
    remember('A' .. acks .. '|')
    return {now, nxt, role, acks}
  end
  return {now, nxt, role}
end
local k = #due / 2
local until_ = now + tonumber(ARGV[4])
local until_s = us(until_)
local ids = {}
for i = 1, k do ids[i] = due[2 * i - 1] end
local olds, pays = hmget(state, ids), hmget(pay, ids)
local sargs, largs, out, ds = {}, {}, {now, -1, ''}, {}
local tail = ':' .. nonce .. '.'
local j = 0
for i = 1, k do
  local id = ids[i]
  local a = attempts(olds[i]) + 1
  if not pays[i] then  -- a lost payload is an error, never an empty one
    bury(id, a - 1, tonumber(due[2 * i]), now, 'payload missing')
  else
    j = j + 1
    local s = string.format('L%d%s%d', a, tail, j)
    sargs[2 * j - 1] = id ; sargs[2 * j] = s
    largs[2 * j - 1] = until_s ; largs[2 * j] = id
    local o = 5 * j - 1
    out[o] = id ; out[o + 1] = pays[i] ; out[o + 2] = due[2 * i]
    out[o + 3] = a ; out[o + 4] = s
    ds[j] = due[2 * i]
  end
end
if j > 0 then
  each('HSET', state, sargs, 2)
  each('ZADD', lease, largs, 2)
end
if recur then recur_next(ids) end  -- before settle: the next instances are waited for
out[2], out[3] = settle(j)
remember((acks and 'A' .. acks .. '|' or '') .. now_s .. ':' .. us(out[2]) .. ':' .. until_s .. ':'
         .. table.concat(ds, ','))
if acks then out[#out + 1] = acks end
return out
