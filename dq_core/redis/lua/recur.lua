if prior then return tonumber(prior) end

-- ARGV[3]: id, ARGV[4]: rule ('e<us>': every that many us from now; 'c...':
-- cron), ARGV[5]: priority, ARGV[6]: payload.  A recurring job of that id is
-- replaced (its scheduled instance goes; one running goes on).  Returns its
-- first instance's deadline (us)
local id, rule = ARGV[3], ARGV[4]
if not recur then redis.call('HSET', meta, 'rec', '1') ; recur = true end
local old = redis.call('HGET', rec, id)
if old then
  local _, _, inst = recurring(old)
  drop_scheduled(inst)
end
if string.sub(rule, 1, 1) == 'e' then rule = rule .. ':' .. us(now) end
local head = head_score()
local _, d = recur_from(id, rule, ARGV[5], ARGV[6])
if d and wakes(d, head) then tell(d, 1) end
return remember(d or -1)
