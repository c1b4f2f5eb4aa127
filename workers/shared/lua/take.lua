-- ARGV: cell, generation, worker, instance, lease ttl (s), now (ISO), the cell's cancel mark
-- ('' for none), then the task event (event.lua: topic, message, body); KEYS[4] attempts
-- hash, KEYS[5] the sweep's cancel set. One step for everything a cell's start needs: the
-- worker's lease is renewed (a worker whose lease is gone takes nothing: {-1, ...}, so no
-- cell is ever running under a lease no one holds), the cell taken, its cancel mark read
-- and its task-received event sent. Returns {1, attempt, marked} or {0, why}.
if not renew(ARGV[3], ARGV[4], ARGV[5], ARGV[6]) then
  return {-1, 'worker ' .. ARGV[3] .. ' no longer holds its lease'}
end
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0, 'the sweep has no such cell'} end
local s = cjson.decode(raw)
local gen, cur = tonumber(ARGV[2]), tonumber(s.generation or 0)
if gen < cur then return {0, 'generation ' .. gen .. ' is older than the cell\'s ' .. cur .. ' (a replay)'} end
if gen > cur then return {0, 'generation ' .. gen .. ' is newer than the cell\'s ' .. cur} end
if final[s.status] then return {0, 'the cell is already ' .. s.status .. ' (a duplicate or a replay)'} end
local marked = ARGV[7] ~= '' and redis.call('SISMEMBER', KEYS[5], ARGV[7]) or 0
-- This very worker's take again: its first reply was lost (Redis restarted, the link cut) and
-- the call was retried. The same attempt (its event went out the first time), not a refusal
-- that would leave the cell running.
if s.status == 'running' and s.worker == ARGV[3] and s.instance == ARGV[4] then
  return {1, tonumber(s.attempt), marked}
end
if s.status == 'running' and live(s.worker, s.instance) then
  return {0, 'the cell is leased by live worker ' .. s.worker}
end
local attempt = redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
s.status, s.worker, s.instance, s.attempt, s.reason, s.updated = 'running', ARGV[3], ARGV[4], attempt, nil, ARGV[6]
save(ARGV[1], s, {cell=ARGV[1], attempt=attempt, generation=gen, worker=ARGV[3], status='running', at=ARGV[6]})
publish_event(8, attempt)
return {1, attempt, marked}
