-- acquire_or_refresh_lock.lua: take a lock that is free, or extend one this owner holds (RQ 2.12's
-- rq.scripts.acquire_or_refresh_lock). Called by rqfast.scripts.acquire_or_refresh_lock().
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix (see _common.lua; unused: the caller names the lock key)
-- ARGV[2] lock key
-- ARGV[3] owner token
-- ARGV[4] TTL in seconds
-- Returns: 1 acquired, 2 refreshed, 0 held by another owner (left untouched).

local lock, owner, ttl = ARGV[2], ARGV[3], ARGV[4]
local holder = redis.call('GET', lock)
if not holder then
  redis.call('SET', lock, owner, 'EX', ttl)
  return 1
elseif holder == owner then
  redis.call('EXPIRE', lock, ttl)
  return 2
end
return 0
