-- schedule_jobs.lua: one scheduler tick for all its queues, as RQ 2.12's RQScheduler does it over
-- several round trips: take or refresh each queue's scheduler lock (RQ's protocol, so an RQ
-- scheduler and an rqfast one never hold the same queue), heartbeat the scheduler hash, and move
-- the due jobs of every queue whose lock it holds from the scheduled registry onto the queue.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] scheduler name (the lock value), ARGV[3] lock and hash TTL (s),
-- ARGV[4] now as UTC text (enqueued_at), ARGV[5] now as epoch (due up to this score; a float moves
-- jobs scheduled at a fraction of a second, as a window rate limit plans them),
-- ARGV[6] at most this many jobs per queue, ARGV[7] "1" to acquire free locks (else only locks
-- already held count), ARGV[8] "1" to move due jobs, ARGV[9] "1" to release the locks held at the
-- end (RQ's release_locks), "2" to release them and delete the scheduler hash (stop), "0" not to,
-- ARGV[10] n hash fields (written with the TTL unless releasing; none: the hash is not written),
-- then field, value, ...; then n queues, queue names...
-- Called for a whole tick, and for each of RQ's steps alone (acquire_locks, heartbeat, save,
-- enqueue_scheduled_jobs, release_locks, stop: rqfast/scheduler.py).
-- Returns: per queue, flat: lock state (1 acquired now, 2 held already, 0 held by another
--   scheduler or free and not taken), number of jobs moved; then, when moving, the earliest score
--   left in the scheduled registries of the queues held ("" for none: the scheduler sleeps until then).

--@include _common.lua
--@include _argv.lua
--@include _expire.lua
--@include _events.lua
--@include _lanes.lua
--@include _rate_limit.lua

local r = argv_reader(2)
local name, ttl, now_text, due = r:next(), r:next(), r:next(), r:next()
local now_int = math.floor(tonumber(due))
local limit = tonumber(r:next())
local acquire, move = r:next() == '1', r:next() == '1'
local release = r:next()
local fields = r:list(2)
local queues = r:list()

local function lock_key(q) return PREFIX .. 'scheduler-lock:' .. q end
local scheduler_key = PREFIX .. 'scheduler:' .. name

-- RQ's ACQUIRE_OR_REFRESH_LOCK_SCRIPT, and "held" without acquiring.
local function take_lock(q)
  local holder = redis.call('GET', lock_key(q))
  if holder == name then
    if acquire then redis.call('EXPIRE', lock_key(q), ttl) end
    return 2
  end
  if not holder and acquire then
    redis.call('SET', lock_key(q), name, 'EX', ttl)
    return 1
  end
  return 0
end

-- RQ's Queue._enqueue_job for each due id (at the front with enqueue_at_front, or with
-- enqueue_at_front_on_retry once the job has run); ids without a job hash are only removed.
local function move_due(q)
  local scheduled = K.scheduled(q)
  local ids = redis.call('ZRANGEBYSCORE', scheduled, 0, due, 'LIMIT', 0, limit)
  local moved = 0
  for _, id in ipairs(ids) do
    local key = K.job(id)
    local job = redis.call('HMGET', key, 'data', 'enqueue_at_front', 'enqueue_at_front_on_retry', 'ended_at', 'ttl',
      'rate_limit_key', 'rate_limit_concurrency', 'priority', 'events')
    local at_front = job[2] == '1' or (job[3] == '1' and job[4] ~= false and job[4] ~= '')
    if job[1] and job[6] and job[6] ~= '' then  -- RQ 3.0 rate limit: waits for a slot, as RQ 3.0's scheduler
      -- promoted at the front when due there (a retry with enqueue_at_front), noted on the job as 3.0 does
      if at_front and job[2] ~= '1' then redis.call('HSET', key, 'enqueue_at_front', '1') end
      expire_job_keys(id, job[5])
      local promoted = rate_limit_wait(id, job[6], job[7], now_int, now_text)
      job_event(job[9], q, promoted and 'queued' or 'rate_limited', id)
      moved = moved + 1
    elseif job[1] then
      redis.call('HSET', key, 'status', 'queued', 'enqueued_at', now_text)
      expire_job_keys(id, job[5])
      push_job(q, id, at_front, job[8])
      job_event(job[9], q, 'queued', id)  -- rqfast's events (a job enqueued with Queue(events=...))
      moved = moved + 1
    end
    redis.call('ZREM', scheduled, id)
  end
  return moved
end

local out, next_due = {}, nil
for _, q in ipairs(queues) do
  local state = take_lock(q)
  local moved = 0
  if state > 0 and move then
    moved = move_due(q)
    local first = redis.call('ZRANGE', K.scheduled(q), 0, 0, 'WITHSCORES')
    if #first > 0 and (not next_due or tonumber(first[2]) < next_due) then next_due = tonumber(first[2]) end
  end
  if state > 0 and release ~= '0' then redis.call('DEL', lock_key(q)) end
  out[#out + 1] = state
  out[#out + 1] = moved
end

if release == '2' then
  redis.call('DEL', scheduler_key)
elseif release == '0' and #fields > 0 then
  redis.call('HSET', scheduler_key, unpack(fields))
  redis.call('EXPIRE', scheduler_key, ttl)
end
if move then out[#out + 1] = next_due and string.format('%.6f', next_due) or '' end
return out
