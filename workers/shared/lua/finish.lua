-- ARGV: cell, worker, instance, attempt, status, reason ('' for none), now (ISO), lease ttl
-- (s), release ('1': the message's last cell, its hold is let go), then the task event
-- (event.lua). Returns {accepted, lease renewed}: accepted only while this attempt holds the
-- cell (a worker declared dead and replaced cannot settle it), and in the same step the lease
-- renewed for what comes next, the hold released and the event sent, whatever the outcome.
local renewed = renew(ARGV[2], ARGV[3], ARGV[8], ARGV[7]) and 1 or 0
if renewed == 1 and ARGV[9] == '1' then redis.call('HDEL', worker_key(ARGV[2]), 'holding') end
publish_event(10, tonumber(ARGV[4]))
local s = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
-- The same finish again (its first reply was lost and the call retried): already done.
if s.status == ARGV[5] and s.worker == ARGV[2] and s.instance == ARGV[3] and tonumber(s.attempt) == tonumber(ARGV[4]) then
  return {1, renewed}
end
if s.status ~= 'running' or s.worker ~= ARGV[2] or s.instance ~= ARGV[3] or tonumber(s.attempt) ~= tonumber(ARGV[4]) then
  return {0, renewed}
end
s.status, s.updated = ARGV[5], ARGV[7]
if ARGV[6] ~= '' then s.reason = ARGV[6] else s.reason = nil end
save(ARGV[1], s, {cell=ARGV[1], attempt=s.attempt, generation=s.generation or 0, worker=ARGV[2], status=ARGV[5], reason=ARGV[6], at=ARGV[7]})
return {1, renewed}
