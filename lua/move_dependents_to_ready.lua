-- move_dependents_to_ready.lua: RQ 3.0's Queue.move_dependents_to_ready: the deferred dependents of
-- a job whose dependencies are now met leave their deferred registry and the job's dependents set,
-- take status ready_to_enqueue and enter their own queue's ready registry (<prefix>ready:<q>),
-- from which enqueue_ready_jobs.lua (or a maintenance pass) pushes them. A dependent that is
-- canceled, has no hash or still waits for another job stays.
--
-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call: it routes the call on a Redis
--   Cluster; the script names its keys from ARGV (the prefix, ARGV[1]: see _common.lua) and reads no KEYS
-- ARGV[1] prefix, ARGV[2] the job's id, ARGV[3] its status as the caller sees it ("" when the
-- caller passes none: then it is not checked), ARGV[4] a dependency id to leave out of every check
-- ("" for none; RQ's exclude_job_id)
-- Returns: the dependents moved, flat: {origin, id, origin, id, ...}.

--@include _dependents.lua

local parent_status = ARGV[3]
if parent_status == '' then parent_status = false end
local exclude = ARGV[4]
if exclude == '' then exclude = false end
local _, _, moved = release_dependents(ARGV[2], parent_status, '', exclude, true)
return moved
