-- release_lock.lua: delete a lock only while this owner holds it (RQ 2.12's rq.scripts.release_lock;
-- a GET then DEL from the client could delete a lock another owner took in between).
-- Called by rqfast.scripts.release_lock().
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix (see _common.lua; unused: the caller names the lock key)
-- ARGV[2] lock key
-- ARGV[3] owner token
-- Returns: 1 deleted, 0 absent or held by another owner (left untouched).

if redis.call('GET', ARGV[2]) == ARGV[3] then
  return redis.call('DEL', ARGV[2])
end
return 0
