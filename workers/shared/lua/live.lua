-- The live workers by Redis's clock, each with its lease expiry: name, expiry, flat.
return redis.call('ZRANGEBYSCORE', WORKERS, clock(), '+inf', 'WITHSCORES')
