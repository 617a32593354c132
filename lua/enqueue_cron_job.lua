-- enqueue_cron_job.lua: one run of a cron job, in one call: refuse it when another scheduler (rq's or
-- rqfast's) already enqueued it, else record it in the cron job's history and in the cron job
-- registry as RQ's CronJob.enqueue does, then store and push the job. Called by
-- rqfast.scripts.enqueue_cron_job() for rqfast.cron.CronJob.
--
-- This part ends in a call of enqueue_jobs() (lua/_enqueue.lua, the work of enqueue_jobs.lua) when it
-- does not return first: that call stores the job (its reply is this script's).
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV: enqueue_jobs.lua's ARGV with one record (mode "queue", group ""), then 7 more:
--   name         the cron job's name (its history is <prefix>cron_job:<name>:jobs)
--   window       "" to enqueue unconditionally (CronJob.enqueue); else an epoch: refuse when the
--                history holds, scored at or after it, a job that is not one of `own` and whose hash
--                has this origin and description, or has no hash any more (a run that may have been it)
--   description  the job's description (its function and arguments)
--   own          the ids this scheduler enqueued itself, space separated (never a reason to refuse)
--   score        the history and registry score: the job's enqueued_at as an epoch with decimals
--   limit        how many ids the history keeps (the newest)
--   ttl          the history's TTL in seconds
-- Returns: enqueue_jobs.lua's reply ({"queued"}) when enqueued; {"refused", score} when another
--   scheduler enqueued the run already (score: that job's history score, the newest such).

--@include _common.lua
--@include _enqueue.lua

do
  local n = #ARGV
  local name, window, description, own = ARGV[n - 6], ARGV[n - 5], ARGV[n - 4], ARGV[n - 3]
  local score, limit, ttl = ARGV[n - 2], tonumber(ARGV[n - 1]), ARGV[n]
  local history = K.cron_job_history(name)
  if window ~= '' then
    local queue_name, own_ids, found = ARGV[2], ' ' .. own .. ' ', nil
    local entries = redis.call('ZRANGEBYSCORE', history, window, '+inf', 'WITHSCORES')
    for j = 1, #entries, 2 do
      local id = entries[j]
      if not string.find(own_ids, ' ' .. id .. ' ', 1, true) then
        local job = redis.call('HMGET', K.job(id), 'origin', 'description')
        if (not job[1] and not job[2]) or (job[1] == queue_name and job[2] == description) then
          found = entries[j + 1]
        end
      end
    end
    if found then return {'refused', found} end
  end
  local id = ARGV[7]  -- the one record's job id
  redis.call('ZADD', history, score, id)
  redis.call('ZREMRANGEBYRANK', history, 0, -(limit + 1))
  redis.call('EXPIRE', history, ttl)
  redis.call('ZADD', K.cron_jobs, score, name)
end
return enqueue_jobs()
