if prior then return tonumber(prior) end

-- ARGV[6]: id, ARGV[7]: rule ('e<us>': every that many us from now; 'c...':
-- cron), ARGV[8]: priority, ARGV[9]: payload.  A recurring job of that id is
-- replaced (its scheduled instance goes; one running goes on).  Returns its
-- first instance's deadline (us)
local id, rule = ARGV[6], ARGV[7]
if not recur then redis.call('HSET', meta, 'rec', '1') ; recur = true end
local old = redis.call('HGET', rec, id)
if old then
  local _, _, inst = recurring(old)
  drop_scheduled(inst)
end
if string.sub(rule, 1, 1) == 'e' then rule = rule .. ':' .. us(now) end
local head = head_score()
local _, d = recur_from(id, rule, ARGV[8], ARGV[9])
if d then wake_if_head(d, head) end
return remember(d or -1)
