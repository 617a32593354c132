-- cancel_job.lua: cancel a job (RQ's Job.cancel): status canceled, out of its queue and current
-- registry, into the canceled registry; optionally release its dependents and leave its
-- dependencies' dependents sets.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] job id, ARGV[3] now as an integer epoch (the canceled registry's score),
-- ARGV[4] now as UTC text, ARGV[5] "1" to enqueue dependents, ARGV[6] "1" to remove the job from
-- its dependencies' dependents sets
-- Returns: {1, then the dependents enqueued, flat: origin, id, origin, id, ...}, or {0} when the
-- job hash does not exist, or {-1} when it is already canceled.

--@include _common.lua
--@include _events.lua
--@include _rate_limit_release.lua
--@include _registries.lua
--@include _dependents.lua

local id = ARGV[2]
local key = K.job(id)
local fields = redis.call('HMGET', key, 'status', 'origin', 'priority', 'events')
if not fields[1] then return {0} end
if fields[1] == 'canceled' then return {-1} end
local origin = fields[2] or ''
redis.call('HSET', key, 'status', 'canceled')
job_event(fields[4], origin, 'canceled', id)  -- rqfast's events (a job of Queue(events=...))
local released = {}
if ARGV[5] == '1' then
  local _, _, enqueued = release_dependents(id, 'finished', ARGV[4], false, false)
  released = enqueued
end
if ARGV[6] == '1' then
  for _, dep_id in ipairs(redis.call('SMEMBERS', K.dependencies(id))) do
    redis.call('SREM', K.dependents(dep_id), id)
  end
end
remove_from_registries(id, origin, fields[1], true, fields[3])
redis.call('ZADD', K.canceled(origin), tonumber(ARGV[3]), id)
rate_limit_forget(id, rate_limit_key_of(id), tonumber(ARGV[3]), ARGV[4])  -- RQ 3.0 rate limit (none: a field read)
local reply = {1}
for _, value in ipairs(released) do reply[#reply + 1] = value end
return reply
