-- heartbeat.lua: keep a worker, and the jobs it is running, visibly alive (RQ's
-- maintain_heartbeats, for every job in flight, plus the worker's own heartbeat).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] worker name, ARGV[3] worker hash TTL (s), ARGV[4] now as UTC text,
-- ARGV[5] now as float epoch, ARGV[6] now as integer epoch, ARGV[7] job heartbeat TTL (s),
-- ARGV[8] heartbeat grace (s: a job's executions entry outlives its heartbeat TTL by this much),
-- ARGV[9] working time of the current job (s, "" when idle),
-- ARGV[10] number of jobs in flight, then per job: id, queue, execution id
-- Fenced: a job whose execution hash is gone (recovered by maintenance, claimed again, or expired)
-- is not this worker's any more: nothing of it is touched (but for its member of the worker's own
-- RQ 3.0 executions index, which goes), and its id is returned.
-- Returns: {1 if <prefix>suspended is set else 0, ids of the jobs in flight no longer owned}.

--@include _common.lua
--@include _argv.lua

local r = argv_reader(2)
local w, worker_ttl, now_text, now_float = r:next(), r:next(), r:next(), r:next()
local now_int, ttl, grace, working = tonumber(r:next()), tonumber(r:next()), tonumber(r:next()), r:next()
local jobs = r:list(3)
local wkey = K.worker(w)
local lost = {}
-- (an EXPIRE first: a full Redis refuses no write of a script that has written; scriptload.ALLOW_OOM)
local kept = redis.call('EXPIRE', wkey, worker_ttl)
redis.call('EXPIRE', K.worker_executions(w), worker_ttl)  -- RQ 3.0's heartbeat does the same
redis.call('HSET', wkey, 'last_heartbeat', now_text)
if working ~= '' then redis.call('HSET', wkey, 'current_job_working_time', working) end
if kept == 0 then redis.call('EXPIRE', wkey, worker_ttl) end  -- (the hash was gone: made anew)
for j = 1, #jobs, 3 do
  local id, queue, x = jobs[j], jobs[j + 1], jobs[j + 2]
  local execution = K.execution(id, x)
  if x ~= '' and redis.call('EXISTS', execution) == 0 then
    lost[#lost + 1] = id
    redis.call('SREM', K.worker_executions(w), id .. ':' .. x)  -- not running here any more
  else
    if x ~= '' then
      redis.call('HSET', execution, 'last_heartbeat', now_float)
      redis.call('EXPIRE', execution, ttl)
    end
    redis.call('ZADD', K.started(queue), 'XX', now_int + ttl, id .. ':' .. x)
    redis.call('ZADD', K.executions(id), 'XX', now_int + ttl + grace, x)
    redis.call('EXPIRE', K.executions(id), ttl + grace)
    if redis.call('EXISTS', K.job(id)) == 1 then redis.call('HSET', K.job(id), 'last_heartbeat', now_text) end
  end
end
return {redis.call('EXISTS', PREFIX .. 'suspended'), lost}
