-- add_failed_job.lua: put a job into its failed registry by hand (RQ's FailedJobRegistry.add): save
-- its hash (with the exception text the caller gives), set the TTL of its keys, and ZADD it.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] job id, ARGV[3] the registry's queue name, ARGV[4] score (expiry epoch, or
-- a negative number for never), ARGV[5] ttl in seconds (positive: EXPIRE the job's keys; else they
-- are left as they are), ARGV[6] n fields, then field, value, ... (the job hash without meta and result)
-- Returns: 1 when the job was new in the registry, else 0.

--@include _common.lua
--@include _argv.lua
--@include _expire.lua

local r = argv_reader(2)
local id, queue, score, ttl = r:next(), r:next(), r:next(), r:next()
local fields = r:list(2)
if #fields > 0 then redis.call('HSET', K.job(id), unpack(fields)) end
expire_job_keys(id, ttl)
return redis.call('ZADD', K.failed(queue), score, id)
