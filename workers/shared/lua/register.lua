-- ARGV: name, instance, ttl (s), mode, then field/value pairs. Mode 'take' refuses a name a
-- live other instance holds; 'takeover' takes it anyway (its process is known dead); 'check'
-- only says whether 'take' would succeed. Returns {0, instance, host} refused, or
-- {1, previous instance, the cells it held}.
local key = worker_key(ARGV[1])
local exp = redis.call('ZSCORE', WORKERS, ARGV[1])
local inst = redis.call('HGET', key, 'instance')
if exp and tonumber(exp) > clock() and inst and inst ~= ARGV[2] and ARGV[4] ~= 'takeover' then
  return {0, inst, redis.call('HGET', key, 'host') or ''}
end
if ARGV[4] == 'check' then return {1, '', ''} end
local holding = redis.call('HGET', key, 'holding') or ''
redis.call('DEL', key)
for i = 5, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', WORKERS, clock() + tonumber(ARGV[3]), ARGV[1])
return {1, inst or '', holding}
