-- Shared by the cell scripts: KEYS[1] states hash, KEYS[2] log list, KEYS[3] events channel.
-- `final` (the set of final states) and lease_head.lua are prepended from Python.
local function save(cell, s, entry)
  redis.call('HSET', KEYS[1], cell, cjson.encode(s))
  redis.call('RPUSH', KEYS[2], cjson.encode(entry))
  redis.call('PUBLISH', KEYS[3], cjson.encode({cell=cell, status=s.status}))
end
