-- _events.lua: rqfast's lifecycle events (one XADD per state change of a job that asks for them).
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua

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
