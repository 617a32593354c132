-- _rate_limit_sweep.lua: RQ 3.0's rate-limit upkeep (RateLimitRegistry.cleanup).
-- Included, not run on its own (see rqfast/scriptload.py).
--@include _common.lua
--@include _rate_limit.lua
--@include _rate_limit_release.lua

-- RQ 3.0's RateLimitRegistry.cleanup for one key: frees the slots of jobs that no longer hold one
-- (rate_limit_release_stale), fills the free slots with waiting jobs, and drops the key when its two
-- sets are both empty (its config hash too, and its name from K.rl_keys). Adds to the counts of `out`
-- ({seen, freed, promoted, dropped}); returns the promoted ids.
local function sweep_rate_limit(rl_key, now_int, now_text, out)
  out.seen = out.seen + 1
  local allowed, waiting, promoted = K.rl_allowed(rl_key), K.rl_waiting(rl_key), {}
  for _, id in ipairs(redis.call('ZRANGE', allowed, 0, -1)) do
    local freed, moved = rate_limit_release_stale(id, rl_key, now_int, now_text)
    out.freed = out.freed + freed
    for _, p in ipairs(moved) do promoted[#promoted + 1] = p end
  end
  local concurrency, moved = rate_limit_concurrency(rl_key), {}
  if concurrency > 0 then moved = rate_limit_promote(rl_key, concurrency, now_int, now_text) end
  for _, p in ipairs(moved) do promoted[#promoted + 1] = p end
  out.promoted = out.promoted + #promoted
  if #moved == 0 and redis.call('ZCARD', allowed) == 0 and redis.call('ZCARD', waiting) == 0 then
    redis.call('SREM', K.rl_keys, rl_key)
    redis.call('DEL', allowed, waiting, K.rl(rl_key))
    out.dropped = out.dropped + 1
  end
  return promoted
end

-- RQ 3.0's rate-limit upkeep: sweep_rate_limit for every key in K.rl_keys.
-- Returns {seen = keys, freed = slots, promoted = jobs, dropped = keys}.
local function sweep_rate_limits(now_int, now_text)
  local out = {seen = 0, freed = 0, promoted = 0, dropped = 0}
  for _, rl_key in ipairs(redis.call('SMEMBERS', K.rl_keys)) do
    sweep_rate_limit(rl_key, now_int, now_text, out)
  end
  return out
end
