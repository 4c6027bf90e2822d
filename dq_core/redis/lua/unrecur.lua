if prior then return tonumber(prior) end

-- ARGV[3]: id.  The recurring job goes, and its scheduled instance (one
-- running goes on); 0 if there is none
local spec = redis.call('HGET', rec, ARGV[3])
if not spec then return remember(0) end
local _, _, inst = recurring(spec)
drop_scheduled(inst)
redis.call('HDEL', rec, ARGV[3])
return remember(1)
