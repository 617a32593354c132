-- _ready.lua: enqueuing an entry of a ready registry (RQ 3.0's ReadyJobRegistry).
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _lanes.lua
--@include _rate_limit.lua

-- RQ 3.0's ReadyJobRegistry.enqueue_jobs for one entry of <prefix>ready:<q>: it leaves the registry,
-- and its job, if still ready_to_enqueue, is enqueued on q (status queued, enqueued_at now, at the
-- front with enqueue_at_front; a rate-limited one waits for a slot instead). Returns whether it was.
local function enqueue_ready(q, id, now_int, now_text)
  redis.call('ZREM', K.ready(q), id)
  local job = redis.call('HMGET', K.job(id), 'data', 'status', 'enqueue_at_front', 'rate_limit_key',
    'rate_limit_concurrency', 'priority')
  if not (job[1] and job[2] == 'ready_to_enqueue') then return false end
  if job[4] and job[4] ~= '' then
    redis.call('SADD', K.queues, K.queue(q))
    rate_limit_wait(id, job[4], job[5], now_int, now_text)
  else
    redis.call('HSET', K.job(id), 'status', 'queued', 'enqueued_at', now_text)
    push_job(q, id, job[3] == '1', job[6])
  end
  return true
end
