-- _common.lua: the key table, included by each script that names a key (`--@include _common.lua`).
-- RQ 2.12's key names, built from the prefix the caller passes as ARGV[1] (RQ's is "rq" and a
-- colon); the writes scripts share are in the other lua/_*.lua files. Numbers (TTLs, limits) come in as
-- arguments from rqfast/defaults.py; none is written here. rqfast/keys.py is the Python twin of the key table.
-- KEYS[1] is always the prefix's `queues` key (rqfast.keys.SLOT_KEY), declared only so that a Redis
-- Cluster routes the call to the slot of the prefix's hash tag (every key below shares it).
--
-- PREFIX and K are the call's: use_prefix(ARGV[1]) sets them. Sent as a script (EVALSHA) this file runs
-- on every call and sets them at its end; loaded as a Redis function library (rqfast/scriptload.py) it
-- runs once, and each call sets them (the table built once per prefix, kept in KEY_TABLES).
local PREFIX, K
local KEY_TABLES, KEY_TABLES_KEPT = {}, 0

local function key_table(PREFIX)
  return {
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
    -- rqfast's window rate limits (RateLimit(key, rate=N, per=s)): a key's log of starts and reservations
    rl_window = function(k) return PREFIX .. 'rl:' .. k .. ':window' end,
  }
end

local function use_prefix(prefix)
  PREFIX = prefix
  K = KEY_TABLES[prefix]
  if K == nil then
    K = key_table(prefix)
    if KEY_TABLES_KEPT < 8 then  -- (a function library lives on: a bounded number of prefixes kept)
      KEY_TABLES[prefix], KEY_TABLES_KEPT = K, KEY_TABLES_KEPT + 1
    end
  end
end

-- `read` as a function of one argument whose answers are kept per server (a function library keeps
-- them between calls; a script starts empty on every call), for what a worker's calls repeat: numbers
-- (tonumber's strtod and redis.call's snprintf of a Lua number cost more than a small command) and the
-- shapes of their arguments. Bounded: emptied when full. A nil answer is not kept.
local MEMO_SIZE = 2 ^ 8  -- (a bound on memory, not a tunable)

local function kept(read)
  local answers, count = {}, 0
  return function(key)
    local answer = answers[key]
    if answer == nil then
      answer = read(key)
      if answer == nil then return nil end
      if count >= MEMO_SIZE then answers, count = {}, 0 end
      answers[key], count = answer, count + 1
    end
    return answer
  end
end

-- tonumber(s), and an integer as redis.call's argument text.
local num = kept(function(s) return tonumber(s) end)
local text = kept(function(n) return string.format('%d', n) end)

-- A script (EVAL/EVALSHA) has its ARGV now; a function library has none while it loads (its ARGV is a
-- local the library declares, set per call).
if ARGV then use_prefix(ARGV[1]) end
