-- enqueue_dependents.lua: enqueue the deferred dependents of a job whose dependencies are now met
-- (RQ's Queue.enqueue_dependents): each out of its deferred registry, status queued, pushed onto
-- its own queue (at the front with enqueue_at_front); the enqueued ones leave the job's dependents
-- set. A dependent that is canceled, has no hash or still waits for another job stays.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] the job's id, ARGV[3] its status as the caller sees it ("" when the
-- caller passes none: then it is not checked), ARGV[4] now as UTC text (enqueued_at), ARGV[5] a
-- dependency id to leave out of every check ("" for none; RQ's exclude_job_id)
-- Returns: the dependents enqueued, flat: {origin, id, origin, id, ...}.

--@include _dependents.lua

local parent_status = ARGV[3]
if parent_status == '' then parent_status = false end
local exclude = ARGV[5]
if exclude == '' then exclude = false end
local _, _, released = release_dependents(ARGV[2], parent_status, ARGV[4], exclude, false)
return released
