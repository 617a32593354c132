"""Every Redis key name rqfast reads or writes: RQ 2.12's layout, in one place.

The Lua scripts build the same names from the prefix they are given (see lua/_common.lua);
the two must agree, and tests/test_keys.py checks that they do.
"""

from __future__ import annotations

PREFIX = 'rq:'

QUEUES = 'rq:queues'  # set of queue keys
WORKERS = 'rq:workers'  # set of worker keys
SUSPENDED = 'rq:suspended'
GROUPS = 'rq:groups'

QUEUE_PREFIX = 'rq:queue:'
JOB_PREFIX = 'rq:job:'
WORKER_PREFIX = 'rq:worker:'
GROUP_PREFIX = 'rq:group:'  # a group's set of job ids; GROUPS holds the names


def queue_key(queue: str) -> str:
    return f'{QUEUE_PREFIX}{queue}'


def queue_name_from_key(key: str) -> str:
    if not key.startswith(QUEUE_PREFIX):
        raise ValueError(f'Not a valid RQ queue key: {key}')
    return key[len(QUEUE_PREFIX) :]


def intermediate_queue_key(queue: str) -> str:
    return f'{QUEUE_PREFIX}{queue}:intermediate'


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


def results_key(job_id: str) -> str:
    return f'rq:results:{job_id}'


def execution_key(job_id: str, execution_id: str) -> str:
    return f'rq:execution:{job_id}:{execution_id}'


def executions_key(job_id: str) -> str:
    return f'rq:executions:{job_id}'


def registry_key(queue: str) -> str:
    """RQ's BaseRegistry key; rqfast's registries all have keys of their own (below)."""
    return f'rq:registry:{queue}'


def started_registry_key(queue: str) -> str:
    return f'rq:wip:{queue}'


def finished_registry_key(queue: str) -> str:
    return f'rq:finished:{queue}'


def failed_registry_key(queue: str) -> str:
    return f'rq:failed:{queue}'


def deferred_registry_key(queue: str) -> str:
    return f'rq:deferred:{queue}'


def scheduled_registry_key(queue: str) -> str:
    return f'rq:scheduled:{queue}'


def canceled_registry_key(queue: str) -> str:
    return f'rq:canceled:{queue}'


def worker_key(name: str) -> str:
    return f'{WORKER_PREFIX}{name}'


def workers_by_queue_key(queue: str) -> str:
    return f'rq:workers:{queue}'


def pubsub_channel(worker_name: str) -> str:
    return f'rq:pubsub:{worker_name}'


def maintenance_lock_key(queue: str) -> str:
    return f'rq:clean_registries:{queue}'


def scheduler_lock_key(queue: str) -> str:
    return f'rq:scheduler-lock:{queue}'


def scheduler_key(name: str) -> str:
    return f'rq:scheduler:{name}'


def group_key(group_id: str) -> str:
    return f'{GROUP_PREFIX}{group_id}'
