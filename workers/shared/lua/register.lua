-- ARGV: name, instance, now (epoch), expiry, takeover ('1' or '0'), then field/value pairs.
local exp = redis.call('ZSCORE', KEYS[1], ARGV[1])
local inst = redis.call('HGET', KEYS[2], 'instance')
if exp and tonumber(exp) > tonumber(ARGV[3]) and inst and inst ~= ARGV[2] and ARGV[5] ~= '1' then
  return {0, inst, redis.call('HGET', KEYS[2], 'host') or ''}
end
local holding = redis.call('HGET', KEYS[2], 'holding') or ''
redis.call('DEL', KEYS[2])
for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
return {1, inst or '', holding}
