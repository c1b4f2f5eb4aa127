-- ARGV: name, instance, expiry, seen (ISO). 0: this instance no longer holds the name.
if redis.call('HGET', KEYS[2], 'instance') ~= ARGV[2] or not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[2], 'seen', ARGV[4])
return 1
