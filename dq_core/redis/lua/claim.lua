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
