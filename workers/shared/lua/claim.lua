-- Claims every expired lease for the reaper calling (only one caller wins each). ARGV: now
-- (ISO). Returns name, instance, holding for each claimed worker, flat.
local out = {}
for _, name in ipairs(redis.call('ZRANGEBYSCORE', WORKERS, '-inf', clock())) do
  local key = worker_key(name)
  local inst = redis.call('HGET', key, 'instance') or ''
  local holding = redis.call('HGET', key, 'holding') or ''
  redis.call('ZREM', WORKERS, name)
  redis.call('HSET', key, 'instance', 'lost:' .. inst, 'lost', ARGV[1])
  redis.call('HDEL', key, 'holding')
  table.insert(out, name)
  table.insert(out, inst)
  table.insert(out, holding)
end
return out
