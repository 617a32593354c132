-- register_worker.lua: a worker's birth or death, as RQ 2.12 records them.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] worker name, ARGV[3] "birth" or "death", ARGV[4] TTL (s) of the worker
-- hash, ARGV[5] now as UTC text (death date), ARGV[6] number of queues, queue names...,
-- then (birth) n fields, field, value, ...
-- Returns: 1, or 0 for a birth refused because a live worker has this name.

--@include _common.lua
--@include _argv.lua

local r = argv_reader(2)
local w, what, ttl, now_text = r:next(), r:next(), r:next(), r:next()
local queues = r:list()
local key = K.worker(w)
if what == 'birth' then
  local fields = r:list(2)
  if redis.call('EXISTS', key) == 1 and redis.call('HEXISTS', key, 'death') == 0 then return 0 end
  redis.call('DEL', key)
  redis.call('HSET', key, unpack(fields))
  redis.call('SADD', K.workers, key)
  for _, q in ipairs(queues) do redis.call('SADD', K.workers_by_queue(q), key) end
  redis.call('EXPIRE', key, ttl)
else
  redis.call('SREM', K.workers, key)
  for _, q in ipairs(queues) do redis.call('SREM', K.workers_by_queue(q), key) end
  redis.call('HSET', key, 'death', now_text)
  redis.call('EXPIRE', key, ttl)
  redis.call('DEL', K.worker_executions(w))  -- RQ 3.0's death does the same
end
return 1
