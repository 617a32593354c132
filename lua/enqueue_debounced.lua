-- enqueue_debounced.lua: one enqueue with debounce=(key, delay), in one call: the job the key names
-- (the burst's earlier one), if it is still waiting and has never started, is deleted from wherever
-- it waits (queue, scheduled/deferred/ready registry, rate-limit wait); the key then names the new
-- job, which enqueue_jobs.lua schedules at now + delay. Called by rqfast.scripts.enqueue_debounced()
-- for Queue.enqueue*(debounce=...).
--
-- This part never returns: a call of enqueue_jobs() (lua/_enqueue.lua, the work of enqueue_jobs.lua)
-- follows, which stores the job (its reply is this script's).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV: enqueue_jobs.lua's ARGV with one record (mode "schedule", its score now + delay, group ""),
--   then 2 more:
--   key      the debounce key (<prefix>debounce:<key> holds the id of the burst's current job)
--   key_ttl  seconds <prefix>debounce:<key> lives (the delay and a grace: see DEBOUNCE_KEY_GRACE)
-- Returns: enqueue_jobs.lua's reply ({"scheduled"}).

--@include _common.lua
--@include _rate_limit_release.lua
--@include _registries.lua
--@include _enqueue.lua

do
  local n = #ARGV
  local debounce_key, key_ttl = K.debounce(ARGV[n - 1]), ARGV[n]
  local id, now_text, now_int = ARGV[7], ARGV[3], tonumber(ARGV[4])
  local old = redis.call('GET', debounce_key)
  if old then
    local f = redis.call('HMGET', K.job(old), 'status', 'origin', 'started_at', 'group_id')
    local waiting = f[1] == 'scheduled' or f[1] == 'queued' or f[1] == 'deferred'
      or f[1] == 'ready_to_enqueue' or f[1] == 'rate_limited'
    -- a job that has started (even once: a retry or a repeat waits again) ended its burst
    if waiting and (not f[3] or f[3] == '') then
      local rl_key = rate_limit_key_of(old)
      remove_from_registries(old, f[2] or '', f[1], true)
      if f[4] and f[4] ~= '' then redis.call('SREM', K.group(f[4]), old) end
      redis.call('DEL', K.job(old), K.dependents(old), K.dependencies(old))
      if rl_key then rate_limit_forget(old, rl_key, now_int, now_text) end  -- its slot, if promoted
    end
  end
  redis.call('SET', debounce_key, id, 'EX', key_ttl)
end
return enqueue_jobs()
