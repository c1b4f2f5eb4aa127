-- A worker's published fields (its offer), written only while this instance holds the name.
-- ARGV: name, instance, then field/value pairs.
local key = worker_key(ARGV[1])
if redis.call('HGET', key, 'instance') ~= ARGV[2] then return 0 end
for i = 3, #ARGV, 2 do redis.call('HSET', key, ARGV[i], ARGV[i + 1]) end
return 1
