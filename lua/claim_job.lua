-- claim_job.lua: claim the next job for a worker (the worker's first claim, and every claim
-- after it was idle). One call: pop from the first non-empty queue that is not paused, mark the job
-- started.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] worker name, ARGV[3] now as UTC text, ARGV[4] now as float epoch,
-- ARGV[5] now as integer epoch, ARGV[6] job monitoring interval (s), ARGV[7] heartbeat grace (s,
-- added to a running job's heartbeat TTL), ARGV[8] most ids without a job hash to drop before
-- returning, ARGV[9] worker idle TTL (s), ARGV[10] new execution id, ARGV[11] id already moved
-- into `queue`'s intermediate list by a blocking BLMOVE ("" for none), ARGV[12] that queue,
-- ARGV[13] longest usable job id, ARGV[14] window rate limits' slack (a fraction of `per`, see
-- window_take), ARGV[15] number of queues, queue names...
-- Sent again with the same execution id after a lost reply, it answers the job that execution
-- already started instead of claiming another.
-- Returns: {job id or false, queue or false, job hash (flat HGETALL, before the claim) or false,
--   dropped ids (popped ids that had no job hash), 1 if <prefix>suspended is set else 0,
--   dead-lettered ids, flat: queue, id, reason, ... (ids outside RQ's pattern, see claim_next)}

--@include _common.lua
--@include _argv.lua
--@include _claim.lua

local r = argv_reader(2)
local w, now_text, now_float, now_int = r:take(4)
local interval, grace, max_dropped, idle_ttl, x, moved_id, moved_queue, max_id_len, window_guard = r:take(9)
local c = {now_text = now_text, now_float = now_float, now_int = tonumber(now_int), interval = tonumber(interval)}
c.grace, c.max_dropped = tonumber(grace), tonumber(max_dropped)
c.max_id_len, c.window_guard = tonumber(max_id_len), tonumber(window_guard)
local queues = r:list()

local resumed = resumed_claim(w, x)
if resumed then return resumed end

-- A queue paused since the blocking move took the id: the id goes back to the head of its queue.
if moved_id ~= '' and paused_queues(c)[moved_queue] then
  if redis.call('LREM', K.intermediate(moved_queue), 1, moved_id) > 0 then
    redis.call('LPUSH', K.queue(moved_queue), moved_id)
  end
  moved_id = ''
end

-- The moved id is claimed only while it is still in the intermediate list: maintenance puts an
-- id stranded there for a minute back on its queue, and it must not be both queued and started.
if moved_id ~= '' and redis.call('LREM', K.intermediate(moved_queue), 1, moved_id) > 0 then
  local unusable = unusable_id(moved_id, c.max_id_len)
  local job, deferred = nil, false
  if not unusable then
    job, deferred, unusable = start_job(moved_id, moved_queue, w, x, c)  -- (deferred: its window rate limit)
  end
  if unusable then dead_letter(moved_queue, moved_id, unusable, c) end
  if job then return {moved_id, moved_queue, job, {}, 0, {}} end
  local claim = claim_next(queues, w, x, c)
  if unusable then
    table.insert(claim[6], 1, unusable)
    table.insert(claim[6], 1, moved_id)
    table.insert(claim[6], 1, moved_queue)
  elseif not deferred then
    table.insert(claim[4], 1, moved_id)
  end
  if not claim[1] then set_worker_idle(w, c, idle_ttl) end
  return claim
end
local claim = claim_next(queues, w, x, c)
if not claim[1] then set_worker_idle(w, c, idle_ttl) end
return claim
