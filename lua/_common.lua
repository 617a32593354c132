-- _common.lua: prepended to every script by rqfast/scripts.py (it is not a script of its own).
-- RQ 2.12's key names, built from the prefix the caller passes as ARGV[1] (RQ's is "rq" and a
-- colon), and the few writes several state changes share. Numbers (TTLs, limits) come in as
-- arguments from rqfast/defaults.py; none is written here. rqfast/keys.py is the Python twin of the key table.
-- KEYS[1] is always the prefix's `queues` key (rqfast.keys.SLOT_KEY), declared only so that a Redis
-- Cluster routes the call to the slot of the prefix's hash tag (every key below shares it).
local PREFIX = ARGV[1]
local K = {
  queues = PREFIX .. 'queues',
  queue = function(q) return PREFIX .. 'queue:' .. q end,
  intermediate = function(q) return PREFIX .. 'queue:' .. q .. ':intermediate' end,
  -- rqfast's own (additive): the ids of a queue's prioritized jobs (see add_to_lanes)
  priority = function(q) return PREFIX .. 'queue:' .. q .. ':priority' end,
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
  ready = function(q) return PREFIX .. 'ready:' .. q end,  -- RQ 3.0's ReadyJobRegistry
  group = function(g) return PREFIX .. 'group:' .. g end,
  groups = PREFIX .. 'groups',
  group_cleaning = PREFIX .. 'clean_groups',  -- RQ 3.0's lock: groups are cleaned once per window
  worker = function(w) return PREFIX .. 'worker:' .. w end,
  -- RQ 3.0's index of a worker's running executions (set of `<id>:<x>`); 2.12 never reads it
  worker_executions = function(w) return PREFIX .. 'worker:' .. w .. ':executions' end,
  workers = PREFIX .. 'workers',
  workers_by_queue = function(q) return PREFIX .. 'workers:' .. q end,
  cron_jobs = PREFIX .. 'cron_jobs',
  cron_job_history = function(name) return PREFIX .. 'cron_job:' .. name .. ':jobs' end,
  dead_letter = function(q) return PREFIX .. 'dead-letter:' .. q end,
  paused_queues = PREFIX .. 'paused-queues',  -- rqfast's own: names of the queues Queue.pause() paused
  events = function(q) return PREFIX .. 'events:' .. q end,  -- rqfast's own: a queue's lifecycle events
  -- RQ 3.0's concurrency rate limits: the set of bare keys in use, a key's config hash, its slots
  rl_keys = PREFIX .. 'rl-keys',
  rl = function(k) return PREFIX .. 'rl:' .. k end,
  rl_allowed = function(k) return PREFIX .. 'rl:' .. k .. ':allowed' end,
  rl_waiting = function(k) return PREFIX .. 'rl:' .. k .. ':rate_limited' end,
  -- rqfast's own: the id of a debounce burst's job, and the holder of a throttle window (with its TTL)
  debounce = function(k) return PREFIX .. 'debounce:' .. k end,
  throttle = function(k) return PREFIX .. 'throttle:' .. k end,
}

-- Sets the TTL of a job's hash and its two dependency sets, as RQ's Job.cleanup(ttl) does:
-- a positive ttl EXPIREs them; 0, -1 and nil leave them alone. `no_dependents`: the caller found
-- no dependents set in this call (its EXPIRE would be a no-op, and is left out).
local function expire_job_keys(id, ttl, no_dependents)
  ttl = tonumber(ttl)
  if ttl and ttl > 0 then
    redis.call('EXPIRE', K.job(id), ttl)
    if not no_dependents then redis.call('EXPIRE', K.dependents(id), ttl) end
    redis.call('EXPIRE', K.dependencies(id), ttl)
  end
end

-- Priority lanes (rqfast's own, additive). A job enqueued with a priority p (0..9, 0 first; its
-- job hash field `priority`) goes onto its queue's list as any job does, so RQ's tools count it and
-- RQ's workers run it (in list order), and its id joins the sorted set K.priority(queue) too, which
-- rqfast's claim reads first (pop_prioritized). Lane p holds the scores [p * PRIORITY_LANE,
-- (p + 1) * PRIORITY_LANE): a job joins behind the last of its lane (before the first, at_front),
-- the first one of an empty lane at its middle. PRIORITY_LANE is the key's format (rqfast.keys'
-- PRIORITY_LANE), not a tunable.
local PRIORITY_LANE = 1e12

-- The lane of a stored `priority` field, or nil when there is none (or it is not an integer 0..9).
local function priority_lane(priority)
  local p = tonumber(priority)
  if p and p >= 0 and p <= 9 and p == math.floor(p) then return p end
  return nil
end

-- Adds job `id` (already on `queue`'s list) to its lane in K.priority(queue); nothing without a lane.
local function add_to_lanes(queue, id, priority, at_front)
  local p = priority_lane(priority)
  if not p then return end
  local key, low = K.priority(queue), p * PRIORITY_LANE
  local high = low + PRIORITY_LANE - 1
  local low_text, high_text = string.format('%.0f', low), string.format('%.0f', high)
  local edge, score
  if at_front then
    edge = redis.call('ZRANGEBYSCORE', key, low_text, high_text, 'WITHSCORES', 'LIMIT', 0, 1)
  else
    edge = redis.call('ZREVRANGEBYSCORE', key, high_text, low_text, 'WITHSCORES', 'LIMIT', 0, 1)
  end
  if #edge == 0 then
    score = low + PRIORITY_LANE / 2
  else
    score = tonumber(edge[2]) + (at_front and -1 or 1)
  end
  redis.call('ZADD', key, string.format('%.0f', score), id)
end

-- rqfast's lifecycle events (rqfast/events.py): one XADD onto K.events(queue) for a job whose hash
-- holds `events` (the stream's cap, as Queue(events=...) stored it); a job without the field (the
-- default, and every job RQ enqueued) writes nothing. `events` is the field as the caller read it
-- (a value that is not a positive number counts as none: a bad field never fails the state change).
local function job_event(events, queue, name, id, worker, detail)
  local cap = tonumber(events)
  if not cap or cap < 1 then return end
  redis.call('XADD', K.events(queue), 'MAXLEN', '~', math.floor(cap), '*', 'event', name, 'job_id', id, 'queue', queue,
    'worker', worker or '', 'detail', detail or '')
end

-- Pushes an id onto a queue and registers the queue, as RQ's enqueue does; with a `priority` (the
-- job hash's field; nil, false or '' for none), into its priority lane as well.
local function push_job(queue, id, at_front, priority)
  redis.call('SADD', K.queues, K.queue(queue))
  if at_front then
    redis.call('LPUSH', K.queue(queue), id)
  else
    redis.call('RPUSH', K.queue(queue), id)
  end
  if priority then add_to_lanes(queue, id, priority, at_front) end
end

-- RQ 3.0's concurrency rate limits (rq/rate_limit.py). A job with a rate_limit_key holds one of its
-- key's `concurrency` slots (K.rl_allowed) from its promotion onto its queue until it ends; until
-- promoted it waits in K.rl_waiting, status rate_limited, on no queue. Jobs without a rate limit
-- never reach these functions (the finish script reads one field to know).

-- A key's concurrency as registered in K.rl (the last registrant's); 0 when unset.
local function rate_limit_concurrency(rl_key)
  return tonumber(redis.call('HGET', K.rl(rl_key), 'concurrency')) or 0
end

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

-- The server's clock as an integer epoch, for the callers that get no `now` of that kind.
local function epoch_now()
  return tonumber(redis.call('TIME')[1])
end

-- A job's rate-limit key (false when it has none): read before an outcome that may delete the hash.
-- With `exists` false (the job was deleted while it ran) and an execution id, the key is read from
-- the execution hash, where delete_job.lua leaves it (see rate_limit_mark_executions).
-- `stored`: the field as the caller read it already from the job hash (then it is not read again).
local function rate_limit_key_of(id, exists, x, stored)
  local rl_key
  if exists ~= false and stored ~= nil then
    rl_key = stored
  elseif exists ~= false then
    rl_key = redis.call('HGET', K.job(id), 'rate_limit_key')
  elseif x and x ~= '' then
    rl_key = redis.call('HGET', K.execution(id, x), 'rate_limit_key')
  end
  if not rl_key or rl_key == '' then return false end
  return rl_key
end

-- A rate-limited job deleted while it runs: its live executions (RQ 3.0 keeps them, and so its slot)
-- note its key, so the finish of each still frees the slot though the job hash is gone. RQ 3.0's
-- readers ignore the extra field.
local function rate_limit_mark_executions(id, rl_key)
  for _, x in ipairs(redis.call('ZRANGE', K.executions(id), 0, -1)) do
    if redis.call('EXISTS', K.execution(id, x)) == 1 then
      redis.call('HSET', K.execution(id, x), 'rate_limit_key', rl_key)
    end
  end
end

-- After a job's outcome is written: unless it is queued or started again (an immediate retry or
-- repeat keeps its slot), its slot is freed and the waiters promoted, as RQ 3.0's release_slot
-- does after the worker's outcome transaction. `rl_key` false (no rate limit): nothing.
-- Returns the promoted ids.
local function rate_limit_release(id, rl_key, now_int, now_text)
  if not rl_key then return {} end
  local status = redis.call('HGET', K.job(id), 'status')
  if status == 'queued' or status == 'started' then return {} end
  redis.call('ZREM', K.rl_allowed(rl_key), id)
  return rate_limit_promote(rl_key, rate_limit_concurrency(rl_key), now_int, now_text)
end

-- Frees the slot of job `id` when it no longer needs it (not queued or started, and no live
-- execution: a job canceled or deleted while it runs keeps its slot until that execution ends),
-- then fills the free slots. RQ 3.0's RELEASE_STALE_AND_ENQUEUE_SCRIPT (cancel, delete, upkeep).
-- Returns 1 when a slot was freed, 0 if not; and the promoted ids.
local function rate_limit_release_stale(id, rl_key, now_int, now_text)
  local status = redis.call('HGET', K.job(id), 'status')
  if status == 'queued' or status == 'started' then return 0, {} end
  if redis.call('ZCOUNT', K.executions(id), '(' .. now_int, '+inf') > 0 then return 0, {} end
  if redis.call('ZREM', K.rl_allowed(rl_key), id) == 0 then return 0, {} end
  return 1, rate_limit_promote(rl_key, rate_limit_concurrency(rl_key), now_int, now_text)
end

-- A job canceled or deleted (RQ 3.0's RateLimitRegistry.cancel): out of the waiting set, and its slot
-- freed unless it still runs (see rate_limit_release_stale). `rl_key` false: nothing.
-- Returns the promoted ids.
local function rate_limit_forget(id, rl_key, now_int, now_text)
  if not rl_key then return {} end
  redis.call('ZREM', K.rl_waiting(rl_key), id)
  local _, promoted = rate_limit_release_stale(id, rl_key, now_int, now_text)
  return promoted
end

-- RQ 3.0's RateLimitRegistry.cleanup for one key: frees the slots of jobs that no longer hold one
-- (rate_limit_release_stale), fills the free slots with waiting jobs, and drops the key when its two
-- sets are both empty (its config hash too, and its name from K.rl_keys). Adds to the counts of `out`
-- ({seen, freed, promoted, dropped}); returns the promoted ids.
local function sweep_rate_limit(rl_key, now_int, now_text, out)
  out.seen = out.seen + 1
  local allowed, waiting, promoted = K.rl_allowed(rl_key), K.rl_waiting(rl_key), {}
  for _, id in ipairs(redis.call('ZRANGE', allowed, 0, -1)) do
    local freed, moved = rate_limit_release_stale(id, rl_key, now_int, now_text)
    out.freed = out.freed + freed
    for _, p in ipairs(moved) do promoted[#promoted + 1] = p end
  end
  local concurrency, moved = rate_limit_concurrency(rl_key), {}
  if concurrency > 0 then moved = rate_limit_promote(rl_key, concurrency, now_int, now_text) end
  for _, p in ipairs(moved) do promoted[#promoted + 1] = p end
  out.promoted = out.promoted + #promoted
  if #moved == 0 and redis.call('ZCARD', allowed) == 0 and redis.call('ZCARD', waiting) == 0 then
    redis.call('SREM', K.rl_keys, rl_key)
    redis.call('DEL', allowed, waiting, K.rl(rl_key))
    out.dropped = out.dropped + 1
  end
  return promoted
end

-- RQ 3.0's rate-limit upkeep: sweep_rate_limit for every key in K.rl_keys.
-- Returns {seen = keys, freed = slots, promoted = jobs, dropped = keys}.
local function sweep_rate_limits(now_int, now_text)
  local out = {seen = 0, freed = 0, promoted = 0, dropped = 0}
  for _, rl_key in ipairs(redis.call('SMEMBERS', K.rl_keys)) do
    sweep_rate_limit(rl_key, now_int, now_text, out)
  end
  return out
end

-- Takes a job out of its queue (optionally; out of its priority lane too when `priority`, its
-- hash's field, is set) and out of the registry its status puts it in, as RQ's
-- Job._remove_from_registries does.
local function remove_from_registries(id, origin, status, remove_from_queue, priority)
  if remove_from_queue then
    redis.call('LREM', K.queue(origin), 1, id)
    if priority then redis.call('ZREM', K.priority(origin), id) end
  end
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
  elseif status == 'ready_to_enqueue' then  -- RQ 3.0
    redis.call('ZREM', K.ready(origin), id)
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
-- queue (at the front with enqueue_at_front). `exclude` (or nil): see dependencies_met. With `park`,
-- each is moved into its queue's ready registry instead, status ready_to_enqueue, to be pushed by
-- enqueue_ready (RQ 3.0's Queue.move_dependents_to_ready).
-- Returns how many were released, true when `parent_id` had no dependents set, and the released
-- ones as a flat list {origin, id, origin, id, ...}.
local function release_dependents(parent_id, parent_status, now_text, exclude, park)
  local dependents_key = K.dependents(parent_id)
  local dependent_ids = redis.call('SMEMBERS', dependents_key)
  if #dependent_ids == 0 then return 0, true, {} end  -- (and no dependents set: an empty set is no key)
  local released, pairs_out = {}, {}
  for _, dep_id in ipairs(dependent_ids) do
    local key = K.job(dep_id)
    local data, status, origin, allow, at_front, ttl, rl_key, rl_concurrency, priority, events = unpack(redis.call(
      'HMGET', key, 'data', 'status', 'origin', 'allow_dependency_failures', 'enqueue_at_front', 'ttl',
      'rate_limit_key', 'rate_limit_concurrency', 'priority', 'events'))
    local allow_failure = allow == '1'
    if data and status ~= 'canceled' and dependencies_met(dep_id, allow_failure, parent_id, parent_status, exclude) then
      origin = origin or ''
      redis.call('ZREM', K.deferred(origin), dep_id)
      expire_job_keys(dep_id, ttl)
      if park then
        redis.call('HSET', key, 'status', 'ready_to_enqueue')
        redis.call('ZADD', K.ready(origin), epoch_now(), dep_id)
      elseif rl_key and rl_key ~= '' then  -- RQ 3.0 rate limit: waits for a slot (see rate_limit_wait)
        redis.call('SADD', K.queues, K.queue(origin))
        rate_limit_wait(dep_id, rl_key, rl_concurrency, epoch_now(), now_text)
      else
        redis.call('HSET', key, 'status', 'queued', 'enqueued_at', now_text)
        push_job(origin, dep_id, at_front == '1', priority)
        job_event(events, origin, 'queued', dep_id)
      end
      released[#released + 1] = dep_id
      pairs_out[#pairs_out + 1] = origin
      pairs_out[#pairs_out + 1] = dep_id
    end
  end
  if #released == #dependent_ids then
    redis.call('DEL', dependents_key)
  elseif #released > 0 then
    redis.call('SREM', dependents_key, unpack(released))
  end
  return #released, false, pairs_out
end

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

-- Reads ARGV (or `args`) from position `i` on: next() returns the next argument, list() a counted list,
-- pairs() a counted list of field/value pairs (flat), span() a counted list's position (and skips it).
local function argv_reader(i, args)
  local r = {}
  args = args or ARGV
  function r.next() local v = args[i]; i = i + 1; return v end
  function r.span()
    local n = tonumber(r.next())
    local start = i
    i = i + n
    return start, n
  end
  function r.list(width)
    local n, out = tonumber(r.next()) * (width or 1), {}
    for j = 1, n do out[j] = args[i + j - 1] end
    i = i + n
    return out
  end
  return r
end

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
  if string.find(id, '[^A-Za-z0-9_-]') then return 'job id outside [A-Za-z0-9_-]' end
  return nil
end

-- Worker `w` busy with the jobs it started (flat: id, execution id, ...; the last one its current
-- job), as start_job leaves it: HSET and EXPIRE of its hash, its RQ 3.0 executions index.
local function worker_started(w, started, ttl, c)
  local wkey, members = K.worker(w), {}
  for j = 1, #started, 2 do members[#members + 1] = started[j] .. ':' .. started[j + 1] end
  redis.call('HSET', wkey, 'state', 'busy', 'current_job', started[#started - 1], 'current_job_working_time', 0,
    'last_heartbeat', c.now_text)
  redis.call('EXPIRE', wkey, ttl)
  -- RQ 3.0 readers find a worker's running jobs here, not in current_job; its TTL is the worker
  -- hash's, as RQ 3.0 leaves it once its start transaction is done
  redis.call('SADD', K.worker_executions(w), unpack(members))
  redis.call('EXPIRE', K.worker_executions(w), ttl)
end

-- Marks job `id` (taken from `queue`) started by worker `w` with execution id `x`, as RQ's worker
-- does in its prepare steps: job fields and PERSIST, the execution hash and zset, the started
-- registry entry, the worker's current job. `c` holds now_text, now_float, now_int, interval,
-- grace (seconds a heartbeat TTL adds) and max_dropped (see claim_next); with a list c.started,
-- the worker's writes are left to the caller (worker_started), the id and execution id added to it.
-- Returns the job hash as it was before (flat HGETALL), or nil when it has no hash (or the key is
-- not a hash) or no data.
local function start_job(id, queue, w, x, c)
  local key = K.job(id)
  local job = redis.pcall('HGETALL', key)
  if job.err then return nil end  -- the key is not a hash: no job to start
  local has_data, timeout, prioritized, events = false, nil, false, nil
  for j = 1, #job, 2 do
    local f = job[j]
    if f == 'data' then
      has_data = true
    elseif f == 'timeout' then
      timeout = job[j + 1]
    elseif f == 'priority' then
      prioritized = true
    elseif f == 'events' then
      events = job[j + 1]
    end
  end
  if not has_data then return nil end
  -- (taken from the list by a blocking move, or by LPOP: its lane's entry goes too)
  if prioritized then redis.call('ZREM', K.priority(queue), id) end
  local ttl = heartbeat_ttl(timeout, c.interval, c.grace)
  -- A job claimed again (from a queue) is run by this execution only: any earlier one still on
  -- record belongs to a worker that lost the job (paused past its deadline, then recovered) and is
  -- fenced off here, so its late finish or heartbeat writes nothing.
  for _, old in ipairs(redis.call('ZRANGE', K.executions(id), 0, -1)) do end_execution(id, queue, old) end
  redis.call('HSET', key, 'status', 'started', 'started_at', c.now_text, 'last_heartbeat', c.now_text,
    'worker_name', w)
  redis.call('PERSIST', key)
  local execution = K.execution(id, x)
  redis.call('HSET', execution, 'id', x, 'created_at', c.now_float, 'last_heartbeat', c.now_float, 'worker_name', w)
  redis.call('EXPIRE', execution, ttl)
  redis.call('ZADD', K.executions(id), c.now_int + ttl + c.grace, x)
  redis.call('EXPIRE', K.executions(id), ttl + c.grace)
  redis.call('ZADD', K.started(queue), c.now_int + ttl, id .. ':' .. x)
  job_event(events, queue, 'started', id, w)
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

-- Pops and starts the first available job from `queues` (in the order given), a queue's priority
-- lanes before the rest of its list (pop_prioritized). Ids without a
-- job hash are dropped (returned, for the worker to log); ids outside RQ's pattern or longer than
-- c.max_id_len are dead-lettered (returned flat: queue, id, reason, ...); at most c.max_dropped of both per
-- call. With <prefix>suspended set, claims nothing; a queue in <prefix>paused-queues is skipped.
-- Returns {id or false, queue or false, job hash (flat) or false, dropped ids, suspended 0/1,
--   dead-lettered ids (flat: queue, id, reason, ...)}.
local function claim_next(queues, w, x, c)
  local dropped, dead = {}, {}
  -- (c.unsuspended: an earlier claim of the same call found it unset)
  if not c.unsuspended and redis.call('EXISTS', PREFIX .. 'suspended') == 1 then
    return {false, false, false, dropped, 1, dead}
  end
  local paused = paused_queues(c)
  for _, queue in ipairs(queues) do
    while not paused[queue] do
      local id = pop_prioritized(queue, c) or redis.call('LPOP', K.queue(queue))
      if not id then break end
      local unusable = unusable_id(id, c.max_id_len)
      if unusable then
        dead_letter(queue, id, unusable, c)
        dead[#dead + 1] = queue
        dead[#dead + 1] = id
        dead[#dead + 1] = unusable
      else
        local job = start_job(id, queue, w, x, c)
        if job then return {id, queue, job, dropped, 0, dead} end
        dropped[#dropped + 1] = id
      end
      if #dropped + #dead / 3 >= c.max_dropped then return {false, false, false, dropped, 0, dead} end
    end
  end
  return {false, false, false, dropped, 0, dead}
end

-- The job execution `x` of worker `w` already started, when a claim is sent again because the reply
-- to the first one was lost (the connection dropped): {id, queue, job hash (flat), {}, 0, {}}, or nil.
local function resumed_claim(w, x)
  if w == '' or x == '' then return nil end
  local id = redis.call('HGET', K.worker(w), 'current_job')
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


