-- ARGV: cell, now (ISO). Returns {1, '', 0} cancelled, {2, worker, generation} running
-- there, {0, status, 0} already final.
local s = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
if final[s.status] then return {0, s.status, 0} end
if s.status == 'running' then return {2, s.worker, s.generation or 0} end
s.status, s.reason, s.updated = 'cancelled', 'cancelled before it ran', ARGV[2]
save(ARGV[1], s, {cell=ARGV[1], attempt=s.attempt or 0, generation=s.generation or 0, status='cancelled', reason=s.reason, at=ARGV[2]})
return {1, '', 0}
