-- finish_job.lua: record how a job ended and, in the same call, claim the worker's next job.
-- Success, failure, stop, retry and repeat all come through here: the caller (rqfast/engine.py)
-- decides what the outcome means; this script makes every write of it atomically, the way
-- RQ 2.12's worker writes them over ~10 round trips.
--
-- KEYS: none
-- ARGV[1] prefix
-- ARGV[2] worker name ("" for a sync run: no worker hash, no execution)
-- ARGV[3] now as UTC text, ARGV[4] now as float epoch, ARGV[5] now as integer epoch
-- ARGV[6] job id, ARGV[7] its queue (origin), ARGV[8] execution id ("" for none)
-- ARGV[9] registry to add the job to: "finished", "failed" or ""
-- ARGV[10] that registry's score ("+inf" allowed)
-- ARGV[11] job key TTL: "" leave, "delete" delete the job (result_ttl 0), "persist", or seconds
-- ARGV[12] release dependents as the parent's status: "finished", "failed" or "" (none)
-- ARGV[13] put the job back: "" no, "queue", "front" (LPUSH) or "schedule"
-- ARGV[14] the scheduled registry score for "schedule"
-- ARGV[15] worker counter to increment: "successful_job_count", "failed_job_count" or ""
-- ARGV[16] working time in seconds (HINCRBYFLOAT total_working_time)
-- ARGV[17] result stream TTL: "" leave, "-1" PERSIST, or seconds to EXPIRE
-- ARGV[18] n job hash fields, then field, value, ...   (HSET on the job)
-- then n result stream fields, then field, value, ...  (XADD MAXLEN ~ 10; n = 0 writes no entry)
-- then: claim next ("1"/"0"), job monitoring interval, worker idle TTL, new execution id,
--   n queues, queue names...
-- Returns: the claim_job.lua answer for the next job, or {false, false, false, {}, 0} when no
-- claim was asked.

local r = argv_reader(2)
local w = r.next()
local c = {now_text = r.next(), now_float = r.next(), now_int = tonumber(r.next())}
local id, origin, x = r.next(), r.next(), r.next()
local registry, registry_score, job_ttl = r.next(), r.next(), r.next()
local release_as, put_back, schedule_score = r.next(), r.next(), r.next()
local counter, working_time, stream_ttl = r.next(), r.next(), r.next()
local fields = r.list(2)
local stream = r.list(2)
local claim, interval, idle_ttl, next_x = r.next() == '1', tonumber(r.next()), r.next(), r.next()
local queues = r.list()
c.interval = interval

local key = K.job(id)
-- A job canceled (or stopped) while it ran releases no dependents, as in RQ, which reads the
-- parent's status before its own writes.
local status_before = redis.call('HGET', key, 'status')
local exists = status_before ~= false or redis.call('EXISTS', key) == 1
if status_before == 'canceled' or status_before == 'stopped' then
  if release_as ~= '' then release_as = status_before end
end

-- The execution ends: out of the started registry and the executions set.
if x ~= '' then
  redis.call('DEL', K.execution(id, x))
  redis.call('ZREM', K.started(origin), id .. ':' .. x)
  redis.call('ZREM', K.executions(id), x)
end
if w ~= '' then
  local wkey = K.worker(w)
  if counter ~= '' then redis.call('HINCRBY', wkey, counter, 1) end
  redis.call('HINCRBYFLOAT', wkey, 'total_working_time', working_time)
  -- current_job is replaced by the next claim, or HDELed by set_worker_idle below
end

-- A job deleted while it ran (job.delete(), or its TTL) is not brought back to life.
if exists then
  if #fields > 0 then redis.call('HSET', key, unpack(fields)) end
  if #stream > 0 then
    local results = K.results(id)
    redis.call('XADD', results, 'MAXLEN', '~', 10, '*', unpack(stream))
    if stream_ttl == '-1' then
      redis.call('PERSIST', results)
    elseif stream_ttl ~= '' then
      redis.call('EXPIRE', results, stream_ttl)
    end
  end
  if registry == 'finished' then
    redis.call('ZADD', K.finished(origin), registry_score, id)
  elseif registry == 'failed' then
    redis.call('ZADD', K.failed(origin), registry_score, id)
  end
  if release_as ~= '' then release_dependents(id, release_as, c.now_text) end
  if put_back == 'queue' or put_back == 'front' then
    redis.call('HSET', key, 'status', 'queued', 'enqueued_at', c.now_text)
    push_job(origin, id, put_back == 'front')
  elseif put_back == 'schedule' then
    redis.call('SADD', K.queues, K.queue(origin))
    redis.call('HSET', key, 'status', 'scheduled')
    redis.call('ZADD', K.scheduled(origin), schedule_score, id)
  end
  if job_ttl == 'persist' then
    redis.call('PERSIST', key)
  elseif job_ttl == 'delete' then
    redis.call('DEL', key, K.dependents(id), K.dependencies(id), K.executions(id))
  elseif job_ttl ~= '' then
    expire_job_keys(id, job_ttl)
  end
end

if not claim then
  set_worker_idle(w, c, idle_ttl)
  return {false, false, false, {}, 0}
end
local next_claim = claim_next(queues, w, next_x, c)
if not next_claim[1] then set_worker_idle(w, c, idle_ttl) end
return next_claim
