-- enqueue_ready_jobs.lua: RQ 3.0's ReadyJobRegistry.enqueue_jobs: each named job still in the
-- queue's ready registry leaves it; if its job is still ready_to_enqueue it is enqueued (status
-- queued, enqueued_at now, at the front with enqueue_at_front; a rate-limited one waits for a slot),
-- else the stale entry is only dropped (see enqueue_ready in _ready.lua). An id not in the
-- registry (another caller took it) is left alone, so no job is pushed twice.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] queue name, ARGV[3] now as UTC text, ARGV[4] now as an integer epoch,
-- ARGV[5..] job ids
-- Returns: the ids enqueued (or made to wait for a rate-limit slot), in the order given.

--@include _common.lua
--@include _ready.lua

local q, now_text, now_int = ARGV[2], ARGV[3], tonumber(ARGV[4])
local enqueued = {}
for i = 5, #ARGV do
  local id = ARGV[i]
  if redis.call('ZSCORE', K.ready(q), id) and enqueue_ready(q, id, now_int, now_text) then
    enqueued[#enqueued + 1] = id
  end
end
return enqueued
