local due, total = redis.call('ZCOUNT', q, '-inf', now), redis.call('ZCARD', q)
return {total - due, due, redis.call('ZCARD', lease), redis.call('ZCARD', dead)}
