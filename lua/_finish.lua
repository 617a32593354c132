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

-- An outcome's shape (finish_job.lua's ARGV[10]): its constants and the claim's, each ended by a
-- newline, read once per server for each shape a worker sends (a function library keeps them; a
-- script reads it on every call), rather than as a dozen arguments per call: each argument costs the
-- server more to take in than to read from a kept table. Its fields: see finish_job.lua.
local outcome_shape = kept(function(text)
  local tokens, i = {}, 0
  for token in string.gmatch(text, '([^\n]*)\n') do tokens[#tokens + 1] = token end
  local function take(n)  -- the next n tokens
    i = i + n
    return unpack(tokens, i - n + 1, i)
  end
  local shape = {}
  shape.registry, shape.job_ttl, shape.release_as, shape.put_back, shape.counter = take(5)
  shape.stream_ttl, shape.maxlen, shape.event, shape.claim = take(4)
  shape.claim = shape.claim == '1'
  local interval, grace, max_dropped, max_id_len, window_guard = take(5)
  shape.interval, shape.grace, shape.max_dropped = tonumber(interval), tonumber(grace), tonumber(max_dropped)
  shape.max_id_len, shape.window_guard, shape.idle_ttl = tonumber(max_id_len), tonumber(window_guard), take(1)
  shape.n_fields = tonumber(take(1))
  shape.fields = {take(shape.n_fields)}
  shape.n_stream = tonumber(take(1))
  shape.stream = {take(shape.n_stream)}
  return shape
end)

-- A command's field/value pairs, flat: `names` (a list kept with its shape, see outcome_shape, with the
-- names in place from its first use) and args[at], args[at + 1], ... as their values. The list is the
-- shape's own, reused by every call that sends the shape (a call runs alone: nothing else reads it).
local function pairs_of(names, args, at)
  local n = names.n
  if not n then
    n = #names
    for i = n, 1, -1 do names[2 * i - 1], names[2 * i] = names[i], false end
    names.n = n
  end
  for i = 1, n do names[2 * i] = args[at + i - 1] end
  return names
end

-- finish_one's answer when no claim was asked, by `recorded` (read only: returned as they are).
local NO_CLAIM = {[0] = {false, false, false, {}, 0, {}, 0, 0}, [1] = {false, false, false, {}, 0, {}, 1, 0}}

local function finish_one(args, offset)
  -- (positions read directly, not with argv_reader: this runs once per job, once per outcome in a batch)
  local at = 2 + offset
  local w, now_text, now_float, now_int, id, origin, x, fence = unpack(args, at, at + 7)
  at = at + 8
  local shape = outcome_shape(args[at])
  local registry_score, schedule_score, working_time = unpack(args, at + 1, at + 3)
  local registry, job_ttl, release_as, put_back = shape.registry, shape.job_ttl, shape.release_as, shape.put_back
  local counter, stream_ttl, maxlen = shape.counter, shape.stream_ttl, shape.maxlen
  local claim, idle_ttl = shape.claim, shape.idle_ttl
  local fields_at, fields_n = at + 4, shape.n_fields
  local stream_at, stream_n = fields_at + fields_n, shape.n_stream
  at = stream_at + stream_n
  local next_x, n_queues = args[at], num(args[at + 1])
  local queues = {unpack(args, at + 2, at + 1 + n_queues)}
  local event, event_detail = shape.event, args[at + 2 + n_queues] or ''
  local c = {now_text = now_text, now_float = now_float, now_int = tonumber(now_int), interval = shape.interval,
    grace = shape.grace, max_dropped = shape.max_dropped, max_id_len = shape.max_id_len,
    window_guard = shape.window_guard}

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
    if not claim then  -- (an outcome of a batch, the sync path's, maintenance's)
      if x ~= '' then forget_worker_execution(id, x, w) end
      set_worker_idle(w, c, idle_ttl)
      return NO_CLAIM[recorded]
    end
    c.busy = w ~= '' and x ~= ''
    local reply = claim_next(queues, w, next_x, c)
    if x ~= '' then forget_worker_execution(id, x, w) end
    if not reply[1] then set_worker_idle(w, c, idle_ttl) end
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
    if fields_n > 0 then redis.call('HSET', key, unpack(pairs_of(shape.fields, args, fields_at))) end
    if event ~= '' and tonumber(read[4]) then  -- (the job's worker: read only for an event with no worker)
      job_event(read[4], origin, event, id, w ~= '' and w or redis.call('HGET', key, 'worker_name'), event_detail)
    end
    if stream_n > 0 then
      local results = K.results(id)
      redis.call('XADD', results, 'MAXLEN', '~', maxlen, '*', unpack(pairs_of(shape.stream, args, stream_at)))
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
