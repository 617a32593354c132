-- rate_limit_slots.lua: RQ 3.0's RateLimitRegistry calls on one rate-limit key, each one atomic
-- state change (rqfast/rate_limit.py): fill its free slots, free a job's slot, or sweep the key.
-- Every promotion is _rate_limit.lua's rate_limit_promote (onto the job's queue, status queued).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] what:
--   "acquire"       fill the free slots, up to ARGV[6] concurrency (acquire_and_enqueue)
--   "release"       free ARGV[6] job's slot, then fill them at the registered concurrency
--                   (release_and_enqueue and release_slot: whatever the job's stored status)
--   "release_stale" free ARGV[6] job's slot only when it no longer holds one: neither queued nor
--                   started, and no live execution (release_stale_and_enqueue)
--   "cancel"        ARGV[6] job out of the waiting set, then "release_stale" (cancel)
--   "cleanup"       free every stale slot, fill, and drop the key when both its sets are empty (cleanup)
-- ARGV[3] the rate-limit key, ARGV[4] now as an integer epoch, ARGV[5] now as UTC text (a promoted
-- job's enqueued_at), ARGV[6] the concurrency ("acquire") or the job id (else; "" for "cleanup")
-- Returns: the promoted job ids, oldest first.

--@include _common.lua
--@include _rate_limit.lua
--@include _rate_limit_release.lua
--@include _rate_limit_sweep.lua

local what, rl_key, now_int, now_text, arg = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6]
if what == 'acquire' then
  return rate_limit_promote(rl_key, tonumber(arg), now_int, now_text)
elseif what == 'release' then
  redis.call('ZREM', K.rl_allowed(rl_key), arg)
  return rate_limit_promote(rl_key, rate_limit_concurrency(rl_key), now_int, now_text)
elseif what == 'release_stale' then
  local _, promoted = rate_limit_release_stale(arg, rl_key, now_int, now_text)
  return promoted
elseif what == 'cancel' then
  return rate_limit_forget(arg, rl_key, now_int, now_text)
elseif what == 'cleanup' then
  return sweep_rate_limit(rl_key, now_int, now_text, {seen = 0, freed = 0, promoted = 0, dropped = 0})
end
return redis.error_reply('rate_limit_slots: unknown operation ' .. tostring(what))
