-- _claim.lua: claiming a job for a worker and starting it; an execution's end; the worker's state.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _events.lua
--@include _window.lua

-- The heartbeat TTL of a running job: monitoring interval + grace. rqfast's heartbeat thread beats
-- every third of the interval whatever the job's timeout, so (unlike RQ's forking rule,
-- min(timeout, interval) + 60) a short timeout does not shorten it, and a small grace suffices:
-- an abandoned job is found within interval + grace + the recovery pass's interval of its last beat.
local function heartbeat_ttl(timeout, interval, grace)
  return interval + grace
end

-- Ends execution `x` of job `id` taken from `queue`: its hash, its started-registry member and its
-- executions entry. A finish or heartbeat of that execution finds no hash afterwards: it is fenced.
-- (`deleted`: the caller deleted the hash already.)
local function end_execution(id, queue, x, deleted)
  if not deleted then redis.call('DEL', K.execution(id, x)) end
  redis.call('ZREM', K.started(queue), id .. ':' .. x)
  redis.call('ZREM', K.executions(id), x)
end

-- An id a worker cannot use as a job id (RQ 2.12's pattern, [A-Za-z0-9_-]+, at most max_len
-- characters): the reason, or nil when it is fine.
local function unusable_id(id, max_len)
  if id == '' then return 'empty job id' end
  if #id > max_len then return 'job id longer than ' .. max_len .. ' characters' end
  -- (%w is [A-Za-z0-9]: Redis runs Lua in the C locale)
  if not string.find(id, '^[%w_-]+$') then return 'job id outside [A-Za-z0-9_-]' end
  return nil
end

-- Worker `w` busy with the jobs it started (flat: id, execution id, ...; the last one its current
-- job), as start_job leaves it: HSET and EXPIRE of its hash, its RQ 3.0 executions index. With
-- c.busy (the call records a job of this worker that ran until now: it goes from busy to busy) both
-- keep the TTL they have, unless the hash was gone (its HSET added fields): the claim or heartbeat
-- that made the worker busy set it, its heartbeats renew it, and the index is never empty in
-- between (finish_one takes the ended member out after this). Two EXPIREs per job saved.
local function worker_started(w, started, ttl, c)
  local wkey, members = K.worker(w), {}
  for j = 1, #started, 2 do members[#members + 1] = started[j] .. ':' .. started[j + 1] end
  local added = redis.call('HSET', wkey, 'state', 'busy', 'current_job', started[#started - 1],
    'current_job_working_time', '0', 'last_heartbeat', c.now_text)
  -- RQ 3.0 readers find a worker's running jobs here, not in current_job; its TTL is the worker
  -- hash's, as RQ 3.0 leaves it once its start transaction is done
  redis.call('SADD', K.worker_executions(w), unpack(members))
  if not c.busy or added > 0 then
    redis.call('EXPIRE', wkey, text(ttl))
    redis.call('EXPIRE', K.worker_executions(w), text(ttl))
  end
end

-- Marks job `id` (taken from `queue`) started by worker `w` with execution id `x`, as RQ's worker
-- does in its prepare steps: job fields and PERSIST, the execution hash and zset, the started
-- registry entry, the worker's current job. `c` holds now_text, now_float, now_int, interval,
-- grace (seconds a heartbeat TTL adds) and max_dropped (see claim_next); with a list c.started,
-- the worker's writes are left to the caller (worker_started), the id and execution id added to it.
-- Returns the job hash as it was (flat HGETALL), or nil when there is none; nil, true when its
-- window rate limit deferred it; nil, false, reason when the key is not a hash (to dead-letter). A
-- hash without `data` is started: the worker's loader fails it, saying why.
local function start_job(id, queue, w, x, c)
  local key = K.job(id)
  local job = redis.pcall('HGETALL', key)
  if job.err then return nil, false, 'its job key is a ' .. redis.call('TYPE', key).ok .. ', not a hash' end
  if #job == 0 then return nil end
  local timeout, prioritized, events, window, ran = nil, false, nil, nil, false
  for j = 1, #job, 2 do
    local f = job[j]
    if f == 'timeout' then
      timeout = job[j + 1]
    elseif f == 'started_at' then
      ran = job[j + 1] ~= ''
    elseif f == 'priority' then
      prioritized = true
    elseif f == 'events' then
      events = job[j + 1]
    elseif f == 'rate_limit_window_key' then  -- rqfast's window rate limit (see window_take)
      window = {}
      for i = 1, #job, 2 do window[job[i]] = job[i + 1] end
    end
  end
  -- (taken from the list by a blocking move, or by LPOP: its lane's entry goes too)
  if prioritized then redis.call('ZREM', K.priority(queue), id) end
  if window and tonumber(window.rate_limit_rate) and tonumber(window.rate_limit_per) then
    local at = window_take(id, x, window.rate_limit_window_key, tonumber(window.rate_limit_rate),
      tonumber(window.rate_limit_per), tonumber(c.now_float), c.window_guard, c.max_dropped + 2 * tonumber(window.rate_limit_rate))
    if at then
      window_defer(id, queue, at, window.rate_limit_key ~= '' and window.rate_limit_key or false, c)
      job_event(events, queue, 'scheduled', id, w)  -- (rqfast's events: waits for its window)
      return nil, true
    end
  end
  local ttl = heartbeat_ttl(timeout, c.interval, c.grace)
  -- A job claimed again (from a queue) is run by this execution only: any earlier one still on
  -- record belongs to a worker that lost the job (paused past its deadline, then recovered) and is
  -- fenced off here, so its late finish or heartbeat writes nothing. A job never started (no
  -- started_at: every start, RQ's included, writes it with its execution) has none to look for.
  if ran then
    for _, old in ipairs(redis.call('ZRANGE', K.executions(id), 0, -1)) do end_execution(id, queue, old) end
  end
  redis.call('HSET', key, 'status', 'started', 'started_at', c.now_text, 'last_heartbeat', c.now_text,
    'worker_name', w)
  redis.call('PERSIST', key)
  local execution, executions = K.execution(id, x), K.executions(id)
  redis.call('HSET', execution, 'id', x, 'created_at', c.now_float, 'last_heartbeat', c.now_float, 'worker_name', w)
  redis.call('EXPIRE', execution, text(ttl))
  redis.call('ZADD', executions, text(c.now_int + ttl + c.grace), x)
  redis.call('EXPIRE', executions, text(ttl + c.grace))
  redis.call('ZADD', K.started(queue), text(c.now_int + ttl), id .. ':' .. x)
  if events then job_event(events, queue, 'started', id, w) end  -- (rqfast's events: a job of Queue(events=...))
  if w ~= '' and c.started then
    c.started[#c.started + 1] = id  -- several claims in one call: the worker's writes once, at the end
    c.started[#c.started + 1] = x
  elseif w ~= '' then
    worker_started(w, {id, x}, ttl, c)
  end
  return job
end

-- Takes execution `x` of job `id` out of worker `w`'s RQ 3.0 executions index ("" = no worker).
-- Abandoned jobs (settled by maintenance, w "") keep their member, as in RQ 3.0: its readers drop a
-- member whose execution hash has expired, and the index expires with its worker.
local function forget_worker_execution(id, x, w)
  if w ~= '' then redis.call('SREM', K.worker_executions(w), id .. ':' .. x) end
end

-- Moves an id the worker cannot use out of the way, visibly: HSET <prefix>dead-letter:<queue>
-- id -> "<now> <reason>" (a job hash under that id, if any, is left as it is).
local function dead_letter(queue, id, reason, c)
  redis.call('HSET', K.dead_letter(queue), id, c.now_text .. ' ' .. reason)
end

-- The queues paused by Queue.pause(), as a lookup table, read once per call (kept in c.paused):
-- one SCARD when none is paused, the usual case.
local function paused_queues(c)
  if c.paused == nil then
    c.paused = {}
    if redis.call('SCARD', K.paused_queues) > 0 then
      for _, q in ipairs(redis.call('SMEMBERS', K.paused_queues)) do c.paused[q] = true end
    end
  end
  return c.paused
end

-- The id of the first job in `queue`'s priority lanes (K.priority) still waiting on its list: out of
-- both, or nil when there is none (one EXISTS when the queue has no lanes, the usual case). An entry
-- whose job is no longer queued there (an RQ worker took it, or it was removed, deleted or canceled
-- by a client that does not know the lanes) is dropped on the way: at most c.max_dropped per call
-- (c.stale counts them), after which the list's own order serves.
local function pop_prioritized(queue, c)
  local lanes = K.priority(queue)
  if redis.call('EXISTS', lanes) == 0 then return nil end
  c.stale = c.stale or 0
  while c.stale < c.max_dropped do
    local first = redis.call('ZPOPMIN', lanes)
    if #first == 0 then return nil end
    local id = first[1]
    if redis.pcall('HGET', K.job(id), 'status') == 'queued' and redis.call('LREM', K.queue(queue), 1, id) > 0 then
      return id
    end
    c.stale = c.stale + 1
  end
  return nil
end

-- Whether a claim from `queues` may skip its checks (c.plain, found once per call): true when none of
-- <prefix>suspended, <prefix>paused-queues and the queues' priority lanes exists, the usual case, found
-- with one EXISTS; else each is checked on its own (claim_next, paused_queues, pop_prioritized).
local function plain_claim(queues, c)
  if c.plain == nil then
    local probe = {PREFIX .. 'suspended', K.paused_queues}
    for _, queue in ipairs(queues) do probe[#probe + 1] = K.priority(queue) end
    c.plain = redis.call('EXISTS', unpack(probe)) == 0
  end
  return c.plain
end

local NONE_PAUSED = {}  -- (read only)

-- Pops and starts the first available job from `queues` (in order), a queue's priority lanes first
-- (pop_prioritized). Ids without a job hash are dropped (returned, for the worker to log); ids outside
-- RQ's pattern, longer than c.max_id_len or whose job key is not a hash are dead-lettered (returned
-- flat: queue, id, reason, ...); at most c.max_dropped of both per call. A job over its window rate limit goes to its scheduled registry (window_defer) and the next
-- id is popped, up to c.max_dropped of them per call.
-- With <prefix>suspended set, claims nothing; a queue in <prefix>paused-queues is skipped.
-- Returns {id or false, queue or false, job hash (flat) or false, dropped ids, suspended 0/1,
--   dead-lettered ids (flat: queue, id, reason, ...)}.
local function claim_next(queues, w, x, c)
  local dropped, dead = {}, {}
  local plain = plain_claim(queues, c)
  -- (c.unsuspended: an earlier claim of the same call found it unset)
  if not plain and not c.unsuspended and redis.call('EXISTS', PREFIX .. 'suspended') == 1 then
    return {false, false, false, dropped, 1, dead}
  end
  local paused = plain and NONE_PAUSED or paused_queues(c)
  for _, queue in ipairs(queues) do
    while not paused[queue] do
      local id = (not plain and pop_prioritized(queue, c)) or redis.call('LPOP', K.queue(queue))
      if not id then break end
      local unusable = unusable_id(id, c.max_id_len)
      if not unusable then
        local job, deferred, wrong = start_job(id, queue, w, x, c)
        if job then return {id, queue, job, dropped, 0, dead} end
        unusable = wrong
        if not (deferred or wrong) then dropped[#dropped + 1] = id end
      end
      if unusable then
        dead_letter(queue, id, unusable, c)
        dead[#dead + 1] = queue
        dead[#dead + 1] = id
        dead[#dead + 1] = unusable
      end
      if #dropped + #dead / 3 >= c.max_dropped or (c.deferred or 0) >= c.max_dropped then
        return {false, false, false, dropped, 0, dead}
      end
    end
  end
  return {false, false, false, dropped, 0, dead}
end

-- The job execution `x` of worker `w` already started, when a claim is sent again because the reply
-- to the first one was lost (the connection dropped): {id, queue, job hash (flat), {}, 0, {}}, or nil.
-- `id`: the job that execution would be of (default: the worker's current job).
local function resumed_claim(w, x, id)
  if w == '' or x == '' then return nil end
  id = id or redis.call('HGET', K.worker(w), 'current_job')
  if not id or redis.call('EXISTS', K.execution(id, x)) == 0 then return nil end
  local job = redis.call('HGETALL', K.job(id))
  local queue = redis.call('HGET', K.job(id), 'origin')
  if #job == 0 or not queue then return nil end
  return {id, queue, job, {}, 0, {}}
end

-- A worker with nothing to do: idle, no current job, heartbeat, the idle TTL.
local function set_worker_idle(w, c, idle_ttl)
  if w == '' then return end
  local wkey = K.worker(w)
  redis.call('HSET', wkey, 'state', 'idle', 'last_heartbeat', c.now_text)
  redis.call('HDEL', wkey, 'current_job')
  redis.call('EXPIRE', wkey, idle_ttl)
end
