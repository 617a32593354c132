-- delete_job.lua: delete a job (RQ's Job.delete): out of its queue and registry, its executions,
-- its group and its keys (with RQ 3.0, its results stream too); optionally its dependents too
-- (each out of its registry and deleted).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] job id, ARGV[3] "1" to remove it from its queue, ARGV[4] "1" to delete
-- its dependents, ARGV[5] now as UTC text and ARGV[6] as an integer epoch (a rate-limited job's
-- freed slot promotes a waiting job: see rate_limit_forget in _rate_limit.lua), ARGV[7] "1" to delete
-- the results stream of each job deleted (RQ 3.0; RQ 2.12 leaves it to expire)
-- Returns: the number of jobs deleted.

--@include _common.lua
--@include _rate_limit_release.lua
--@include _registries.lua

local function delete_one(id, remove_from_queue)
  local fields = redis.call('HMGET', K.job(id), 'status', 'origin', 'group_id', 'priority')
  local rl_key = rate_limit_key_of(id)
  if fields[1] then remove_from_registries(id, fields[2] or '', fields[1], remove_from_queue, fields[4]) end
  -- A rate-limited job keeps its executions, as in RQ 3.0: a live one holds its slot until it ends
  if rl_key then
    rate_limit_mark_executions(id, rl_key)
  else
    for _, x in ipairs(redis.call('ZRANGE', K.executions(id), 0, -1)) do
      redis.call('DEL', K.execution(id, x))
      if fields[2] then redis.call('ZREM', K.started(fields[2]), id .. ':' .. x) end
    end
    redis.call('DEL', K.executions(id))
  end
  if fields[3] and fields[3] ~= '' then redis.call('SREM', K.group(fields[3]), id) end
  local deleted = redis.call('DEL', K.job(id), K.dependents(id), K.dependencies(id)) > 0 and 1 or 0
  if ARGV[7] == '1' then redis.call('DEL', K.results(id)) end
  if rl_key then rate_limit_forget(id, rl_key, tonumber(ARGV[6]), ARGV[5]) end
  return deleted
end

local id = ARGV[2]
local deleted = 0
if ARGV[4] == '1' then
  for _, dependent_id in ipairs(redis.call('SMEMBERS', K.dependents(id))) do
    deleted = deleted + delete_one(dependent_id, false)
  end
end
return deleted + delete_one(id, ARGV[3] == '1')
