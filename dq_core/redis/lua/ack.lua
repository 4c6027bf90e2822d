if prior then return prior end

-- ARGV[3..]: (id, lease) pairs; returns a string of '1' and '0', one for each:
-- was the lease held
local ids, want, out, seen, done = {}, {}, {}, {}, {}
for i = 3, #ARGV, 2 do ids[#ids + 1] = ARGV[i] ; want[#want + 1] = ARGV[i + 1] end
local cur = hmget(state, ids)
for i = 1, #ids do
  local id, v = ids[i], cur[i]
  if v and string.sub(v, 1, 1) == 'L' and (want[i] == '' or v == want[i]) and not seen[id] then
    seen[id] = true
    done[#done + 1] = id
    out[i] = '1'
  else
    out[i] = '0'
  end
end
forget(done, lease)
return remember(table.concat(out))
