-- A cell a dead (or replaced) worker held. ARGV: cell, worker, instance, max attempts,
-- reason, now (ISO). Returns 1: queue it again; 2: failed for good; 0: nothing to do.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local s = cjson.decode(raw)
if s.status == 'queued' then return 1 end
if s.status ~= 'running' or s.worker ~= ARGV[2] or s.instance ~= ARGV[3] then return 0 end
local entry = {cell=ARGV[1], attempt=s.attempt, generation=s.generation or 0, worker=ARGV[2], at=ARGV[6]}
s.worker, s.instance, s.updated = nil, nil, ARGV[6]
if tonumber(s.attempt) >= tonumber(ARGV[4]) then
  s.status, s.reason = 'failed', ARGV[5] .. '; gave up after ' .. s.attempt .. ' attempts'
  entry.status, entry.reason = 'failed', s.reason
  save(ARGV[1], s, entry)
  return 2
end
s.status, s.reason = 'queued', ARGV[5] .. '; queued again'
entry.status, entry.reason = 'queued', s.reason
save(ARGV[1], s, entry)
return 1
