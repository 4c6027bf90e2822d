-- ARGV[3]: the first rank, ARGV[4]: the last; returns {id, payload, deadline,
-- attempts, reason, ...}, oldest death first; a lost payload or state reads as false
local got = redis.call('ZRANGE', dead, tonumber(ARGV[3]), tonumber(ARGV[4]), 'WITHSCORES')
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
