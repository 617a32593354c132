-- clean_rate_limits.lua: RQ 3.0's rate-limit upkeep alone (clean_registries.lua's whole pass ends with it too) (RateLimitRegistry.cleanup for every key in
-- <prefix>rl-keys), one call per maintenance pass: free the slots of jobs that no longer hold one
-- (missing, or neither queued nor started, and no live execution: see rate_limit_release_stale),
-- fill the free slots with waiting jobs, and drop a key whose sets are both empty (its config hash
-- too, and its name from <prefix>rl-keys).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] now as UTC text (a promoted job's enqueued_at), ARGV[3] now as integer epoch
-- Returns: {keys seen, slots freed, jobs promoted, keys dropped}

--@include _rate_limit_sweep.lua

local r = sweep_rate_limits(tonumber(ARGV[3]), ARGV[2])
return {r.seen, r.freed, r.promoted, r.dropped}
