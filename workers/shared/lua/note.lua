-- A note on a running cell (workers/shared/notes.py): what its worker does now, and why it
-- waits. KEYS[1] states hash, KEYS[2] events channel. ARGV: cell, worker, instance, attempt,
-- phase, reason ('' for none). Written only while the cell runs this very attempt, so a late
-- note never brings back a cell that ended, was cancelled or went to another worker. No log
-- entry: a note changes no state. Returns 1 written, 0 not.
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local s = cjson.decode(raw)
if s.status ~= 'running' or s.worker ~= ARGV[2] or s.instance ~= ARGV[3] or tonumber(s.attempt) ~= tonumber(ARGV[4]) then
  return 0
end
if ARGV[5] ~= '' then s.phase = ARGV[5] else s.phase = nil end
if ARGV[6] ~= '' then s.reason = ARGV[6] else s.reason = nil end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(s))
redis.call('PUBLISH', KEYS[2], cjson.encode({cell=ARGV[1], status='running', phase=ARGV[5], reason=ARGV[6]}))
return 1
