-- ARGV[3]: how many.  The first scheduled jobs, unclaimed: those due in the
-- order a claim takes them (priority, deadline, sequence), then those not yet
-- due by deadline.  Returns {id, payload, deadline, attempts, priority, ...};
-- a lost payload reads as false.  Changes nothing (prioritised jobs due but
-- not yet moved to rdy are read where they are).
local n = tonumber(ARGV[3])
local due, later = {}, {}
-- the jobs of a ZRANGEBYSCORE ... WITHSCORES reply into a list: members cut
-- at 17 (q's) or 33 (qp's and rdy's); priority p: 0, 'score' (rdy's) or 'pri'
local function add(into, ms, cut, p)
  for i = 1, #ms, 2 do
    local m = ms[i]
    local j = {id = string.sub(m, cut), d = tonumber(ms[i + 1]), s = string.sub(m, 1, 16), p = p}
    if cut == 33 then j.d, j.s = tonumber(string.sub(m, 1, 16)), string.sub(m, 17, 32) end
    if p == 'score' then j.p = tonumber(ms[i + 1])
    elseif p == 'pri' then j.p = tonumber(priority_of(j.id)) end
    into[#into + 1] = j
  end
end
if n > 0 then
  add(due, redis.call('ZRANGEBYSCORE', q, '-inf', now, 'WITHSCORES', 'LIMIT', 0, n), 17, 0)
  add(later, redis.call('ZRANGEBYSCORE', q, '(' .. us(now), '+inf', 'WITHSCORES', 'LIMIT', 0, n), 17, 0)
  if prio then
    add(due, redis.call('ZRANGEBYSCORE', rdy, '-inf', '(0', 'WITHSCORES', 'LIMIT', 0, n), 33, 'score')
    add(due, redis.call('ZRANGEBYSCORE', rdy, '(0', '+inf', 'WITHSCORES', 'LIMIT', 0, n), 33, 'score')
    add(due, redis.call('ZRANGEBYSCORE', qp, '-inf', now, 'WITHSCORES', 'LIMIT', 0, CHUNK), 33, 'pri')
    add(later, redis.call('ZRANGEBYSCORE', qp, '(' .. us(now), '+inf', 'WITHSCORES', 'LIMIT', 0, n), 33, 'pri')
  end
end
-- due: by priority, deadline, sequence; not yet due: by deadline, sequence
table.sort(due, function(a, b)
  if a.p ~= b.p then return a.p < b.p end
  if a.d ~= b.d then return a.d < b.d end
  return a.s < b.s
end)
table.sort(later, function(a, b)
  if a.d ~= b.d then return a.d < b.d end
  return a.s < b.s
end)
local pick, ids = {}, {}
for _, list in ipairs({due, later}) do
  for _, j in ipairs(list) do
    if #pick < n then pick[#pick + 1] = j ; ids[#ids + 1] = j.id end
  end
end
local states, pays, out = hmget(state, ids), hmget(pay, ids), {}
for i, j in ipairs(pick) do
  out[#out + 1] = j.id ; out[#out + 1] = pays[i] or false ; out[#out + 1] = us(j.d)
  out[#out + 1] = attempts(states[i]) ; out[#out + 1] = tostring(j.p)
end
return out
