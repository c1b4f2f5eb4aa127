-- An adaptive repeat no longer needed. ARGV: cell, reason, now (ISO). Only a queued cell.
local s = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
if s.status ~= 'queued' then return 0 end
s.status, s.reason, s.updated = 'skipped', ARGV[2], ARGV[3]
save(ARGV[1], s, {cell=ARGV[1], attempt=s.attempt or 0, generation=s.generation or 0, status='skipped', reason=ARGV[2], at=ARGV[3]})
return 1
