-- expire_job.lua: set the TTL of a job's hash and its two dependency sets together (RQ's
-- Job.cleanup(ttl) for a positive ttl).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] job id, ARGV[3] ttl in seconds (positive; anything else changes nothing)
-- Returns: 1 when the job hash exists, else 0.

--@include _common.lua
--@include _expire.lua

expire_job_keys(ARGV[2], ARGV[3])
return redis.call('EXISTS', K.job(ARGV[2]))
