-- ARGV[6]: max items, ARGV[7]: lease in microseconds, ARGV[8]: '1' if this look
-- took a wake-up's ticket: then it tells the other listeners when something may
-- next be due (a wake-up for one job at wake), since they left the look to it
-- returns {now, wake, id, payload, deadline, attempts, lease, ...};
-- wake: when something may next be due (-1: nothing scheduled or leased).
-- The j-th job of the reply holds the lease 'L<attempts>:<nonce>.<j>'.
local function reply_again(rec)
  -- the record: 'now:wake:end of the leases:deadline,deadline,...' (the jobs'
  -- deadlines in reply order); the jobs are those still holding this call's
  -- leases, their payloads read again
  local now_, wake, until_, ds = string.match(rec, '^([^:]*):([^:]*):([^:]*):(.*)$')
  local out, mine, tail = {tonumber(now_), tonumber(wake)}, {}, ':' .. nonce .. '.'
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
if prior then return reply_again(prior) end
local function next_wake()
  local wake = head_score() or -1
  local l = redis.call('ZRANGE', lease, 0, 0, 'WITHSCORES')
  if l[2] and (wake < 0 or tonumber(l[2]) < wake) then wake = tonumber(l[2]) end
  if ARGV[8] == '1' and wake >= 0 then publish_wake(wake, 1) end
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
local sargs, largs, out, ds = {}, {}, {now, -1}, {}
local tail = ':' .. nonce .. '.'
local j = 0
for i = 1, k do
  local id = ids[i]
  local a = attempts(olds[i]) + 1
  if not pays[i] then  -- a lost payload is an error, never an empty one
    bury(id, a - 1, tonumber(due[2 * i]), now, 'payload missing')
  else
    j = j + 1
    local s = 'L' .. a .. tail .. j
    sargs[2 * j - 1] = id ; sargs[2 * j] = s
    largs[2 * j - 1] = until_ ; largs[2 * j] = id
    local o = 5 * j - 2
    out[o] = id ; out[o + 1] = pays[i] ; out[o + 2] = due[2 * i]
    out[o + 3] = a ; out[o + 4] = s
    ds[j] = due[2 * i]
  end
end
if j > 0 then
  each('HSET', state, sargs, 2)
  each('ZADD', lease, largs, 2)
end
out[2] = next_wake()
remember(us(now) .. ':' .. us(out[2]) .. ':' .. us(until_) .. ':' .. table.concat(ds, ','))
return out
