-- _window.lua: rqfast's window rate limits (RateLimit(key, rate=N, per=s)) at a job's start.
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _rate_limit_release.lua

-- rqfast's window rate limits: RateLimit(key, rate=N, per=s), at most N starts in any `per` seconds
-- (any half-open window, at any offset), fleet-wide. K.rl_window(key) is a zset, score an epoch
-- float: `<id>:<execution id>` for each start (at the claim's now, the started_at it writes) and
-- `<id>` for a job waiting for its planned start (a reservation). The log keeps the rule: any N + 1
-- consecutive entries span at least `per`. A job whose start now would break it is planned after
-- every entry (so waiting jobs start in order, N per window) and goes into its queue's scheduled
-- registry at that time, where rqfast's scheduler (and RQ's) puts it back on its queue: no polling.
-- Planned windows are c.window_guard * per apart beyond `per` (the claim scripts' argument,
-- defaults.RATE_WINDOW_GUARD): slack for the latency of a start.

local function window_score(t) return string.format('%.6f', t) end

-- True when an entry at time t keeps the rule: every run of rate + 1 consecutive entries through t
-- spans at least `per` (only entries within `per` of t can share such a run).
local function window_fits(log, t, rate, per)
  local raw = redis.call('ZRANGEBYSCORE', log, '(' .. window_score(t - per), '(' .. window_score(t + per), 'WITHSCORES')
  local b, k = {}, nil
  for j = 2, #raw, 2 do
    local v = tonumber(raw[j])
    if not k and v > t then b[#b + 1] = t; k = #b end
    b[#b + 1] = v
  end
  if not k then b[#b + 1] = t; k = #b end
  for i = math.max(1, k - rate), k do
    if i + rate <= #b and b[i + rate] - b[i] < per then return false end
  end
  return true
end

-- A start at t that does not fit only because planned starts follow too closely (a planned job
-- that starts late): those planned starts are pushed back just enough, in order, each no earlier
-- than `per` after the entry `rate` places before it, until `rate` in a row stay where they were;
-- each pushed job's scheduled-registry score moves with it. Returns true when that was done (t
-- fits now), false, writing nothing, when t does not fit even so (the starts before it fill the
-- window), when a start already logged after t or a job no longer in its scheduled registry would
-- have to move, or when more than `limit` entries would have to be read.
local function window_shift(log, t, rate, per, limit)
  local raw = redis.call('ZRANGEBYSCORE', log, '(' .. window_score(t - per), '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
  local b, k = {}, nil
  for j = 1, #raw, 2 do
    local v = tonumber(raw[j + 1])
    if not k and v > t then b[#b + 1] = {t, false}; k = #b end
    b[#b + 1] = {v, raw[j]}
  end
  if not k then b[#b + 1] = {t, false}; k = #b end
  if k > rate and t - b[k - rate][1] < per then return false end
  local moved, steady = {}, 0
  for j = k + 1, #b do
    local at = math.max(b[j][1], b[j - 1][1])
    if j > rate then at = math.max(at, math.ceil((b[j - rate][1] + per) * 1e6) / 1e6) end
    if at > b[j][1] then
      local id = b[j][2]
      if string.find(id, ':') then return false end
      local origin = redis.call('HGET', K.job(id), 'origin')
      if not origin or not redis.call('ZSCORE', K.scheduled(origin), id) then return false end
      moved[#moved + 1] = {id, origin, at}
      b[j][1] = at
      steady = 0
    else
      steady = steady + 1
      if steady >= rate then break end
    end
  end
  if steady < rate and #raw >= 2 * limit then return false end
  for _, m in ipairs(moved) do
    redis.call('ZADD', log, window_score(m[3]), m[1])
    redis.call('ZADD', K.scheduled(m[2]), window_score(m[3]), m[1])
  end
  return true
end

-- The log lives two windows past its last entry (a later TTL is kept).
local function window_expire(log, last, now, per)
  local ttl = math.ceil(last - now + 2 * per) + 1
  if redis.call('TTL', log) < ttl then redis.call('EXPIRE', log, ttl) end
end

-- The start of job `id` (execution x) under its window limit at time `now`: its reservation (if any)
-- is given up, then the start is logged when it fits, if need be by pushing back the planned starts
-- that follow (window_shift; returns nil), or a later time is planned and reserved (returned): after
-- every entry, `per * (1 + guard)` after the entry `rate` places before. Entries older than two
-- windows are dropped first. `limit`: most entries window_shift reads.
local function window_take(id, x, wkey, rate, per, now, guard, limit)
  local log = K.rl_window(wkey)
  redis.call('ZREMRANGEBYSCORE', log, '-inf', '(' .. window_score(now - 2 * per))
  redis.call('ZREM', log, id)
  if window_fits(log, now, rate, per) or window_shift(log, now, rate, per, limit) then
    redis.call('ZADD', log, window_score(now), id .. ':' .. x)
    window_expire(log, now, now, per)
    return nil
  end
  local newest, at = redis.call('ZREVRANGE', log, 0, rate - 1, 'WITHSCORES'), now
  if #newest > 0 then at = math.max(at, tonumber(newest[2])) end
  if #newest >= 2 * rate then at = math.max(at, tonumber(newest[2 * rate]) + per * (1 + guard)) end
  redis.call('ZADD', log, window_score(at), id)
  window_expire(log, at, now, per)
  return at
end

-- A job over its window limit, popped from `queue`: into the scheduled registry at `at` (status
-- scheduled), as Job.schedule would put it; with a concurrency limit too (`rl_key`), its slot is freed
-- and the next waiter promoted (it waits for a slot again when it comes due, as any scheduled one).
-- "<at> <queue>" goes out on <prefix>scheduler-planned: the scheduler holding the queue may be asleep
-- until later than `at` (it wakes for the earliest job it saw scheduled), and wakes for it.
local function window_defer(id, queue, at, rl_key, c)
  redis.call('SADD', K.queues, K.queue(queue))
  redis.call('HSET', K.job(id), 'status', 'scheduled')
  redis.call('ZADD', K.scheduled(queue), window_score(at), id)
  redis.call('PUBLISH', PREFIX .. 'scheduler-planned', window_score(at) .. ' ' .. queue)
  rate_limit_release(id, rl_key, c.now_int, c.now_text)
  c.deferred = (c.deferred or 0) + 1
end
