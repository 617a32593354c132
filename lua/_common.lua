-- _common.lua: the key table, included by each script that names a key (`--@include _common.lua`).
-- RQ 2.12's key names, built from the prefix the caller passes as ARGV[1] (RQ's is "rq" and a
-- colon); the writes scripts share are in the other lua/_*.lua files. Numbers (TTLs, limits) come in as
-- arguments from rqfast/defaults.py; none is written here. rqfast/keys.py is the Python twin of the key table.
-- KEYS[1] is always the prefix's `queues` key (rqfast.keys.SLOT_KEY), declared only so that a Redis
-- Cluster routes the call to the slot of the prefix's hash tag (every key below shares it).
local PREFIX = ARGV[1]

-- K.<name> is PREFIX .. head for a key without an argument (K.queues), and K.<name>(x) is
-- PREFIX .. head .. x .. tail for a key of a queue, job, worker... (K.queue(q)). Each entry is made
-- the first time a call names it: the ~35 closures of a table built in full cost every script call
-- about 1.5 µs of Redis CPU, and a script names a few.
local function key_form(name)  -- head, tail (no tail: a key without an argument)
  if name == 'queues' then return 'queues' end
  if name == 'queue' then return 'queue:', '' end
  if name == 'intermediate' then return 'queue:', ':intermediate' end
  -- rqfast's own (additive): the ids of a queue's prioritized jobs (see add_to_lanes)
  if name == 'priority' then return 'queue:', ':priority' end
  if name == 'job' then return 'job:', '' end
  if name == 'dependents' then return 'job:', ':dependents' end
  if name == 'dependencies' then return 'job::', ':dependencies' end
  if name == 'results' then return 'results:', '' end
  if name == 'executions' then return 'executions:', '' end
  if name == 'started' then return 'wip:', '' end
  if name == 'finished' then return 'finished:', '' end
  if name == 'failed' then return 'failed:', '' end
  if name == 'deferred' then return 'deferred:', '' end
  if name == 'scheduled' then return 'scheduled:', '' end
  if name == 'canceled' then return 'canceled:', '' end
  if name == 'ready' then return 'ready:', '' end  -- RQ 3.0's ReadyJobRegistry
  if name == 'group' then return 'group:', '' end
  if name == 'groups' then return 'groups' end
  if name == 'group_cleaning' then return 'clean_groups' end  -- RQ 3.0's lock: groups are cleaned once per window
  if name == 'worker' then return 'worker:', '' end
  -- RQ 3.0's index of a worker's running executions (set of `<id>:<x>`); 2.12 never reads it
  if name == 'worker_executions' then return 'worker:', ':executions' end
  if name == 'workers' then return 'workers' end
  if name == 'workers_by_queue' then return 'workers:', '' end
  if name == 'cron_jobs' then return 'cron_jobs' end
  if name == 'cron_job_history' then return 'cron_job:', ':jobs' end
  if name == 'dead_letter' then return 'dead-letter:', '' end
  if name == 'paused_queues' then return 'paused-queues' end  -- rqfast's own: names of the queues Queue.pause() paused
  if name == 'events' then return 'events:', '' end  -- rqfast's own: a queue's lifecycle events
  -- RQ 3.0's concurrency rate limits: the set of bare keys in use, a key's config hash, its slots
  if name == 'rl_keys' then return 'rl-keys' end
  if name == 'rl' then return 'rl:', '' end
  if name == 'rl_allowed' then return 'rl:', ':allowed' end
  if name == 'rl_waiting' then return 'rl:', ':rate_limited' end
  -- rqfast's own: the id of a debounce burst's job, and the holder of a throttle window (with its TTL)
  if name == 'debounce' then return 'debounce:', '' end
  if name == 'throttle' then return 'throttle:', '' end
  -- rqfast's window rate limits (RateLimit(key, rate=N, per=s)): a key's log of starts and reservations
  if name == 'rl_window' then return 'rl:', ':window' end
end

local K = setmetatable({
  -- a run's key names two ids: `<prefix>execution:<job id>:<execution id>`
  execution = function(id, x) return PREFIX .. 'execution:' .. id .. ':' .. x end,
}, {__index = function(k, name)
  local head, tail = key_form(name)
  if not head then return nil end
  local entry
  if not tail then
    entry = PREFIX .. head
  elseif tail == '' then
    local start = PREFIX .. head
    entry = function(x) return start .. x end
  else
    local start = PREFIX .. head
    entry = function(x) return start .. x .. tail end
  end
  k[name] = entry
  return entry
end})
