if prior then return tonumber(prior) end

-- ARGV[3]: id, ARGV[4]: delay in microseconds; scheduled jobs only
local id = ARGV[3]
local v = redis.call('HGET', state, id)
if not v then return remember(0) end
local kind, a = split(v)
if kind ~= 'S' and kind ~= 'P' then return remember(0) end
unschedule(v)
local d, head = now + tonumber(ARGV[4]), head_score()
schedule(id, d, a)
if wakes(d, head) then tell(d, 1) end
return remember(1)
