-- A worker stopping ends its lease, only while this instance holds it: one that lost its name
-- to another worker must not end that one's lease. ARGV: name, instance, now (ISO).
local key = worker_key(ARGV[1])
if redis.call('HGET', key, 'instance') ~= ARGV[2] then return 0 end
redis.call('ZREM', WORKERS, ARGV[1])
redis.call('HSET', key, 'instance', 'stopped:' .. ARGV[2], 'stopped', ARGV[3])
return 1
