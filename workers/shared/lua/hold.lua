-- A message arrived: renew the lease and say which cells this worker holds, in one step, so no
-- cell is ever held under a lease that is gone. KEYS[1] pending messages.
-- ARGV: name, instance, ttl (s), seen (ISO), holding (JSON), task id. 0: the lease is lost.
if not renew(ARGV[1], ARGV[2], ARGV[3], ARGV[4]) then return 0 end
redis.call('HSET', worker_key(ARGV[1]), 'holding', ARGV[5])
redis.call('HDEL', KEYS[1], ARGV[6])
return 1
