-- Shared by every script that reads or writes a worker's lease. Lease times come from Redis's
-- own clock, never a caller's: a worker whose clock is a minute off neither expires at once
-- nor outlives its death. The key names are spelled as redis_keys.WORKERS and worker().
local WORKERS = 'benchfleet:workers'
local function worker_key(name) return 'benchfleet:worker:' .. name end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
-- Extend `name`'s lease to `ttl` seconds from now, only while `instance` still holds it.
local function renew(name, instance, ttl, seen)
  local key = worker_key(name)
  if redis.call('HGET', key, 'instance') ~= instance or not redis.call('ZSCORE', WORKERS, name) then
    return false
  end
  redis.call('ZADD', WORKERS, clock() + tonumber(ttl), name)
  redis.call('HSET', key, 'seen', seen)
  return true
end
local function live(worker, instance)
  local exp = redis.call('ZSCORE', WORKERS, worker)
  return exp and tonumber(exp) > clock() and redis.call('HGET', worker_key(worker), 'instance') == instance
end
