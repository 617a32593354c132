-- _groups.lua: RQ's group upkeep.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua

-- RQ's group upkeep (Group.cleanup, Group.all, Group.clean_registries) over the groups `names`
-- (every member of <prefix>groups when the list is empty): with `prune`, SREM the job ids whose
-- hash is gone; with `drop`, SREM from <prefix>groups each group whose set no longer exists (an
-- empty set is no key). Returns {names of the groups whose set exists, ids pruned, groups dropped}.
local function clean_groups_of(names, prune, drop)
  if #names == 0 then names = redis.call('SMEMBERS', K.groups) end
  local alive, pruned, dropped = {}, 0, 0
  for _, name in ipairs(names) do
    local key = K.group(name)
    if prune then
      for _, id in ipairs(redis.call('SMEMBERS', key)) do
        if redis.call('EXISTS', K.job(id)) == 0 then pruned = pruned + redis.call('SREM', key, id) end
      end
    end
    if redis.call('EXISTS', key) == 1 then
      alive[#alive + 1] = name
    elseif drop then
      dropped = dropped + redis.call('SREM', K.groups, name)
    end
  end
  return {alive, pruned, dropped}
end
