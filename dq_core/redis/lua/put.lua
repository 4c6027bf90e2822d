-- ARGV[3]: '1' if times are absolute; ARGV[4]: 'keep' to skip ids already
-- held, 'replace' to replace them, 'new' for ids that no job holds (drawn at
-- random by the client: nothing to look up); ARGV[5]: the jobs' priority
-- ('0': none, they go to q; else to qp); then (id, payload, microseconds) triples
local absolute, keep, new = ARGV[3] == '1', ARGV[4] == 'keep', ARGV[4] == 'new'
local n = (#ARGV - 5) / 3
-- the replay record (the prelude looks for none: NO_PRIOR).  A put of new ids
-- answers n, known before it runs: one command looks for the record and writes
-- it (SET NX GET), where a GET and a SET did.  A full server refuses that
-- write: then only a replay's record is looked for, and the put's first write
-- below is refused as it was
if new then
  prior = redis.pcall('SET', rkey, us(n), 'PX', REPLAY_PX, 'NX', 'GET')
  if type(prior) == 'table' then prior = redis.call('GET', rkey) end
else
  prior = redis.call('GET', rkey)
end
if prior then return tonumber(prior) end

local p = ARGV[5]
if p ~= '0' and not prio then redis.call('HSET', meta, 'pri', '1') ; prio = true end
local first = redis.call('INCRBY', seq, n) - n + 1  -- fresh numbers, none reused
local head = nil  -- the earliest deadline before the put (not read for 'new': wakes reads it if needed)
if not new then head = head_score() end
local seen, ids, zargs, sargs, pargs = {}, {}, {}, {}, {}
local k, best = 0, nil
-- of repeated ids the last one wins (replace) or the first (keep)
local from, to, step = n - 1, 0, -1
if keep then from, to, step = 0, n - 1, 1 end
for i = from, to, step do
  local id = ARGV[6 + 3 * i]
  if new or not seen[id] then
    local d = tonumber(ARGV[8 + 3 * i])
    if not absolute then d = now + d end
    if best == nil or d < best then best = d end
    local m = member(first + i, id)
    if p ~= '0' then m = member(d, '') .. m end
    k = k + 1
    if not new then seen[id] = true ; ids[k] = id end
    zargs[2 * k - 1] = us(d) ; zargs[2 * k] = m  -- a string: see us()
    sargs[2 * k - 1] = id ; sargs[2 * k] = (p ~= '0' and 'P0:' or 'S0:') .. m
    pargs[2 * k - 1] = id ; pargs[2 * k] = ARGV[7 + 3 * i]
  end
end
local old = new and {} or hmget(state, ids)
if keep then  -- ids already held stay as they are
  local z, s, p, j = {}, {}, {}, 0
  for i = 1, k do
    if not old[i] then
      j = j + 1
      z[2 * j - 1] = zargs[2 * i - 1] ; z[2 * j] = zargs[2 * i]
      s[2 * j - 1] = sargs[2 * i - 1] ; s[2 * j] = sargs[2 * i]
      p[2 * j - 1] = pargs[2 * i - 1] ; p[2 * j] = pargs[2 * i]
    end
  end
  zargs, sargs, pargs, old = z, s, p, {}
elseif not new then  -- ids already held leave their old state: a new put starts from 0 attempts
  local gone, leased, died = {}, {}, {}
  for i = 1, k do
    if old[i] then
      local kind, _, rest = split(old[i])
      if kind == 'S' then gone[#gone + 1] = rest
      elseif kind == 'P' then unschedule(old[i])
      elseif kind == 'L' then leased[#leased + 1] = ids[i]
      else died[#died + 1] = ids[i] end
    end
  end
  if #gone > 0 then each('ZREM', q, gone, 1) end
  if #leased > 0 then each('ZREM', lease, leased, 1) end
  if #died > 0 then each('ZREM', dead, died, 1) end
  if prio and p == '0' then each('HDEL', pri, ids, 1) end  -- replaced without a priority
end
if keep then  -- the earliest of those put
  best = nil
  for i = 1, #zargs, 2 do
    local d = tonumber(zargs[i])
    if best == nil or d < best then best = d end
  end
end
-- new ids: whether to wake, asked before the writes (the head is read only
-- if needed)
local wake = new and best ~= nil and wakes(best, nil, true)
if #zargs > 0 then
  each('ZADD', p ~= '0' and qp or q, zargs, 2)
  each('HSET', state, sargs, 2)
  each('HSET', pay, pargs, 2)
  if p ~= '0' then  -- its priority, kept across retries
    local r = {}
    for i = 1, #sargs, 2 do r[i] = sargs[i] ; r[i + 1] = p end
    each('HSET', pri, r, 2)
  end
end
if new then
  if wake then tell(best, n) end
  return n  -- recorded above
end
if best ~= nil and wakes(best, head) then tell(best, #zargs / 2) end
return remember(#zargs / 2)
