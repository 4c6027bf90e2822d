if prior then return prior end

-- ARGV[3..]: (id, lease) pairs; returns a string of '1' and '0', one for each:
-- was the lease held
return remember(ack_leases(3))
