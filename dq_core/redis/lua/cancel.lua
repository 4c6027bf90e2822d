if prior then return tonumber(prior) end

-- ARGV[6]: id; the job goes whatever its state
local id = ARGV[6]
local v = redis.call('HGET', state, id)
redis.call('HDEL', pay, id)
if not v then return remember(0) end
local kind, _, rest = split(v)
if kind == 'S' then redis.call('ZREM', q, rest)
elseif kind == 'L' then redis.call('ZREM', lease, id)
else redis.call('ZREM', dead, id) end
redis.call('HDEL', state, id)
return remember(1)
