-- clean_groups.lua: RQ's group upkeep in one call (Group.cleanup, Group.all, Group.clean_registries;
-- see clean_groups_of in _groups.lua, which the maintenance pass shares).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] "1" to SREM the job ids whose hash is gone, ARGV[3] "1" to drop from
-- <prefix>groups the groups whose set no longer exists, ARGV[4] n group names, names... (n = 0:
-- every member of <prefix>groups)
-- Returns: {names of the groups whose set exists, job ids pruned, groups dropped}

--@include _argv.lua
--@include _groups.lua

local r = argv_reader(2)
local prune, drop = r:next() == '1', r:next() == '1'
return clean_groups_of(r:list(), prune, drop)
