-- KEYS[4] envelopes hash. ARGV: cell, new generation, now (ISO), the new signed envelope.
-- Only a final cell starts a new generation; a refused rerun changes nothing.
local s = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
if not final[s.status] then return {0, s.status} end
redis.call('HSET', KEYS[4], ARGV[1], ARGV[4])
local entry = {cell=ARGV[1], attempt=s.attempt or 0, generation=tonumber(ARGV[2]), status='queued', reason='rerun (was ' .. s.status .. ')', at=ARGV[3]}
s.status, s.generation, s.worker, s.instance, s.reason, s.updated = 'queued', tonumber(ARGV[2]), nil, nil, entry.reason, ARGV[3]
save(ARGV[1], s, entry)
return {1}
