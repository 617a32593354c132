-- empty_queue.lua: remove every job in a queue (RQ's Queue.empty): pop each id, delete its job
-- hash and dependents set (with RQ 3.0, its results stream too); and the queue's priority lanes.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] queue name, ARGV[3] "1" to delete each job's results stream (RQ 3.0)
-- Returns: the number of ids removed.

--@include _common.lua

local count = 0
while true do
  local id = redis.call('LPOP', K.queue(ARGV[2]))
  if not id then break end
  redis.call('DEL', K.job(id), K.dependents(id))
  if ARGV[3] == '1' then redis.call('DEL', K.results(id)) end
  count = count + 1
end
redis.call('DEL', K.priority(ARGV[2]))
return count
