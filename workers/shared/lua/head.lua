-- Shared by the cell scripts: KEYS[1] states hash, KEYS[2] log list, KEYS[3] events channel.
-- `final` (the set of final states) is prepended from Python, so there is one list of them.
local function save(cell, s, entry)
  redis.call('HSET', KEYS[1], cell, cjson.encode(s))
  redis.call('RPUSH', KEYS[2], cjson.encode(entry))
  redis.call('PUBLISH', KEYS[3], cjson.encode({cell=cell, status=s.status}))
end
local function live(worker, instance, now)
  local exp = redis.call('ZSCORE', 'benchfleet:workers', worker)
  local inst = redis.call('HGET', 'benchfleet:worker:' .. worker, 'instance')
  return exp and tonumber(exp) > now and inst == instance
end
