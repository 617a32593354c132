"""Every Redis key name rqfast reads or writes: RQ 2.12's layout, in one place.

Every name starts with PREFIX: `rq:`, or RQ_KEY_PREFIX plus a colon when that environment variable
is set when rqfast is imported (RQ 3.0's setting; rqfast.defaults reads it).

The Lua scripts build the same names from the prefix they are given (see lua/_common.lua);
the two must agree, and tests/test_keys.py checks that they do.

With RQFAST_SHARDING=queue (Redis Cluster, docs/connections.md) each queue is a keyspace of its own,
`{<RQ_KEY_PREFIX>:<queue>}:`, and every name below is under the current keyspace (prefix()): the one a
`with within(queue):` block names, else the process's (settle(), a sharded worker's first queue). The
constants (PREFIX, QUEUES, ...) are then computed at each read (__getattr__ below).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar

from rqfast.defaults import RQ_KEY_PREFIX, RQFAST_SHARDING

BASE = RQ_KEY_PREFIX + ':'  # 'rq:' unless RQ_KEY_PREFIX is set (RQ 3.0's setting), as in every name below
SHARDED = RQFAST_SHARDING == 'queue'
# the environment names a spawned child's keyspace (its worker's queue): read once, at import
KEYSPACE_QUEUE_ENV = 'RQFAST_KEYSPACE_QUEUE'


def keyspace(queue: str) -> str:
    """The prefix of `queue`'s keys: `{<RQ_KEY_PREFIX>:<queue>}:` when sharded by queue, else BASE."""
    return f'{{{RQ_KEY_PREFIX}:{queue}}}:' if SHARDED else BASE


_process = [keyspace(os.environ[KEYSPACE_QUEUE_ENV]) if SHARDED and os.environ.get(KEYSPACE_QUEUE_ENV) else BASE]
_current: ContextVar[str | None] = ContextVar('rqfast_keyspace', default=None)


def prefix() -> str:
    """The prefix every name is built from now: BASE unless sharded by queue (the module docstring)."""
    return _current.get() or _process[0]


def within(queue: str | None) -> AbstractContextManager[None]:
    """Names built in the block are `queue`'s keyspace's (sharded by queue; otherwise nothing changes,
    at no cost: a worker enters one per job)."""
    if not SHARDED or not queue:
        return _NOTHING
    return _within(keyspace(queue))


_NOTHING: AbstractContextManager[None] = nullcontext()


@contextmanager
def _within(name: str) -> Iterator[None]:
    token = _current.set(name)
    try:
        yield
    finally:
        _current.reset(token)


def in_block() -> bool:
    """Whether a within() block names the keyspace now."""
    return _current.get() is not None


def settle(queue: str) -> None:
    """Make `queue`'s keyspace this process's (a sharded worker of one queue): its threads and horses
    build their names there, and so do the children it spawns (through the environment). '' changes nothing."""
    if SHARDED and queue:
        _process[0] = keyspace(queue)
        os.environ[KEYSPACE_QUEUE_ENV] = queue


def spans(queues: Sequence[str]) -> bool:
    """Whether these queues are in more than one keyspace (sharded by queue, more than one queue)."""
    return SHARDED and len(set(queues)) > 1


def by_keyspace(queues: Sequence[str]) -> Iterator[list[str]]:
    """The queues by keyspace, for one call each: all at once when they share one; else each alone,
    the loop's body within its keyspace (within())."""
    if not spans(queues):
        yield list(queues)
        return
    for queue in dict.fromkeys(queues):
        with within(queue):
            yield [queue]


PREFIX = BASE

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
    return f'{prefix()}queue:{queue}'


def queue_name_from_key(key: str) -> str:
    start = f'{prefix()}queue:'
    if not key.startswith(start):
        raise ValueError(f'Not a valid RQ queue key: {key}')
    return key[len(start) :]


def intermediate_queue_key(queue: str) -> str:
    return f'{prefix()}queue:{queue}:intermediate'


def priority_queue_key(queue: str) -> str:
    """rqfast's own (additive): a sorted set of the ids of the queue's prioritized jobs (docs/features.md)."""
    return f'{prefix()}queue:{queue}:priority'


# The width of one lane of the priority set's scores: lane p holds [p * PRIORITY_LANE, (p + 1) * PRIORITY_LANE)
# (lua/_lanes.lua's PRIORITY_LANE; part of the key's format).
PRIORITY_LANE = 10**12


def compact_queue_key(token: str) -> str:
    """Where Queue.compact() parks a queue's ids while it drops the missing ones."""
    return f'{prefix()}queue:_compact:{token}'


# uuid4's version and variant bits: the rest of the 128 are random (RFC 4122, section 4.4)
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_job_id() -> str:
    """`str(uuid.uuid4())`, RQ's job id, from the same 16 random bytes, without the UUID object (1 µs less)."""
    h = ((int.from_bytes(os.urandom(16), 'big') & _UUID4_CLEAR) | _UUID4_SET).to_bytes(16, 'big').hex()
    return f'{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}'


def job_key(job_id: str) -> str:
    return f'{prefix()}job:{job_id}'


def dependents_key(job_id: str) -> str:
    return f'{prefix()}job:{job_id}:dependents'


def dependencies_key(job_id: str) -> str:
    # The double colon is RQ's, and part of the layout other tools read.
    return f'{prefix()}job::{job_id}:dependencies'


def results_key(job_id: str, key_prefix: str = RQ_KEY_PREFIX) -> str:
    """A job's results stream; `key_prefix` is for callers that read RQ_KEY_PREFIX late (RQ 3.0 reads its
    module's); sharded by queue, the current keyspace's."""
    return f'{prefix()}results:{job_id}' if SHARDED else f'{key_prefix}:results:{job_id}'


def dead_letter_key(queue: str) -> str:
    """rqfast's own: a hash of the ids popped from `queue` that no worker can run (id -> "<time> <reason>")."""
    return f'{prefix()}dead-letter:{queue}'


def events_key(queue: str) -> str:
    """rqfast's own (additive): the capped stream of a queue's job lifecycle events (rqfast.events)."""
    return f'{prefix()}events:{queue}'


def execution_key(job_id: str, execution_id: str) -> str:
    return f'{prefix()}execution:{job_id}:{execution_id}'


def executions_key(job_id: str) -> str:
    return f'{prefix()}executions:{job_id}'


def worker_executions_key(worker_name: str) -> str:
    """RQ 3.0's index of a worker's running executions (a set of `<job id>:<execution id>`)."""
    return f'{prefix()}worker:{worker_name}:executions'


def registry_key(queue: str) -> str:
    """RQ's BaseRegistry key; rqfast's registries all have keys of their own (below)."""
    return f'{prefix()}registry:{queue}'


def started_registry_key(queue: str) -> str:
    return f'{prefix()}wip:{queue}'


def finished_registry_key(queue: str) -> str:
    return f'{prefix()}finished:{queue}'


def failed_registry_key(queue: str) -> str:
    return f'{prefix()}failed:{queue}'


def deferred_registry_key(queue: str) -> str:
    return f'{prefix()}deferred:{queue}'


def scheduled_registry_key(queue: str) -> str:
    return f'{prefix()}scheduled:{queue}'


def canceled_registry_key(queue: str) -> str:
    return f'{prefix()}canceled:{queue}'


def ready_registry_key(queue: str) -> str:
    """RQ 3.0's ReadyJobRegistry: dependents released but not yet pushed (score = when released)."""
    return f'{prefix()}ready:{queue}'


def worker_key(name: str) -> str:
    return f'{prefix()}worker:{name}'


def workers_by_queue_key(queue: str) -> str:
    return f'{prefix()}workers:{queue}'


def pubsub_channel(worker_name: str) -> str:
    return f'{prefix()}pubsub:{worker_name}'


def pubsub_channels(worker_name: str, channel: str) -> list[str]:
    """The channels a worker listens on: `channel` (RQ's pubsub_channel_name), and sharded by queue the
    base prefix's too, where a sender outside any keyspace (send_shutdown_command(conn, name)) publishes:
    a channel is no key (PUBLISH reaches every node of a cluster), so both reach the worker."""
    base = f'{BASE}pubsub:{worker_name}'
    return [channel] if channel == base else [channel, base]


def maintenance_lock_key(queue: str, key_prefix: str = RQ_KEY_PREFIX) -> str:
    return f'{prefix()}clean_registries:{queue}' if SHARDED else f'{key_prefix}:clean_registries:{queue}'


def scheduler_lock_key(queue: str) -> str:
    return f'{prefix()}scheduler-lock:{queue}'


def scheduler_key(name: str) -> str:
    return f'{prefix()}scheduler:{name}'


def scheduler_planned_channels(queues: Iterable[str]) -> list[str]:
    """The channels a claim publishes on (`<at> <queue>`) when a window rate limit plans a job into a
    queue's scheduled registry (lua/_window.lua: window_defer), so that the scheduler holding the queue
    wakes for it; one per keyspace (a channel, not a key: RQ's tools never see it)."""
    return sorted({f'{keyspace(q)}scheduler-planned' for q in queues})


def group_key(group_id: str) -> str:
    return f'{prefix()}group:{group_id}'


CRON_JOBS = f'{prefix()}cron_jobs'  # zset: cron job name -> when it last enqueued (RQ's CronJobRegistry)
CRON_SCHEDULERS = f'{prefix()}cron_schedulers'  # zset: cron scheduler name -> last heartbeat


def cron_schedulers_key(key_prefix: str = RQ_KEY_PREFIX) -> str:
    """CRON_SCHEDULERS under `key_prefix` (sharded by queue: the current keyspace's)."""
    return f'{prefix()}cron_schedulers' if SHARDED else f'{key_prefix}:cron_schedulers'


def cron_job_history_key(name: str) -> str:
    """A cron job's history: zset of the ids of the jobs it enqueued, scored by their enqueued_at."""
    return f'{prefix()}cron_job:{name}:jobs'


def cron_scheduler_key(name: str) -> str:
    return f'{prefix()}cron_scheduler:{name}'


# RQ 3.0's concurrency rate limits (rqfast.rate_limit): the set of keys in use holds the bare keys
RATE_LIMIT_KEYS = f'{prefix()}rl-keys'


def rate_limit_config_key(key: str) -> str:
    """RQ 3.0's `rq:rl:<key>` hash: its `concurrency` (the last registrant's)."""
    return f'{prefix()}rl:{key}'


def rate_limit_allowed_key(key: str) -> str:
    """zset of the job ids holding a slot (queued or started); score = acquire time."""
    return f'{prefix()}rl:{key}:allowed'


def rate_limit_waiting_key(key: str) -> str:
    """zset of the job ids waiting for a slot (status rate_limited); score = when they started waiting."""
    return f'{prefix()}rl:{key}:rate_limited'


def debounce_key(key: str) -> str:
    """rqfast's own: the id of the job a `debounce=(key, delay)` burst will run (expires: DEBOUNCE_KEY_GRACE)."""
    return f'{prefix()}debounce:{key}'


def throttle_key(key: str) -> str:
    """rqfast's own: the id of the job that opened a `throttle=(key, ttl)` window; expires with the window."""
    return f'{prefix()}throttle:{key}'


def rate_limit_window_key(key: str) -> str:
    """rqfast's (additive): zset of a window rate limit's starts (`<id>:<execution id>`) and planned
    starts (`<id>`); score = epoch float (lua/_window.lua, window_take)."""
    return f'{prefix()}rl:{key}:window'


def dashboard_key(name: str) -> str:
    """rqfast's dashboard's own (additive; written by `rqfast dashboard`, never by a worker): `history:hour`,
    `history:day`, `history:functions` (sorted sets of the points it samples, each trimmed to its window) and
    `sampler` (the lock that lets one dashboard sample at a time). Under the base prefix, every keyspace's
    points in one place: on Redis Cluster each key is read and written alone."""
    return f'{BASE}dashboard:{name}'


# Sharded by queue, the constants are the current keyspace's, computed at each read (`keys.QUEUES`):
# taken out of the module's namespace so that __getattr__ answers for them.
_CONSTANTS: dict[str, Callable[[], str]] = {
    'PREFIX': lambda: prefix(),
    'QUEUES': lambda: f'{prefix()}queues',
    'SLOT_KEY': lambda: f'{prefix()}queues',
    'WORKERS': lambda: f'{prefix()}workers',
    'SUSPENDED': lambda: f'{prefix()}suspended',
    'PAUSED_QUEUES': lambda: f'{prefix()}paused-queues',
    'GROUPS': lambda: f'{prefix()}groups',
    'GROUP_CLEANING_LOCK': lambda: f'{prefix()}clean_groups',
    'QUEUE_PREFIX': lambda: f'{prefix()}queue:',
    'JOB_PREFIX': lambda: f'{prefix()}job:',
    'WORKER_PREFIX': lambda: f'{prefix()}worker:',
    'GROUP_PREFIX': lambda: f'{prefix()}group:',
    'CRON_JOBS': lambda: f'{prefix()}cron_jobs',
    'CRON_SCHEDULERS': lambda: f'{prefix()}cron_schedulers',
    'RATE_LIMIT_KEYS': lambda: f'{prefix()}rl-keys',
}
if SHARDED:
    for _name in _CONSTANTS:
        del globals()[_name]


def __getattr__(name: str) -> str:
    build = _CONSTANTS.get(name) if SHARDED else None
    if build is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    return build()
