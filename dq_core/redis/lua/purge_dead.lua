if prior then return tonumber(prior) end

-- ARGV[3]: age in microseconds; deletes up to CHUNK jobs dead at least that long
return remember(forget(redis.call('ZRANGEBYSCORE', dead, '-inf', now - tonumber(ARGV[3]),
                                  'LIMIT', 0, CHUNK)))
