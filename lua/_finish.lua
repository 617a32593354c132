-- _finish.lua: the work of finish_job.lua as a function, finish_one(args, offset): it records one
-- outcome and answers as finish_job.lua does, reading finish_job.lua's arguments (see its header) from
-- `args`, where its ARGV[i] is args[i + offset] for i >= 2 (ARGV[1], the prefix, is the caller's).
-- finish_job.lua is finish_one(ARGV, 0); finish_jobs.lua calls it once per outcome in its ARGV.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _expire.lua
--@include _events.lua
--@include _lanes.lua
--@include _rate_limit_release.lua
--@include _dependents.lua
--@include _claim.lua

local function finish_one(args, offset)
  -- (positions read directly, not with argv_reader: this runs once per job, once per outcome in a batch)
  local at = 2 + offset
  local w, now_text, now_float, now_int, id, origin, x, fence = unpack(args, at, at + 7)
  at = at + 8
  local registry, registry_score, job_ttl, release_as, put_back, schedule_score = unpack(args, at, at + 5)
  at = at + 6
  local counter, working_time, stream_ttl, maxlen = unpack(args, at, at + 3)
  at = at + 4
  local fields_at, fields_n = at + 1, 2 * num(args[at])  -- (HSET and XADD unpack them from args: no copy)
  at = fields_at + fields_n
  local stream_at, stream_n = at + 1, 2 * num(args[at])
  at = stream_at + stream_n
  local claim, interval, grace, max_dropped, max_id_len, window_guard, idle_ttl, next_x = unpack(args, at, at + 7)
  local c = {now_text = now_text, now_float = now_float, now_int = tonumber(now_int), interval = num(interval),
    grace = num(grace), max_dropped = num(max_dropped), max_id_len = num(max_id_len), window_guard = num(window_guard)}
  claim = claim == '1'
  at = at + 8
  local n_queues = num(args[at])
  local queues = {unpack(args, at + 1, at + n_queues)}
  at = at + n_queues
  local event, event_detail = args[at + 1], args[at + 2]
  event = event or ''

  local key = K.job(id)
  -- A job canceled (or stopped) while it ran releases no dependents, as in RQ, which reads the
  -- parent's status before its own writes.
  local read = redis.call('HMGET', key, 'status', 'rate_limit_key', 'priority', 'events', 'dependency_ids')
  local status_before = read[1]
  local exists = status_before ~= false or redis.call('EXISTS', key) == 1
  local rl_key = rate_limit_key_of(id, exists, x, read[2])  -- RQ 3.0 rate limit: the slot is released below
  -- An abandoned job is recorded only if no one settled it meanwhile: its member was still there.
  if fence ~= '' then
    local removed = redis.call('ZREM', K.started(origin), fence) == 1
    if not (removed and status_before == 'started') then return {false, false, false, {}, 0, {}, 0} end
    local fenced_x = string.match(fence, ':([^:]*)$')
    if fenced_x and fenced_x ~= '' then end_execution(id, origin, fenced_x) end
  end

  -- The answer once the outcome is written (or fenced off): the next claim or none, 8th c.plain (see
  -- claim_job.lua). The ended execution leaves the worker's executions index after the next joined it.
  local function answer(recorded)
    c.busy = w ~= '' and x ~= ''
    local reply = claim and claim_next(queues, w, next_x, c) or {false, false, false, {}, 0, {}}
    if x ~= '' then forget_worker_execution(id, x, w) end
    if not reply[1] then set_worker_idle(w, c, idle_ttl) end  -- (no claim asked: reply[1] is false)
    reply[7], reply[8] = recorded, c.plain and not reply[1] and 1 or 0
    return reply
  end

  -- The owner's fence: its execution hash, deleted here as the execution ends (DEL answers 0 when it
  -- was gone: nothing is written then, that DEL included).
  local x_deleted = false
  if fence == '' and x ~= '' then
    if redis.call('DEL', K.execution(id, x)) == 0 then
      -- Sent again after a lost reply (same new execution id): the first call recorded the outcome and
      -- may have claimed the next job; that claim is the answer.
      local resumed = claim and resumed_claim(w, next_x)
      if resumed then
        resumed[7] = 0
        return resumed
      end
      return answer(0)
    end
    x_deleted = true
  end
  if status_before == 'canceled' or status_before == 'stopped' then
    if release_as ~= '' then release_as = status_before end
  end

  -- The execution ends: out of the started registry and the executions set.
  if x ~= '' then end_execution(id, origin, x, x_deleted) end  -- (its index member: see answer)
  if w ~= '' then
    local wkey = K.worker(w)
    if counter ~= '' then redis.call('HINCRBY', wkey, counter, '1') end
    redis.call('HINCRBYFLOAT', wkey, 'total_working_time', working_time)
    -- current_job is replaced by the next claim, or HDELed by set_worker_idle below
  end

  -- A job deleted while it ran (job.delete(), or its TTL) is not brought back to life.
  if exists then
    if fields_n > 0 then redis.call('HSET', key, unpack(args, fields_at, fields_at + fields_n - 1)) end
    if event ~= '' and tonumber(read[4]) then  -- (the job's worker: read only for an event with no worker)
      job_event(read[4], origin, event, id, w ~= '' and w or redis.call('HGET', key, 'worker_name'), event_detail)
    end
    if stream_n > 0 then
      local results = K.results(id)
      redis.call('XADD', results, 'MAXLEN', '~', maxlen, '*', unpack(args, stream_at, stream_at + stream_n - 1))
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
    local released, no_dependents = 0, false
    if release_as ~= '' then released, no_dependents = release_dependents(id, release_as, c.now_text) end
    if put_back == 'queue' or put_back == 'front' then
      redis.call('HSET', key, 'status', 'queued', 'enqueued_at', c.now_text)
      push_job(origin, id, put_back == 'front', read[3])  -- (back into its priority lane, if it has one)
    elseif put_back == 'schedule' then
      redis.call('SADD', K.queues, K.queue(origin))
      redis.call('HSET', key, 'status', 'scheduled')
      redis.call('ZADD', K.scheduled(origin), schedule_score, id)
    end
    if job_ttl == 'persist' then
      redis.call('PERSIST', key)
    elseif job_ttl == 'delete' then  -- as RQ's Job.delete: out of its group too
      local group = redis.call('HGET', key, 'group_id')
      if group and group ~= '' then redis.call('SREM', K.group(group), id) end
      redis.call('DEL', key, K.dependents(id), K.dependencies(id), K.executions(id))
    elseif job_ttl ~= '' then
      expire_job_keys(id, job_ttl, no_dependents, not read[5] or read[5] == '')
    end
  end

  if rl_key then rate_limit_release(id, rl_key, c.now_int, c.now_text) end  -- (RQ 3.0's rate limits)
  if fence ~= '' then return {false, false, false, {}, 0, {}, 1} end
  return answer(1)
end
