-- register_ready_jobs.lua: RQ 3.0's ReadyJobRegistry.register_jobs: each job leaves the queue's
-- deferred registry, takes status ready_to_enqueue and enters its ready registry, scored now.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] queue name, ARGV[3] now as an integer epoch, ARGV[4..] job ids
-- Returns: the number of jobs registered.

--@include _common.lua

local q, now_int = ARGV[2], tonumber(ARGV[3])
for i = 4, #ARGV do
  local id = ARGV[i]
  redis.call('ZREM', K.deferred(q), id)
  redis.call('HSET', K.job(id), 'status', 'ready_to_enqueue')
  redis.call('ZADD', K.ready(q), now_int, id)
end
return #ARGV - 3
