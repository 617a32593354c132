-- _expire.lua: a job's TTL on its hash and dependency sets (RQ's Job.cleanup(ttl)).
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua

-- Sets the TTL of a job's hash and its two dependency sets, as RQ's Job.cleanup(ttl) does:
-- a positive ttl EXPIREs them; 0, -1 and nil leave them alone. `no_dependents`: the caller found
-- no dependents set in this call; `no_dependencies`: the job's hash names no dependency (no
-- dependency_ids field, which RQ and rqfast write with its dependencies set): that EXPIRE would be a
-- no-op, and is left out.
local function expire_job_keys(id, ttl, no_dependents, no_dependencies)
  local seconds = num(ttl)
  if seconds and seconds > 0 then
    ttl = text(seconds)
    redis.call('EXPIRE', K.job(id), ttl)
    if not no_dependents then redis.call('EXPIRE', K.dependents(id), ttl) end
    if not no_dependencies then redis.call('EXPIRE', K.dependencies(id), ttl) end
  end
end
