-- _common.lua: prepended to every script by rqfast/scripts.py (it is not a script of its own).
-- RQ 2.12's key names, built from the prefix the caller passes as ARGV[1] (RQ's is "rq" and a
-- colon), and the few writes several state changes share. Numbers (TTLs, limits) come in as
-- arguments from rqfast/defaults.py; none is written here. rqfast/keys.py is the Python twin of the key table.
local PREFIX = ARGV[1]
local K = {
  queues = PREFIX .. 'queues',
  queue = function(q) return PREFIX .. 'queue:' .. q end,
  intermediate = function(q) return PREFIX .. 'queue:' .. q .. ':intermediate' end,
  job = function(id) return PREFIX .. 'job:' .. id end,
  dependents = function(id) return PREFIX .. 'job:' .. id .. ':dependents' end,
  dependencies = function(id) return PREFIX .. 'job::' .. id .. ':dependencies' end,
  results = function(id) return PREFIX .. 'results:' .. id end,
  execution = function(id, x) return PREFIX .. 'execution:' .. id .. ':' .. x end,
  executions = function(id) return PREFIX .. 'executions:' .. id end,
  started = function(q) return PREFIX .. 'wip:' .. q end,
  finished = function(q) return PREFIX .. 'finished:' .. q end,
  failed = function(q) return PREFIX .. 'failed:' .. q end,
  deferred = function(q) return PREFIX .. 'deferred:' .. q end,
  scheduled = function(q) return PREFIX .. 'scheduled:' .. q end,
  canceled = function(q) return PREFIX .. 'canceled:' .. q end,
  group = function(g) return PREFIX .. 'group:' .. g end,
  groups = PREFIX .. 'groups',
  worker = function(w) return PREFIX .. 'worker:' .. w end,
  workers = PREFIX .. 'workers',
  workers_by_queue = function(q) return PREFIX .. 'workers:' .. q end,
}

-- Sets the TTL of a job's hash and its two dependency sets, as RQ's Job.cleanup(ttl) does:
-- a positive ttl EXPIREs them; 0, -1 and nil leave them alone.
local function expire_job_keys(id, ttl)
  ttl = tonumber(ttl)
  if ttl and ttl > 0 then
    redis.call('EXPIRE', K.job(id), ttl)
    redis.call('EXPIRE', K.dependents(id), ttl)
    redis.call('EXPIRE', K.dependencies(id), ttl)
  end
end

-- Pushes an id onto a queue and registers the queue, as RQ's enqueue does.
local function push_job(queue, id, at_front)
  redis.call('SADD', K.queues, K.queue(queue))
  if at_front then
    redis.call('LPUSH', K.queue(queue), id)
  else
    redis.call('RPUSH', K.queue(queue), id)
  end
end

-- Takes a job out of its queue (optionally) and out of the registry its status puts it in,
-- as RQ's Job._remove_from_registries does.
local function remove_from_registries(id, origin, status, remove_from_queue)
  if remove_from_queue then redis.call('LREM', K.queue(origin), 1, id) end
  if status == 'finished' then
    redis.call('ZREM', K.finished(origin), id)
  elseif status == 'deferred' then
    redis.call('ZREM', K.deferred(origin), id)
  elseif status == 'started' then
    for _, x in ipairs(redis.call('ZRANGE', K.executions(id), 0, -1)) do
      redis.call('ZREM', K.started(origin), id .. ':' .. x)
    end
  elseif status == 'scheduled' then
    redis.call('ZREM', K.scheduled(origin), id)
  elseif status == 'failed' or status == 'stopped' then
    redis.call('ZREM', K.failed(origin), id)
  elseif status == 'canceled' then
    redis.call('ZREM', K.canceled(origin), id)
  end
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
-- queue (at the front with enqueue_at_front). `exclude` (or nil): see dependencies_met.
-- Returns how many were enqueued.
local function release_dependents(parent_id, parent_status, now_text, exclude)
  local dependents_key = K.dependents(parent_id)
  local dependent_ids = redis.call('SMEMBERS', dependents_key)
  if #dependent_ids == 0 then return 0 end
  local released = {}
  for _, dep_id in ipairs(dependent_ids) do
    local key = K.job(dep_id)
    local fields = redis.call('HMGET', key, 'data', 'status', 'origin', 'allow_dependency_failures',
      'enqueue_at_front', 'ttl')
    local allow_failure = fields[4] == '1'
    if fields[1] and fields[2] ~= 'canceled' and dependencies_met(dep_id, allow_failure, parent_id, parent_status, exclude) then
      local origin = fields[3] or ''
      redis.call('ZREM', K.deferred(origin), dep_id)
      redis.call('HSET', key, 'status', 'queued', 'enqueued_at', now_text)
      expire_job_keys(dep_id, fields[6])
      push_job(origin, dep_id, fields[5] == '1')
      released[#released + 1] = dep_id
    end
  end
  if #released == #dependent_ids then
    redis.call('DEL', dependents_key)
  elseif #released > 0 then
    redis.call('SREM', dependents_key, unpack(released))
  end
  return #released
end

-- RQ's group upkeep (Group.cleanup, Group.all, Group.clean_registries) over the groups `names`
-- (every member of <prefix>groups when the list is empty): with `prune`, SREM the job ids whose
-- hash is gone; with `drop`, SREM from <prefix>groups each group whose set no longer exists (an
-- empty set is no key). Returns {names of the groups whose set exists, ids pruned, groups dropped}.
local function clean_groups_of(names, prune, drop)
  if #names == 0 then names = redis.call('SMEMBERS', K.groups) end
  local alive, pruned, dropped = {}, 0, 0
  for _, name in ipairs(names) do
    local key = K.group(name)
    if prune then
      for _, id in ipairs(redis.call('SMEMBERS', key)) do
        if redis.call('EXISTS', K.job(id)) == 0 then pruned = pruned + redis.call('SREM', key, id) end
      end
    end
    if redis.call('EXISTS', key) == 1 then
      alive[#alive + 1] = name
    elseif drop then
      dropped = dropped + redis.call('SREM', K.groups, name)
    end
  end
  return {alive, pruned, dropped}
end

-- Reads ARGV from position `i` on: next() returns the next argument, list() a counted list,
-- pairs() a counted list of field/value pairs (flat).
local function argv_reader(i)
  local r = {}
  function r.next() local v = ARGV[i]; i = i + 1; return v end
  function r.list(width)
    local n, out = tonumber(r.next()) * (width or 1), {}
    for j = 1, n do out[j] = ARGV[i + j - 1] end
    i = i + n
    return out
  end
  return r
end

-- The heartbeat TTL of a running job (RQ's forking-worker rule, since every rqfast worker
-- heartbeats while its jobs run): min(timeout, monitoring interval) + grace.
local function heartbeat_ttl(timeout, interval, grace)
  timeout = tonumber(timeout)
  if timeout and timeout > 0 and timeout < interval then return math.floor(timeout) + grace end
  return interval + grace
end

-- Marks job `id` (taken from `queue`) started by worker `w` with execution id `x`, as RQ's worker
-- does in its prepare steps: job fields and PERSIST, the execution hash and zset, the started
-- registry entry, the worker's current job. `c` holds now_text, now_float, now_int, interval,
-- grace (seconds a heartbeat TTL adds) and max_dropped (see claim_next).
-- Returns the job hash as it was before (flat HGETALL), or nil when it has no hash (or the key is
-- not a hash) or no data.
local function start_job(id, queue, w, x, c)
  local key = K.job(id)
  local job = redis.pcall('HGETALL', key)
  if job.err then return nil end  -- the key is not a hash: no job to start
  local has_data, timeout = false, nil
  for j = 1, #job, 2 do
    if job[j] == 'data' then has_data = true elseif job[j] == 'timeout' then timeout = job[j + 1] end
  end
  if not has_data then return nil end
  local ttl = heartbeat_ttl(timeout, c.interval, c.grace)
  redis.call('HSET', key, 'status', 'started', 'started_at', c.now_text, 'last_heartbeat', c.now_text,
    'worker_name', w)
  redis.call('PERSIST', key)
  local execution = K.execution(id, x)
  redis.call('HSET', execution, 'id', x, 'created_at', c.now_float, 'last_heartbeat', c.now_float, 'worker_name', w)
  redis.call('EXPIRE', execution, ttl)
  redis.call('ZADD', K.executions(id), c.now_int + ttl + c.grace, x)
  redis.call('EXPIRE', K.executions(id), ttl + c.grace)
  redis.call('ZADD', K.started(queue), c.now_int + ttl, id .. ':' .. x)
  if w ~= '' then
    local wkey = K.worker(w)
    redis.call('HSET', wkey, 'state', 'busy', 'current_job', id, 'current_job_working_time', 0,
      'last_heartbeat', c.now_text)
    redis.call('EXPIRE', wkey, ttl)
  end
  return job
end

-- Pops and starts the first available job from `queues` (in the order given). Ids without a
-- job hash are dropped (returned, for the worker to log), at most c.max_dropped per call. With
-- <prefix>suspended set, claims nothing.
-- Returns {id or false, queue or false, job hash (flat) or false, dropped ids, suspended 0/1}.
local function claim_next(queues, w, x, c)
  local dropped = {}
  if redis.call('EXISTS', PREFIX .. 'suspended') == 1 then return {false, false, false, dropped, 1} end
  for _, queue in ipairs(queues) do
    while true do
      local id = redis.call('LPOP', K.queue(queue))
      if not id then break end
      local job = start_job(id, queue, w, x, c)
      if job then return {id, queue, job, dropped, 0} end
      dropped[#dropped + 1] = id
      if #dropped >= c.max_dropped then return {false, false, false, dropped, 0} end
    end
  end
  return {false, false, false, dropped, 0}
end

-- A worker with nothing to do: idle, no current job, heartbeat, the idle TTL.
local function set_worker_idle(w, c, idle_ttl)
  if w == '' then return end
  local wkey = K.worker(w)
  redis.call('HSET', wkey, 'state', 'idle', 'last_heartbeat', c.now_text)
  redis.call('HDEL', wkey, 'current_job')
  redis.call('EXPIRE', wkey, idle_ttl)
end

