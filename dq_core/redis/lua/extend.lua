if prior then return tonumber(prior) end

-- ARGV[3]: id, ARGV[4]: lease, ARGV[5]: lease length in microseconds
local id = ARGV[3]
if not holds(id, ARGV[4]) then return remember(0) end
-- out, then back: a full server (maxmemory, noeviction) refuses a script's
-- first write that may add memory, and an extend adds none
redis.call('ZREM', lease, id)
local until_ = now + tonumber(ARGV[5])
redis.call('ZADD', lease, us(until_), id)
tell(until_, 1)  -- a lease shortened below the watcher's time
return remember(1)
