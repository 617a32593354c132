-- _lanes.lua: pushing a job onto its queue, and rqfast's priority lanes.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua

-- Priority lanes (rqfast's own, additive). A job enqueued with a priority p (0..9, 0 first; its
-- job hash field `priority`) goes onto its queue's list as any job does, so RQ's tools count it and
-- RQ's workers run it (in list order), and its id joins the sorted set K.priority(queue) too, which
-- rqfast's claim reads first (pop_prioritized). Lane p holds the scores [p * PRIORITY_LANE,
-- (p + 1) * PRIORITY_LANE): a job joins behind the last of its lane (before the first, at_front),
-- the first one of an empty lane at its middle. PRIORITY_LANE is the key's format (rqfast.keys'
-- PRIORITY_LANE), not a tunable.
local PRIORITY_LANE = 1e12

-- The lane of a stored `priority` field, or nil when there is none (or it is not an integer 0..9).
local function priority_lane(priority)
  local p = tonumber(priority)
  if p and p >= 0 and p <= 9 and p == math.floor(p) then return p end
  return nil
end

-- Adds job `id` (already on `queue`'s list) to its lane in K.priority(queue); nothing without a lane.
local function add_to_lanes(queue, id, priority, at_front)
  local p = priority_lane(priority)
  if not p then return end
  local key, low = K.priority(queue), p * PRIORITY_LANE
  local high = low + PRIORITY_LANE - 1
  local low_text, high_text = string.format('%.0f', low), string.format('%.0f', high)
  local edge, score
  if at_front then
    edge = redis.call('ZRANGEBYSCORE', key, low_text, high_text, 'WITHSCORES', 'LIMIT', 0, 1)
  else
    edge = redis.call('ZREVRANGEBYSCORE', key, high_text, low_text, 'WITHSCORES', 'LIMIT', 0, 1)
  end
  if #edge == 0 then
    score = low + PRIORITY_LANE / 2
  else
    score = tonumber(edge[2]) + (at_front and -1 or 1)
  end
  redis.call('ZADD', key, string.format('%.0f', score), id)
end

-- Pushes an id onto a queue and registers the queue, as RQ's enqueue does; with a `priority` (the
-- job hash's field; nil, false or '' for none), into its priority lane as well. `registered`: the
-- caller SADDed the queue to K.queues in this call already.
local function push_job(queue, id, at_front, priority, registered)
  local key = K.queue(queue)
  if not registered then redis.call('SADD', K.queues, key) end
  if at_front then
    redis.call('LPUSH', key, id)
  else
    redis.call('RPUSH', key, id)
  end
  if priority then add_to_lanes(queue, id, priority, at_front) end
end
