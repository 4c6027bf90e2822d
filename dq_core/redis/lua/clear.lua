return redis.call('DEL', q, state, pay, lease, dead, seq, meta, idle, qp, rdy, pri, rec)
