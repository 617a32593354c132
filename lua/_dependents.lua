-- _dependents.lua: releasing a job's dependents (RQ's Queue.enqueue_dependents).
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _expire.lua
--@include _events.lua
--@include _lanes.lua
--@include _rate_limit.lua

-- The server's clock as an integer epoch, for the callers that get no `now` of that kind.
local function epoch_now()
  return tonumber(redis.call('TIME')[1])
end

-- True when a dependent may run now that `parent_id` ended with `parent_status`: the parent is
-- not canceled or stopped, failed only with allow_dependency_failures, and every other dependency
-- is finished (or failed, when allowed) or gone. `exclude` (or nil) is left out of every check,
-- the parent too when it is the one excluded. RQ's Job.dependencies_are_met.
local function dependencies_met(dependent_id, allow_failure, parent_id, parent_status, exclude)
  if parent_id ~= exclude then
    if parent_status == 'canceled' or parent_status == 'stopped' then return false end
    if parent_status == 'failed' and not allow_failure then return false end
  end
  for _, dep_id in ipairs(redis.call('SMEMBERS', K.dependencies(dependent_id))) do
    if dep_id ~= parent_id and dep_id ~= exclude then
      local status = redis.call('HGET', K.job(dep_id), 'status')
      if status and status ~= 'finished' and not (allow_failure and status == 'failed') then
        return false
      end
    end
  end
  return true
end

-- Enqueues the deferred dependents of `parent_id` whose dependencies are now met (RQ's
-- Queue.enqueue_dependents): out of the deferred registry, status queued, pushed onto their own
-- queue (at the front with enqueue_at_front). `exclude` (or nil): see dependencies_met. With `park`,
-- each is moved into its queue's ready registry instead, status ready_to_enqueue, to be pushed by
-- enqueue_ready (RQ 3.0's Queue.move_dependents_to_ready).
-- Returns how many were released, true when `parent_id` had no dependents set, and the released
-- ones as a flat list {origin, id, origin, id, ...}.
local function release_dependents(parent_id, parent_status, now_text, exclude, park)
  local dependents_key = K.dependents(parent_id)
  local dependent_ids = redis.call('SMEMBERS', dependents_key)
  if #dependent_ids == 0 then return 0, true, {} end  -- (and no dependents set: an empty set is no key)
  local released, pairs_out = {}, {}
  for _, dep_id in ipairs(dependent_ids) do
    local key = K.job(dep_id)
    local data, status, origin, allow, at_front, ttl, rl_key, rl_concurrency, priority, events = unpack(redis.call(
      'HMGET', key, 'data', 'status', 'origin', 'allow_dependency_failures', 'enqueue_at_front', 'ttl',
      'rate_limit_key', 'rate_limit_concurrency', 'priority', 'events'))
    local allow_failure = allow == '1'
    if data and status ~= 'canceled' and dependencies_met(dep_id, allow_failure, parent_id, parent_status, exclude) then
      origin = origin or ''
      redis.call('ZREM', K.deferred(origin), dep_id)
      expire_job_keys(dep_id, ttl)
      if park then
        redis.call('HSET', key, 'status', 'ready_to_enqueue')
        redis.call('ZADD', K.ready(origin), epoch_now(), dep_id)
      elseif rl_key and rl_key ~= '' then  -- RQ 3.0 rate limit: waits for a slot (see rate_limit_wait)
        redis.call('SADD', K.queues, K.queue(origin))
        rate_limit_wait(dep_id, rl_key, rl_concurrency, epoch_now(), now_text)
      else
        redis.call('HSET', key, 'status', 'queued', 'enqueued_at', now_text)
        push_job(origin, dep_id, at_front == '1', priority)
        job_event(events, origin, 'queued', dep_id)
      end
      released[#released + 1] = dep_id
      pairs_out[#pairs_out + 1] = origin
      pairs_out[#pairs_out + 1] = dep_id
    end
  end
  if #released == #dependent_ids then
    redis.call('DEL', dependents_key)
  elseif #released > 0 then
    redis.call('SREM', dependents_key, unpack(released))
  end
  return #released, false, pairs_out
end
