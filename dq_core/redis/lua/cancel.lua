if prior then return tonumber(prior) end

-- ARGV[3]: id; the job goes whatever its state
local id = ARGV[3]
local v = redis.call('HGET', state, id)
redis.call('HDEL', pay, id)
if prio then redis.call('HDEL', pri, id) end
if not v then return remember(0) end
local kind = string.sub(v, 1, 1)
if kind == 'S' or kind == 'P' then unschedule(v)
elseif kind == 'L' then redis.call('ZREM', lease, id)
else redis.call('ZREM', dead, id) end
redis.call('HDEL', state, id)
return remember(1)
