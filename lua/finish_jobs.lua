-- finish_jobs.lua: record the outcomes of several jobs one worker ran at once and claim up to k
-- more, in one call (a worker with concurrency > 1; with no outcome it is a claim of up to k).
-- Each outcome is written by finish_one (lua/_finish.lua), all of finish_job.lua, so an outcome
-- writes the same (fences included) in both scripts. Each is passed to it with no worker name, no
-- claim; the worker's own writes (its counters, its RQ 3.0 executions index, its state and current
-- job) are made here, once per call rather than once per job: the same end state, fewer commands.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] worker name, ARGV[3] now as UTC text, ARGV[4] now as float epoch,
-- ARGV[5] now as integer epoch, ARGV[6] job monitoring interval (s), ARGV[7] heartbeat grace (s),
-- ARGV[8] most ids without a job hash to drop, ARGV[9] longest usable job id, ARGV[10] window rate
-- limits' slack (see window_take), ARGV[11] worker idle TTL (s), ARGV[12] a job of this worker still
-- running after these outcomes ("" for none: with nothing claimed either, the worker goes idle)
-- ARGV[13] n outcomes, then per outcome: job id, execution id, worker counter to increment (or
--   ""), working time (s), m, then finish_job.lua's ARGV[2] to ARGV[m + 1] (worker name "", claim "0")
-- then: k, k new execution ids (one per job to claim: up to k are claimed, in queue order),
--   n queues, queue names, then "1" only when the call is sent again after a lost reply, as it was
--   (the same execution ids): an execution id the first call claimed a job with is answered with
--   that job (found in the worker's executions index) rather than used for another claim
-- Returns: {recorded (per outcome: 1, or 0 when a fence held it off), claims (each {job id, queue,
--   job hash as flat HGETALL before the claim}), dropped ids (no job hash), 1 if <prefix>suspended
--   is set else 0, dead-lettered ids (flat: queue, id, reason, ...)}

--@include _common.lua
--@include _argv.lua
--@include _claim.lua
--@include _finish.lua

local r = argv_reader(2)
local w, now_text, now_float, now_int = r:take(4)
local interval, grace, max_dropped, max_id_len, window_guard, idle_ttl, still_running, n = r:take(8)
local c = {now_text = now_text, now_float = now_float, now_int = tonumber(now_int)}
c.interval, c.grace, c.max_dropped = tonumber(interval), tonumber(grace), tonumber(max_dropped)
c.max_id_len, c.window_guard = tonumber(max_id_len), tonumber(window_guard)
n = tonumber(n)
local recorded, ended, counts, forget = {}, {}, {}, {}
local wkey = K.worker(w)
for j = 1, n do
  local id, x, counter, working_time = r:take(4)
  local start = r:span()
  local ok = finish_one(ARGV, start - 2)[7]  -- (its ARGV[2] is ARGV[start]; [7]: recorded or fenced off)
  recorded[j] = ok
  if x ~= '' then forget[#forget + 1] = id .. ':' .. x end
  if ok == 1 then
    ended[#ended + 1] = {counter, working_time}
    if counter ~= '' then counts[counter] = (counts[counter] or 0) + 1 end
  end
end
-- The worker's writes for these outcomes, as one SREM, one HINCRBY per counter made where its first
-- outcome made it, and one HINCRBYFLOAT of their working times summed, made after the first outcome's
-- counter (so its fields come in the same order as with a write per outcome)
if #forget > 0 then redis.call('SREM', K.worker_executions(w), unpack(forget)) end
local working = 0
for _, e in ipairs(ended) do working = working + tonumber(e[2]) end
for j, e in ipairs(ended) do
  local counter = e[1]
  if counts[counter] then
    redis.call('HINCRBY', wkey, counter, counts[counter])
    counts[counter] = nil
  end
  if j == 1 then redis.call('HINCRBYFLOAT', wkey, 'total_working_time', #ended == 1 and e[2] or working) end
end
local xs = r:list()
local queues = r:list()
local resent = r:next() == '1'

local claims, dropped, dead, suspended = {}, {}, {}, 0
c.started = {}  -- (the worker's writes for the jobs started: once, below)
c.busy = n > 0  -- (outcomes of its jobs: the worker was busy, its hash's and index's TTLs set: see worker_started)
-- Sent again: the jobs the first call claimed, by execution id (their execution hashes still there)
local first = {}
if resent then
  for _, member in ipairs(redis.call('SMEMBERS', K.worker_executions(w))) do
    local id, x = string.match(member, '^(.+):([^:]+)$')
    if id then first[x] = id end
  end
end
for _, x in ipairs(xs) do
  local claim = first[x] and resumed_claim(w, x, first[x]) or claim_next(queues, w, x, c)
  for _, id in ipairs(claim[4]) do dropped[#dropped + 1] = id end
  for _, v in ipairs(claim[6] or {}) do dead[#dead + 1] = v end
  if claim[5] == 1 then suspended = 1 end
  if not claim[1] then break end
  c.unsuspended = true
  claims[#claims + 1] = {claim[1], claim[2], claim[3]}
end
if #c.started > 0 then worker_started(w, c.started, heartbeat_ttl(nil, c.interval, c.grace), c) end
if #claims == 0 then
  if still_running ~= '' then
    redis.call('HSET', wkey, 'state', 'busy', 'current_job', still_running)
  else
    set_worker_idle(w, c, idle_ttl)
  end
end
return {recorded, claims, dropped, suspended, dead}
