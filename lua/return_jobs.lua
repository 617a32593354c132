-- return_jobs.lua: put ids a worker moved into intermediate lists (a blocking BLMOVE it no longer
-- needs) back at the head of their queues, so no popped job is ever recorded nowhere.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, then pairs: queue name, job id, ...
-- Returns: the number of ids returned.

--@include _common.lua

local n = 0
for i = 2, #ARGV, 2 do
  local queue, id = ARGV[i], ARGV[i + 1]
  if redis.call('LREM', K.intermediate(queue), 1, id) > 0 then
    redis.call('LPUSH', K.queue(queue), id)
    n = n + 1
  end
end
return n
