-- ARGV[3]: the caller's retry policy, ARGV[4]: its rate ('': none stated):
-- each stored if the queue has none, refused if it has another
for i, field in ipairs({'retry', 'rate'}) do
  local _, err = stated(field, ARGV[2 + i])
  if err then return redis.error_reply(err) end
end
return 1
