-- _registries.lua: taking a job out of its queue and registry (RQ's Job._remove_from_registries).
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua

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
