-- set_progress.lua: Job.set_progress() for a job enqueued with rqfast's events (Queue(events=...)):
-- its `progress` field (rqfast's own, JSON text) and a `progress` event on its queue's stream
-- (job_event in _events.lua), in one call. Jobs without events keep set_progress's plain HSET.
-- Called by rqfast.scripts.set_progress().
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] job id, ARGV[3] the value as JSON text, ARGV[4] the job's queue (origin),
-- ARGV[5] the job's `events` field (the stream's cap)
-- Returns: 1

--@include _common.lua
--@include _events.lua

local id, value, queue, events = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local key = K.job(id)
redis.call('HSET', key, 'progress', value)
job_event(events, queue, 'progress', id, redis.call('HGET', key, 'worker_name') or '', value)
return 1
