if prior then return tonumber(prior) end

-- ARGV[3]: id, ARGV[4]: lease, ARGV[5]: delay in microseconds, or '' for the
-- queue's retry policy (none: 0); then, for the policy, ARGV[6]: a random
-- number in [0, 1) (its jitter), ARGV[7]: the caller's policy ('': none stated)
local id = ARGV[3]
local wait, policy = tonumber(ARGV[5]), nil
if not wait then
  local err
  policy, err = stated('retry', ARGV[7])
  if err then return redis.error_reply(err) end
end
local v = holds(id, ARGV[4])
if not v then return remember(0) end
redis.call('ZREM', lease, id)
local a = attempts(v)
if not wait then
  wait = 0
  if policy then  -- min(max_delay, base * factor ^ (attempts - 1)), less its jitter
    local b, f, m, j = string.match(policy, '^([^,]+),([^,]+),([^,]+),([^,]+)$')
    local sec = math.min(tonumber(m), tonumber(b) * tonumber(f) ^ (math.max(a, 1) - 1))
    wait = math.ceil(sec * (1 - tonumber(j) * tonumber(ARGV[6])) * 1000000)
  end
end
local d, head = now + wait, head_score()
if retry(id, d, a, now, 'nacked') and wakes(d, head) then tell(d, 1) end
return remember(1)
