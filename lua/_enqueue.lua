-- _enqueue.lua: the work of enqueue_jobs.lua as a function, enqueue_jobs(), which reads that script's
-- ARGV (see its header) and returns its reply. enqueue_jobs.lua is that one call; enqueue_debounced,
-- enqueue_throttled and enqueue_cron_job.lua make it after their own guard, with the same ARGV.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _expire.lua
--@include _events.lua
--@include _lanes.lua
--@include _rate_limit.lua

-- A record's field names (enqueue_jobs.lua's record layout), read once per server for each shape (a
-- function library keeps them: jobs of one kind repeat a shape; a script reads it on every call): the
-- HSET's template {'status', <slot>, name, <value or "">, ...} and the slots the record's values fill.
local record_shape = kept(function(text)
  local shape = {template = {'status', false}, slots = {}}
  for name in string.gmatch(text, '([^\n]*)\n') do
    local n = #shape.template
    if string.sub(name, -1) == '=' then
      shape.template[n + 1], shape.template[n + 2] = string.sub(name, 1, -2), ''
    else
      shape.template[n + 1], shape.template[n + 2] = name, false
      shape.slots[#shape.slots + 1] = n + 2
    end
  end
  return shape
end)

local function enqueue_jobs()
  local queue = ARGV[2]
  local now_text = ARGV[3]
  local now_epoch = tonumber(ARGV[4])
  local group = ARGV[5]
  local n_jobs = tonumber(ARGV[6])
  local queue_key, deferred_key = K.queue(queue), K.deferred(queue)

  -- Work done once per call, not per job: the queue joins K.queues once; with several jobs, the
  -- deferred registry is looked at once (ZREM from it only while it exists: nothing in this call
  -- removes it, only register_dependencies adds to it); plain pushes (at the back, no priority)
  -- wait in `pending`, pushed in one RPUSH (in order) before any other push, and at the end.
  local registered, deferred_absent, pending = false, nil, {}
  local function register_queue()
    if not registered then
      redis.call('SADD', K.queues, queue_key)
      registered = true
    end
  end
  local function leave_deferred(id)
    if deferred_absent == nil and n_jobs > 1 then deferred_absent = redis.call('EXISTS', deferred_key) == 0 end
    if not deferred_absent then redis.call('ZREM', deferred_key, id) end
  end
  local function flush_pushes()
    if #pending > 0 then
      redis.call('RPUSH', queue_key, unpack(pending))
      pending = {}
    end
  end

  local function dependency_blocks(dep_id, allow_failure)
    local status = redis.call('HGET', K.job(dep_id), 'status')
    if not status then return false end  -- a missing dependency counts as met, as in RQ
    if status == 'finished' then return false end
    return not (allow_failure and status == 'failed')
  end

  local function register_dependencies(id, deps)
    redis.call('ZADD', deferred_key, now_epoch, id)
    deferred_absent = false
    for _, dep_id in ipairs(deps) do
      redis.call('SADD', K.dependents(dep_id), id)
      redis.call('SADD', K.dependencies(id), dep_id)
    end
  end

  -- `fields` is the record's fields behind a 'status' slot: {'status', <set here>, field, value, ...},
  -- written in one HSET in the order three writes would (status, the fields, enqueued_at last).
  local function store(id, fields, status, enqueued)
    fields[2] = status
    if enqueued then
      local n = #fields
      fields[n + 1], fields[n + 2] = 'enqueued_at', now_text
    end
    redis.call('HSET', K.job(id), unpack(fields))
  end

  local function field_value(fields, name)
    for f = 3, #fields, 2 do
      if fields[f] == name then return fields[f + 1] end
    end
  end

  local function enqueue_one(id, mode, at_front, ttl, score, allow_failure, deps, fields)
    if mode == 'requeue' and redis.call('ZREM', K.failed(queue), id) == 0 then
      return 'not_failed'
    end
    if mode == 'requeue' and field_value(fields, 'rate_limit_key') and field_value(fields, 'rate_limit_concurrency') then
      mode = 'limit'  -- a rate-limited job waits for a slot, as RQ 3.0's requeue
    end
    if mode == 'schedule' then
      register_queue()
      store(id, fields, 'scheduled', false)
      expire_job_keys(id, ttl)
      redis.call('ZADD', K.scheduled(queue), score, id)
      return 'scheduled'
    end
    local blocked = false
    for _, dep_id in ipairs(deps) do
      if dependency_blocks(dep_id, allow_failure) then blocked = true end
    end
    local batch = mode == 'batch' or mode == 'batch_rq2'
    register_queue()
    if batch and #deps > 0 then
      register_dependencies(id, deps)
    end
    if blocked then
      if not batch then register_dependencies(id, deps) end
      store(id, fields, 'deferred', false)
      if mode ~= 'batch_rq2' then expire_job_keys(id, ttl) end
      return 'deferred'
    end
    leave_deferred(id)  -- a job that was deferred is not any more
    if mode == 'limit' then
      store(id, fields, 'rate_limited', false)
      expire_job_keys(id, ttl)
      local rl_key, concurrency = field_value(fields, 'rate_limit_key'), field_value(fields, 'rate_limit_concurrency')
      flush_pushes()  -- (a free slot pushes the job)
      return rate_limit_wait(id, rl_key, concurrency, now_epoch, now_text) and 'queued' or 'rate_limited'
    end
    store(id, fields, 'queued', true)
    expire_job_keys(id, ttl)
    if mode == 'store' then return 'stored' end
    local priority = fields[3] == 'priority' and fields[4]
    if at_front or priority then
      flush_pushes()
      push_job(queue, id, at_front, priority, true)
    else
      pending[#pending + 1] = id  -- (a call holds ENQUEUE_CHUNK jobs at most: far below unpack's limit, ~8,000)
    end
    return 'queued'
  end

  local results, grouped = {}, false
  local i = 7
  for n = 1, n_jobs do
    local id, mode, at_front, unique = ARGV[i], ARGV[i + 1], ARGV[i + 2] == '1', ARGV[i + 3] == '1'
    local ttl, score, allow_failure = ARGV[i + 4], ARGV[i + 5], ARGV[i + 6] == '1'
    local n_deps = tonumber(ARGV[i + 7])
    i = i + 8
    local deps = {}
    for d = 1, n_deps do deps[d] = ARGV[i + d - 1] end
    i = i + n_deps
    local shape = record_shape(ARGV[i])
    local fields = {unpack(shape.template)}  -- (store() fills the status slot)
    for j, slot in ipairs(shape.slots) do fields[slot] = ARGV[i + j] end
    i = i + 1 + #shape.slots
    if unique and redis.call('EXISTS', K.job(id)) == 1 then
      results[n] = 'duplicate'
    else
      results[n] = enqueue_one(id, mode, at_front, ttl, score, allow_failure, deps, fields)
      if results[n] ~= 'not_failed' then  -- rqfast's events: requeued, or the status the job got
        local event = results[n] == 'stored' and 'queued' or results[n]
        job_event(field_value(fields, 'events'), queue, mode == 'requeue' and 'requeued' or event, id)
      end
      if group ~= '' and results[n] ~= 'not_failed' then
        redis.call('SADD', K.group(group), id)
        grouped = true
      end
    end
  end
  flush_pushes()
  if grouped then redis.call('SADD', K.groups, group) end
  return results
end
