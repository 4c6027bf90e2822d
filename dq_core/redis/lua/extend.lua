if prior then return tonumber(prior) end

-- ARGV[6]: id, ARGV[7]: lease, ARGV[8]: lease length in microseconds
local id = ARGV[6]
if not holds(id, ARGV[7]) then return remember(0) end
-- out, then back: a full server (maxmemory, noeviction) refuses a script's
-- first write that may add memory, and an extend adds none
redis.call('ZREM', lease, id)
local until_ = now + tonumber(ARGV[8])
redis.call('ZADD', lease, us(until_), id)
tell(until_, 1)  -- a lease shortened below the watcher's time
return remember(1)
