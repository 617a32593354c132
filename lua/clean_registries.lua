-- clean_registries.lua: one maintenance pass over a worker's queues, RQ 2.12's clean_registries
-- (section 10 of the layout) in one call: expired finished and failed entries, abandoned jobs
-- (a started-registry entry whose heartbeat deadline has passed: failed with AbandonedJobError,
-- or retried while it has retries left), ids stranded in the intermediate list (put back at the
-- head of their queue once seen there for `stuck_after` seconds; RQ fails them instead), and dead
-- workers in the per-queue worker set. Each queue is done under RQ's rq:clean_registries:<q>
-- lock, so a queue an RQ worker is cleaning is left alone.
--
-- KEYS: none
-- ARGV[1] prefix, ARGV[2] now as UTC text, ARGV[3] now as float epoch, ARGV[4] now as integer
-- epoch, ARGV[5] expiry cutoff (integer epoch: entries scored at or below it have expired; now,
-- unless a caller pins another time), ARGV[6] exc_string of the abandoned jobs' result entry
-- (already base64(zlib(text)): Lua has neither), ARGV[7] default failure TTL (s),
-- ARGV[8] "all" for the whole pass under the lock, "started" for the abandoned jobs only and
-- without the lock (RQ's StartedJobRegistry.cleanup), ARGV[9] lock TTL (s), ARGV[10] seconds an
-- id must sit in an intermediate list before it is put back, ARGV[11] TTL (s) of the first-seen
-- marker, ARGV[12] n queues, queue names...
-- Returns: {handled abandoned jobs (flat: queue, id, "failed" or "retried", 1 if the job has a
--   failure callback else 0), rescued intermediate ids (flat: queue, id), {finished entries
--   expired, failed entries expired, intermediate ids dropped (no job hash, or not queued),
--   dead workers removed}, queues skipped because their lock was held}

local r = argv_reader(2)
local now_text, now_float_text, now_int = r.next(), r.next(), tonumber(r.next())
local now_float = tonumber(now_float_text)
local cutoff, exc_string, default_failure_ttl = r.next(), r.next(), tonumber(r.next())
local whole = r.next() == 'all'
local lock_ttl, stuck_after, first_seen_ttl = r.next(), tonumber(r.next()), r.next()
local queues = r.list()

local function lock_key(q) return PREFIX .. 'clean_registries:' .. q end
local function first_seen_key(q, id) return K.intermediate(q) .. ':first_seen:' .. id end
local function job_id_of(member) return string.match(member, '^([^:]*)') end

local handled, rescued, locked = {}, {}, {}
local stats = {0, 0, 0, 0}

-- RQ's Job.retry: one retry fewer, then back on the queue, or scheduled after its interval
-- (intervals[len - retries_left], read before the decrement).
local function retry(q, id, retries, intervals_json, at_front_on_retry, ttl)
  local key = K.job(id)
  local interval = 0
  if intervals_json and intervals_json ~= '' then
    local intervals = cjson.decode(intervals_json)
    if #intervals > 0 then interval = tonumber(intervals[math.max(#intervals - retries, 0) + 1]) or 0 end
  end
  redis.call('HSET', key, 'retries_left', retries - 1)
  if interval > 0 then
    redis.call('SADD', K.queues, K.queue(q))
    redis.call('HSET', key, 'status', 'scheduled')
    redis.call('ZADD', K.scheduled(q), now_int + interval, id)
  else
    redis.call('HSET', key, 'status', 'queued', 'enqueued_at', now_text)
    push_job(q, id, at_front_on_retry == '1')
  end
  expire_job_keys(id, ttl)
end

-- RQ's abandoned-job failure: failed registry, hash TTL, a type 2 result entry written by no
-- worker, then the dependents that allow a failed dependency.
local function fail(q, id, failure_ttl)
  local key = K.job(id)
  local ttl = tonumber(failure_ttl)
  local registry_ttl = ttl or default_failure_ttl
  redis.call('HSET', key, 'status', 'failed')
  redis.call('ZADD', K.failed(q), registry_ttl < 0 and registry_ttl or now_int + registry_ttl, id)
  expire_job_keys(id, registry_ttl)
  local results = K.results(id)
  redis.call('XADD', results, 'MAXLEN', '~', 10, '*', 'type', 2, 'worker_name', '', 'exc_string', exc_string)
  if ttl == -1 then
    redis.call('PERSIST', results)
  elseif ttl then
    redis.call('EXPIRE', results, ttl)
  end
  release_dependents(id, 'failed', now_text)
end

local function clean_started(q)
  local started = K.started(q)
  local seen = {}
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', started, 0, cutoff)) do
    local id = job_id_of(member)
    local job = redis.call('HMGET', K.job(id), 'data', 'status', 'retries_left', 'retry_intervals',
      'enqueue_at_front_on_retry', 'failure_ttl', 'ttl', 'failure_callback_name')
    -- Only a job still marked started was abandoned; any other status was settled since.
    if job[1] and job[2] == 'started' and not seen[id] then
      seen[id] = true
      local retries = tonumber(job[3])
      local outcome = 'failed'
      if retries and retries > 0 then
        retry(q, id, retries, job[4], job[5], job[7])
        outcome = 'retried'
      else
        fail(q, id, job[6])
      end
      local has_callback = (job[8] and job[8] ~= '') and 1 or 0
      for _, v in ipairs({q, id, outcome, has_callback}) do handled[#handled + 1] = v end
    end
  end
  redis.call('ZREMRANGEBYSCORE', started, 0, cutoff)
end

local function clean_workers(q)
  local set = K.workers_by_queue(q)
  for _, wkey in ipairs(redis.call('SMEMBERS', set)) do
    if redis.call('EXISTS', wkey) == 0 then
      redis.call('SREM', set, wkey)
      redis.call('SREM', K.workers, wkey)
      stats[4] = stats[4] + 1
    end
  end
end

-- An id popped into the intermediate list by a worker that died before it started the job.
local function clean_intermediate(q)
  local list = K.intermediate(q)
  local ids = redis.call('LRANGE', list, 0, -1)
  if #ids == 0 then return end
  local running = {}
  for _, member in ipairs(redis.call('ZRANGE', K.started(q), 0, -1)) do running[job_id_of(member)] = true end
  for _, id in ipairs(ids) do
    if not running[id] then
      local job = redis.call('HMGET', K.job(id), 'data', 'status')
      local marker = first_seen_key(q, id)
      if not job[1] then
        redis.call('LREM', list, 1, id)
        redis.call('DEL', marker)
        stats[3] = stats[3] + 1
      elseif not redis.call('SET', marker, now_float_text, 'NX', 'EX', first_seen_ttl) then
        local first_seen = tonumber(redis.call('GET', marker))
        if first_seen and now_float - first_seen > stuck_after then
          redis.call('LREM', list, 1, id)
          redis.call('DEL', marker)
          if job[2] == 'queued' then
            redis.call('LPUSH', K.queue(q), id)
            rescued[#rescued + 1] = q
            rescued[#rescued + 1] = id
          else
            stats[3] = stats[3] + 1
          end
        end
      end
    end
  end
end

for _, q in ipairs(queues) do
  if not whole then
    clean_started(q)
  elseif redis.call('SET', lock_key(q), 1, 'NX', 'EX', lock_ttl) then
    stats[1] = stats[1] + redis.call('ZREMRANGEBYSCORE', K.finished(q), 0, cutoff)
    clean_started(q)
    stats[2] = stats[2] + redis.call('ZREMRANGEBYSCORE', K.failed(q), 0, cutoff)
    clean_workers(q)
    clean_intermediate(q)
    redis.call('DEL', lock_key(q))
  else
    locked[#locked + 1] = q
  end
end
return {handled, rescued, stats, locked}
