-- register_dependency.lua: record that a job waits for others (RQ's Job.register_dependency): the
-- job into its queue's deferred registry, into each dependency's dependents set, and each
-- dependency into the job's dependencies set. The job hash itself is not written.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] job id, ARGV[3] its queue (origin), ARGV[4] now as an integer epoch (the
-- deferred registry's score), ARGV[5] number of dependencies, dependency ids...
-- Returns: the number of dependencies registered.

--@include _common.lua
--@include _argv.lua

local r = argv_reader(2)
local id, origin, now_int = r:next(), r:next(), r:next()
local dependency_ids = r:list()
redis.call('ZADD', K.deferred(origin), now_int, id)
for _, dep_id in ipairs(dependency_ids) do
  redis.call('SADD', K.dependents(dep_id), id)
  redis.call('SADD', K.dependencies(id), dep_id)
end
return #dependency_ids
