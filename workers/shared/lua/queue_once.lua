-- A submitted group's message, queued once: only while the group is still in its sweep's
-- unpublished set, so a submit resumed (or resumed twice at once) never queues it twice.
-- KEYS: the unpublished set, the queue, PENDING, NEEDS.
-- ARGV: group, message, task id, its PENDING entry, '1' when the queue is a need queue.
if redis.call('SREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
if ARGV[5] == '1' then redis.call('SADD', KEYS[4], KEYS[2]) end
return 1
