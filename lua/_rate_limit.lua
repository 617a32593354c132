-- _rate_limit.lua: RQ 3.0's concurrency rate limits: a job waits for a slot, waiting jobs are promoted.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _lanes.lua

-- RQ 3.0's concurrency rate limits (rq/rate_limit.py). A job with a rate_limit_key holds one of its
-- key's `concurrency` slots (K.rl_allowed) from its promotion onto its queue until it ends; until
-- promoted it waits in K.rl_waiting, status rate_limited, on no queue. Jobs without a rate limit
-- never reach these functions (the finish script reads one field to know).

-- Fills the free slots of `rl_key` with its waiting jobs, oldest first: each joins the allowed set
-- (score now_int), goes onto its origin queue (at the front with enqueue_at_front) and becomes
-- queued with enqueued_at now_text. Popped ids without a hash, an origin or status rate_limited are
-- dropped. RQ 3.0's ACQUIRE_AND_ENQUEUE_SCRIPT, write for write. Returns the promoted ids.
local function rate_limit_promote(rl_key, concurrency, now_int, now_text)
  local allowed, waiting, promoted = K.rl_allowed(rl_key), K.rl_waiting(rl_key), {}
  while redis.call('ZCARD', allowed) < concurrency do
    local popped = redis.call('ZPOPMIN', waiting)
    if #popped == 0 then break end
    local id = popped[1]
    local f = redis.call('HMGET', K.job(id), 'origin', 'status', 'enqueue_at_front', 'priority')
    if f[1] and f[2] == 'rate_limited' then
      redis.call('ZADD', allowed, now_int, id)
      if f[3] == '1' then
        redis.call('LPUSH', K.queue(f[1]), id)
      else
        redis.call('RPUSH', K.queue(f[1]), id)
      end
      if f[4] then add_to_lanes(f[1], id, f[4], f[3] == '1') end
      redis.call('HSET', K.job(id), 'status', 'queued', 'enqueued_at', now_text)
      promoted[#promoted + 1] = id
    end
  end
  return promoted
end

-- A stored job that may run now (its enqueue, its dependencies met, its scheduled time come) but
-- carries a rate limit: its key registered with `concurrency` (the last registrant wins), status
-- rate_limited, waiting since now_int; then the free slots are filled. RQ 3.0's
-- Queue._enqueue_rate_limited_job after the job's own save. Returns true when `id` was promoted.
local function rate_limit_wait(id, rl_key, concurrency, now_int, now_text)
  redis.call('SADD', K.rl_keys, rl_key)
  redis.call('HSET', K.rl(rl_key), 'concurrency', concurrency)
  redis.call('HSET', K.job(id), 'status', 'rate_limited')
  redis.call('ZADD', K.rl_waiting(rl_key), now_int, id)
  for _, promoted in ipairs(rate_limit_promote(rl_key, tonumber(concurrency), now_int, now_text)) do
    if promoted == id then return true end
  end
  return false
end
