if prior then return tonumber(prior) end

-- ARGV[6]: id, ARGV[7]: lease, ARGV[8]: delay in microseconds
local id = ARGV[6]
local v = holds(id, ARGV[7])
if not v then return remember(0) end
redis.call('ZREM', lease, id)
local a = attempts(v)
local d, head = now + tonumber(ARGV[8]), head_score()
if retry(id, d, a, now, 'nacked') then wake_if_head(d, head) end
return remember(1)
