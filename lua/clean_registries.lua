-- clean_registries.lua: one maintenance pass over a worker's queues, RQ 2.12's clean_registries
-- (section 10 of the layout) in one call: expired finished and failed entries, abandoned jobs
-- (a started-registry entry whose heartbeat deadline has passed, of a job still started: returned,
-- not settled: the caller plans each with rqfast/engine.py and records it with finish_job.lua,
-- fenced on the entry), ids stranded in the intermediate list (put back at the head of their queue
-- once seen there for `stuck_after` seconds; RQ fails them instead), and dead workers in the
-- per-queue worker set. Each queue is done under RQ's lock, <prefix>clean_registries:<q>, so a
-- queue an RQ worker is cleaning is left alone. Then, as RQ's workers do after it (Group.clean_registries,
-- under no lock in RQ 2.12, under RQ 3.0's <prefix>clean_groups lock when a TTL is given), every group
-- loses the ids of jobs whose hash is gone, and groups left empty leave <prefix>groups. RQ 3.0's ReadyJobRegistry is recovered too, as its maintenance does: a dependent an
-- RQ 3.0 process left in <prefix>ready:<q> (it died between releasing and pushing it) is pushed.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] now as float epoch, ARGV[3] expiry cutoff (integer epoch: entries scored
-- at or below it have expired; now, unless a caller pins another time), ARGV[4] "all" for the
-- whole pass under the lock, "started" for the abandoned jobs only and without the lock (RQ's
-- StartedJobRegistry.cleanup), "ready" for the ready registries only, without the lock (RQ 3.0's
-- ReadyJobRegistry.cleanup), ARGV[5] lock TTL (s), ARGV[6] seconds an id must sit in an
-- intermediate list before it is put back, ARGV[7] TTL (s) of the first-seen marker,
-- ARGV[8] n job fields to return with each abandoned job, field names..., then n queues, queue names...,
-- then now as UTC text (the enqueued_at of jobs RQ 3.0's rate-limit sweep promotes; a whole pass only),
-- then the TTL (s) of the group-cleaning lock a whole pass takes before it cleans groups (0: no lock)
-- Returns: {abandoned jobs (each {queue, started-registry member, the job fields asked for, in
--   order}), rescued intermediate ids (flat: queue, id), {finished entries expired, failed entries
--   expired, intermediate ids dropped (no job hash, or not queued), dead workers removed, group
--   job ids pruned, groups dropped, rate-limit slots freed, rate-limited jobs promoted, ready
--   dependents pushed (or parked for a rate-limit slot), ready entries dropped}, queues
--   skipped because their lock was held, ids of the ready dependents enqueued}

--@include _common.lua
--@include _argv.lua
--@include _rate_limit_sweep.lua
--@include _ready.lua
--@include _groups.lua

local r = argv_reader(2)
local now_float_text = r:next()
local now_float = tonumber(now_float_text)
local cutoff = r:next()
local mode = r:next()
local whole = mode == 'all'
local lock_ttl, stuck_after, first_seen_ttl = r:next(), tonumber(r:next()), r:next()
local wanted = {'data', 'status'}
for _, name in ipairs(r:list()) do wanted[#wanted + 1] = name end
local queues = r:list()
local now_text = r:next()
local group_lock_ttl = tonumber(r:next()) or 0

local function lock_key(q) return PREFIX .. 'clean_registries:' .. q end
local function first_seen_key(q, id) return K.intermediate(q) .. ':first_seen:' .. id end
local function job_id_of(member) return string.match(member, '^([^:]*)') end

local abandoned, rescued, locked, ready_ids = {}, {}, {}, {}
local stats = {0, 0, 0, 0, 0, 0, 0, 0}
local ready_dropped = 0

-- Only a job still marked started was abandoned (once per job); any other expired entry was
-- settled since, or its job is gone: it is only dropped.
local function clean_started(q)
  local started = K.started(q)
  local seen = {}
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', started, 0, cutoff)) do
    local id = job_id_of(member)
    local job = redis.call('HMGET', K.job(id), unpack(wanted))
    if job[1] and job[2] == 'started' and not seen[id] then
      seen[id] = true
      local values = {}
      for i = 3, #wanted do values[i - 2] = job[i] end
      abandoned[#abandoned + 1] = {q, member, values}
    else
      redis.call('ZREM', started, member)
    end
  end
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

-- RQ 3.0's ReadyJobRegistry.cleanup: every entry of <prefix>ready:<q> is enqueued when its job is
-- still ready_to_enqueue, else dropped (see enqueue_ready in _ready.lua).
local function clean_ready(q)
  for _, id in ipairs(redis.call('ZRANGE', K.ready(q), 0, -1)) do
    if enqueue_ready(q, id, math.floor(now_float), now_text) then
      ready_ids[#ready_ids + 1] = id
    else
      ready_dropped = ready_dropped + 1
    end
  end
end

for _, q in ipairs(queues) do
  if mode == 'ready' then
    clean_ready(q)
  elseif not whole then
    clean_started(q)
  elseif redis.call('SET', lock_key(q), 1, 'NX', 'EX', lock_ttl) then
    stats[1] = stats[1] + redis.call('ZREMRANGEBYSCORE', K.finished(q), 0, cutoff)
    clean_started(q)
    stats[2] = stats[2] + redis.call('ZREMRANGEBYSCORE', K.failed(q), 0, cutoff)
    clean_workers(q)
    clean_intermediate(q)
    clean_ready(q)
    redis.call('DEL', lock_key(q))
  else
    locked[#locked + 1] = q
  end
end
if whole and (group_lock_ttl == 0 or redis.call('SET', K.group_cleaning, 1, 'NX', 'EX', group_lock_ttl)) then
  local groups = clean_groups_of({}, true, true)
  stats[5], stats[6] = groups[2], groups[3]
end
if whole then
  local swept = sweep_rate_limits(math.floor(now_float), now_text)  -- RQ 3.0 rate limits
  stats[7], stats[8] = swept.freed, swept.promoted
end
stats[#stats + 1] = #ready_ids
stats[#stats + 1] = ready_dropped
return {abandoned, rescued, stats, locked, ready_ids}
