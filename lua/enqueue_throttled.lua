-- enqueue_throttled.lua: one enqueue with throttle=(key, ttl), in one call: while <prefix>throttle:<key>
-- exists (a job was enqueued under the key less than ttl ago), nothing is written and the holder is
-- returned; else the key is set to the new job's id for ttl and enqueue_jobs.lua stores the job as a
-- plain enqueue would. Called by rqfast.scripts.enqueue_throttled() for Queue.enqueue*(throttle=...).
--
-- This part ends in a call of enqueue_jobs() (lua/_enqueue.lua, the work of enqueue_jobs.lua) when it
-- does not return first: that call stores the job (its reply is this script's).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV: enqueue_jobs.lua's ARGV with one record (group ""), then 2 more:
--   key     the throttle key (<prefix>throttle:<key> holds the id of the job that opened the window)
--   ttl_ms  the window, in milliseconds
-- Returns: enqueue_jobs.lua's reply ({status}) when the job was stored; {"throttled", holder id,
--   holder's job hash (flat HGETALL; empty when it has been deleted since)} when the key is held.

--@include _common.lua
--@include _enqueue.lua

do
  local n = #ARGV
  local throttle_key, ttl_ms = K.throttle(ARGV[n - 1]), ARGV[n]
  local holder = redis.call('GET', throttle_key)
  if holder then return {'throttled', holder, redis.call('HGETALL', K.job(holder))} end
  redis.call('SET', throttle_key, ARGV[7], 'PX', ttl_ms)
end
return enqueue_jobs()
