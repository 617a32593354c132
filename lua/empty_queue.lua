-- empty_queue.lua: remove every job in a queue (RQ's Queue.empty): pop each id, delete its job
-- hash and dependents set.
--
-- KEYS: none
-- ARGV[1] prefix, ARGV[2] queue name
-- Returns: the number of ids removed.

local count = 0
while true do
  local id = redis.call('LPOP', K.queue(ARGV[2]))
  if not id then break end
  redis.call('DEL', K.job(id), K.dependents(id))
  count = count + 1
end
return count
