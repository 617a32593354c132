-- _rate_limit_release.lua: RQ 3.0's concurrency rate limits: a job's slot freed and the waiting jobs
-- promoted (the finish, cancel, delete); a job's rate-limit key.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _rate_limit.lua

-- A key's concurrency as registered in K.rl (the last registrant's); 0 when unset.
local function rate_limit_concurrency(rl_key)
  return tonumber(redis.call('HGET', K.rl(rl_key), 'concurrency')) or 0
end

-- A job's rate-limit key (false when it has none): read before an outcome that may delete the hash.
-- With `exists` false (the job was deleted while it ran) and an execution id, the key is read from
-- the execution hash, where delete_job.lua leaves it (see rate_limit_mark_executions).
-- `stored`: the field as the caller read it already from the job hash (then it is not read again).
local function rate_limit_key_of(id, exists, x, stored)
  local rl_key
  if exists ~= false and stored ~= nil then
    rl_key = stored
  elseif exists ~= false then
    rl_key = redis.call('HGET', K.job(id), 'rate_limit_key')
  elseif x and x ~= '' then
    rl_key = redis.call('HGET', K.execution(id, x), 'rate_limit_key')
  end
  if not rl_key or rl_key == '' then return false end
  return rl_key
end

-- A rate-limited job deleted while it runs: its live executions (RQ 3.0 keeps them, and so its slot)
-- note its key, so the finish of each still frees the slot though the job hash is gone. RQ 3.0's
-- readers ignore the extra field.
local function rate_limit_mark_executions(id, rl_key)
  for _, x in ipairs(redis.call('ZRANGE', K.executions(id), 0, -1)) do
    if redis.call('EXISTS', K.execution(id, x)) == 1 then
      redis.call('HSET', K.execution(id, x), 'rate_limit_key', rl_key)
    end
  end
end

-- After a job's outcome is written: unless it is queued or started again (an immediate retry or
-- repeat keeps its slot), its slot is freed and the waiters promoted, as RQ 3.0's release_slot
-- does after the worker's outcome transaction. `rl_key` false (no rate limit): nothing.
-- Returns the promoted ids.
local function rate_limit_release(id, rl_key, now_int, now_text)
  if not rl_key then return {} end
  local status = redis.call('HGET', K.job(id), 'status')
  if status == 'queued' or status == 'started' then return {} end
  redis.call('ZREM', K.rl_allowed(rl_key), id)
  return rate_limit_promote(rl_key, rate_limit_concurrency(rl_key), now_int, now_text)
end

-- Frees the slot of job `id` when it no longer needs it (not queued or started, and no live
-- execution: a job canceled or deleted while it runs keeps its slot until that execution ends),
-- then fills the free slots. RQ 3.0's RELEASE_STALE_AND_ENQUEUE_SCRIPT (cancel, delete, upkeep).
-- Returns 1 when a slot was freed, 0 if not; and the promoted ids.
local function rate_limit_release_stale(id, rl_key, now_int, now_text)
  local status = redis.call('HGET', K.job(id), 'status')
  if status == 'queued' or status == 'started' then return 0, {} end
  if redis.call('ZCOUNT', K.executions(id), '(' .. now_int, '+inf') > 0 then return 0, {} end
  if redis.call('ZREM', K.rl_allowed(rl_key), id) == 0 then return 0, {} end
  return 1, rate_limit_promote(rl_key, rate_limit_concurrency(rl_key), now_int, now_text)
end

-- A job canceled or deleted (RQ 3.0's RateLimitRegistry.cancel): out of the waiting set, and its slot
-- freed unless it still runs (see rate_limit_release_stale). `rl_key` false: nothing.
-- Returns the promoted ids.
local function rate_limit_forget(id, rl_key, now_int, now_text)
  if not rl_key then return {} end
  redis.call('ZREM', K.rl_waiting(rl_key), id)
  local _, promoted = rate_limit_release_stale(id, rl_key, now_int, now_text)
  return promoted
end
