if prior then return tonumber(prior) end

-- ARGV[3]: id, ARGV[4]: delay in microseconds; attempts start again from 0
local id = ARGV[3]
if redis.call('ZREM', dead, id) == 0 then return remember(0) end
local d, head = now + tonumber(ARGV[4]), head_score()
schedule(id, d, 0)
if wakes(d, head) then tell(d, 1) end
return remember(1)
