-- ARGV[6]: the caller's retry policy: stored if the queue has none, refused if it has another
local _, err = retry_policy(ARGV[6])
if err then return redis.error_reply(err) end
return 1
