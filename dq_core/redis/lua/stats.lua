local due, total = due_count(), redis.call('ZCARD', q)
if prio then total = total + redis.call('ZCARD', qp) + redis.call('ZCARD', rdy) end
return {total - due, due, redis.call('ZCARD', lease), redis.call('ZCARD', dead)}
