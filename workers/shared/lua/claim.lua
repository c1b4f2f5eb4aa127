-- ARGV: name, now (epoch). Claims an expired lease for whoever reaps it (only one caller wins).
local exp = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not exp or tonumber(exp) > tonumber(ARGV[2]) then return {0} end
redis.call('ZREM', KEYS[1], ARGV[1])
local inst = redis.call('HGET', KEYS[2], 'instance') or ''
local holding = redis.call('HGET', KEYS[2], 'holding') or ''
redis.call('HSET', KEYS[2], 'instance', 'lost:' .. inst, 'lost', ARGV[3])
redis.call('HDEL', KEYS[2], 'holding')
return {1, inst, holding}
