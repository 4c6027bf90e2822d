if prior then return tonumber(prior) end

-- ARGV[6]: id, ARGV[7]: delay in microseconds; scheduled jobs only
local id = ARGV[6]
local v = redis.call('HGET', state, id)
if not v then return remember(0) end
local kind, a = split(v)
if kind ~= 'S' and kind ~= 'P' then return remember(0) end
unschedule(v)
local d, head = now + tonumber(ARGV[7]), head_score()
schedule(id, d, a)
wake_if_head(d, head)
return remember(1)
