if prior then return tonumber(prior) end

-- ARGV[6]: id, ARGV[7]: lease, ARGV[8]: lease length in microseconds
local id = ARGV[6]
if not holds(id, ARGV[7]) then return remember(0) end
redis.call('ZADD', lease, now + tonumber(ARGV[8]), id)
return remember(1)
