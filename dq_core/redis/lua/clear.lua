return redis.call('DEL', unpack(KEYS))
