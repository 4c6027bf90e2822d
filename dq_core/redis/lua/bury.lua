if prior then return tonumber(prior) end

-- ARGV[3..]: (id, lease, reason) triples: leased jobs that cannot run go dead
local n = 0
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local v = holds(id, ARGV[i + 1])
  if v then
    redis.call('ZREM', lease, id)
    bury(id, attempts(v), now, now, ARGV[i + 2])
    n = n + 1
  end
end
return remember(n)
