"""Every Redis key name rqfast reads or writes: RQ 2.12's layout, in one place.

Every name starts with PREFIX: `rq:`, or RQ_KEY_PREFIX plus a colon when that environment variable
is set when rqfast is imported (RQ 3.0's setting; rqfast.defaults reads it).

The Lua scripts build the same names from the prefix they are given (see lua/_common.lua);
the two must agree, and tests/test_keys.py checks that they do.
"""

from __future__ import annotations

from collections.abc import Callable

from rqfast.defaults import RQ_KEY_PREFIX

PREFIX = RQ_KEY_PREFIX + ':'  # 'rq:' unless RQ_KEY_PREFIX is set (RQ 3.0's setting), as in every name below

QUEUES = f'{PREFIX}queues'  # set of queue keys
# The one key every script call declares (KEYS[1]; the scripts build their other keys from the prefix):
# on a Redis Cluster it routes the call to the slot of the prefix's hash tag (rqfast.cluster).
SLOT_KEY = QUEUES
WORKERS = f'{PREFIX}workers'  # set of worker keys
SUSPENDED = f'{PREFIX}suspended'
PAUSED_QUEUES = f'{PREFIX}paused-queues'  # rqfast's own: set of the names of paused queues (Queue.pause())
GROUPS = f'{PREFIX}groups'
GROUP_CLEANING_LOCK = f'{PREFIX}clean_groups'  # RQ 3.0's: one worker cleans the groups per maintenance window

QUEUE_PREFIX = f'{PREFIX}queue:'
JOB_PREFIX = f'{PREFIX}job:'
WORKER_PREFIX = f'{PREFIX}worker:'
GROUP_PREFIX = f'{PREFIX}group:'  # a group's set of job ids; GROUPS holds the names


def format_template(build: Callable[[str], str]) -> str:
    """`build`'s key as a str.format() template, `{0}` for the name (a `{rq}`-style prefix's braces escaped)."""
    return build('\0').replace('{', '{{').replace('}', '}}').replace('\0', '{0}')


def queue_key(queue: str) -> str:
    return f'{QUEUE_PREFIX}{queue}'


def queue_name_from_key(key: str) -> str:
    if not key.startswith(QUEUE_PREFIX):
        raise ValueError(f'Not a valid RQ queue key: {key}')
    return key[len(QUEUE_PREFIX) :]


def intermediate_queue_key(queue: str) -> str:
    return f'{QUEUE_PREFIX}{queue}:intermediate'


def priority_queue_key(queue: str) -> str:
    """rqfast's own (additive): a sorted set of the ids of the queue's prioritized jobs (docs/features.md)."""
    return f'{QUEUE_PREFIX}{queue}:priority'


# The width of one lane of the priority set's scores: lane p holds [p * PRIORITY_LANE, (p + 1) * PRIORITY_LANE)
# (lua/_lanes.lua's PRIORITY_LANE; part of the key's format).
PRIORITY_LANE = 10**12


def compact_queue_key(token: str) -> str:
    """Where Queue.compact() parks a queue's ids while it drops the missing ones."""
    return f'{QUEUE_PREFIX}_compact:{token}'


def job_key(job_id: str) -> str:
    return f'{JOB_PREFIX}{job_id}'


def dependents_key(job_id: str) -> str:
    return f'{JOB_PREFIX}{job_id}:dependents'


def dependencies_key(job_id: str) -> str:
    # The double colon is RQ's, and part of the layout other tools read.
    return f'{JOB_PREFIX}:{job_id}:dependencies'


def results_key(job_id: str, prefix: str = RQ_KEY_PREFIX) -> str:
    """A job's results stream; `prefix` is for callers that read RQ_KEY_PREFIX late (RQ 3.0 reads its module's)."""
    return f'{prefix}:results:{job_id}'


def dead_letter_key(queue: str) -> str:
    """rqfast's own: a hash of the ids popped from `queue` that no worker can run (id -> "<time> <reason>")."""
    return f'{PREFIX}dead-letter:{queue}'


def events_key(queue: str) -> str:
    """rqfast's own (additive): the capped stream of a queue's job lifecycle events (rqfast.events)."""
    return f'{PREFIX}events:{queue}'


def execution_key(job_id: str, execution_id: str) -> str:
    return f'{PREFIX}execution:{job_id}:{execution_id}'


def executions_key(job_id: str) -> str:
    return f'{PREFIX}executions:{job_id}'


def worker_executions_key(worker_name: str) -> str:
    """RQ 3.0's index of a worker's running executions (a set of `<job id>:<execution id>`)."""
    return f'{WORKER_PREFIX}{worker_name}:executions'


def registry_key(queue: str) -> str:
    """RQ's BaseRegistry key; rqfast's registries all have keys of their own (below)."""
    return f'{PREFIX}registry:{queue}'


def started_registry_key(queue: str) -> str:
    return f'{PREFIX}wip:{queue}'


def finished_registry_key(queue: str) -> str:
    return f'{PREFIX}finished:{queue}'


def failed_registry_key(queue: str) -> str:
    return f'{PREFIX}failed:{queue}'


def deferred_registry_key(queue: str) -> str:
    return f'{PREFIX}deferred:{queue}'


def scheduled_registry_key(queue: str) -> str:
    return f'{PREFIX}scheduled:{queue}'


def canceled_registry_key(queue: str) -> str:
    return f'{PREFIX}canceled:{queue}'


def ready_registry_key(queue: str) -> str:
    """RQ 3.0's ReadyJobRegistry: dependents released but not yet pushed (score = when released)."""
    return f'{PREFIX}ready:{queue}'


def worker_key(name: str) -> str:
    return f'{WORKER_PREFIX}{name}'


def workers_by_queue_key(queue: str) -> str:
    return f'{PREFIX}workers:{queue}'


def pubsub_channel(worker_name: str) -> str:
    return f'{PREFIX}pubsub:{worker_name}'


def maintenance_lock_key(queue: str, prefix: str = RQ_KEY_PREFIX) -> str:
    return f'{prefix}:clean_registries:{queue}'


def scheduler_lock_key(queue: str) -> str:
    return f'{PREFIX}scheduler-lock:{queue}'


def scheduler_key(name: str) -> str:
    return f'{PREFIX}scheduler:{name}'


def group_key(group_id: str) -> str:
    return f'{GROUP_PREFIX}{group_id}'


CRON_JOBS = f'{PREFIX}cron_jobs'  # zset: cron job name -> when it last enqueued (RQ's CronJobRegistry)
CRON_SCHEDULERS = f'{PREFIX}cron_schedulers'  # zset: cron scheduler name -> last heartbeat


def cron_schedulers_key(prefix: str = RQ_KEY_PREFIX) -> str:
    """CRON_SCHEDULERS under `prefix`."""
    return f'{prefix}:cron_schedulers'


def cron_job_history_key(name: str) -> str:
    """A cron job's history: zset of the ids of the jobs it enqueued, scored by their enqueued_at."""
    return f'{PREFIX}cron_job:{name}:jobs'


def cron_scheduler_key(name: str) -> str:
    return f'{PREFIX}cron_scheduler:{name}'


# RQ 3.0's concurrency rate limits (rqfast.rate_limit): the set of keys in use holds the bare keys
RATE_LIMIT_KEYS = f'{PREFIX}rl-keys'


def rate_limit_config_key(key: str) -> str:
    """RQ 3.0's `rq:rl:<key>` hash: its `concurrency` (the last registrant's)."""
    return f'{PREFIX}rl:{key}'


def rate_limit_allowed_key(key: str) -> str:
    """zset of the job ids holding a slot (queued or started); score = acquire time."""
    return f'{PREFIX}rl:{key}:allowed'


def rate_limit_waiting_key(key: str) -> str:
    """zset of the job ids waiting for a slot (status rate_limited); score = when they started waiting."""
    return f'{PREFIX}rl:{key}:rate_limited'


def debounce_key(key: str) -> str:
    """rqfast's own: the id of the job a `debounce=(key, delay)` burst will run (expires: DEBOUNCE_KEY_GRACE)."""
    return f'{PREFIX}debounce:{key}'


def throttle_key(key: str) -> str:
    """rqfast's own: the id of the job that opened a `throttle=(key, ttl)` window; expires with the window."""
    return f'{PREFIX}throttle:{key}'


def rate_limit_window_key(key: str) -> str:
    """rqfast's (additive): zset of a window rate limit's starts (`<id>:<execution id>`) and planned
    starts (`<id>`); score = epoch float (lua/_window.lua, window_take)."""
    return f'{PREFIX}rl:{key}:window'
