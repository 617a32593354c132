"""Classes a lower layer hands out and a higher one defines, reached whatever was imported first.

A job's registries (job.failed_job_registry...) and a registry's queue (registry.get_queue()) live a
layer above the code that makes them: they are named by dotted paths in rqfast.defaults and looked up
when first used, rather than filled in by the higher module as it is imported. Registries take
`job_class=` and `queue_class=`, and a job gives its own class to its registries, as RQ's does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import redis

from rqfast import Queue
from rqfast.connections import has_sockets
from rqfast.defaults import REGISTRY_CLASSES, REGISTRY_QUEUE_CLASS
from rqfast.executions import ExecutionRegistry
from rqfast.imports import class_at
from rqfast.job import Job
from rqfast.registry import FailedJobRegistry, FinishedJobRegistry, ScheduledJobRegistry, StartedJobRegistry
from rqfast.scheduler import RQScheduler

REPOSITORY = Path(__file__).resolve().parent.parent

# A fresh interpreter that imports one rqfast module, and nothing of the package's __init__ (as a
# spawned child does), then uses a job's registries and a registry's queue.
_ONLY_THE_JOB_MODULE = textwrap.dedent(
    """
    import importlib.util, json, sys, types
    spec = importlib.util.find_spec('rqfast')
    package = types.ModuleType('rqfast')
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules['rqfast'] = package
    if sys.argv[1] == 'fake':
        import fakeredis
        connection = fakeredis.FakeStrictRedis()
    else:
        import redis
        connection = redis.Redis.from_url(sys.argv[1])
    from rqfast.job import Job
    before = sorted(name for name in sys.modules if name in ('rqfast.registry', 'rqfast.executions', 'rqfast.queue'))
    job = Job.create('operator.add', args=(1, 2), connection=connection, origin='lookup')
    failed = job.failed_job_registry
    print(json.dumps({
        'before': before,
        'failed': type(failed).__qualname__,
        'started': type(job.started_job_registry).__qualname__,
        'finished': type(job.finished_job_registry).__qualname__,
        'executions': type(job.execution_registry).__qualname__,
        'job_class': failed.job_class is Job,
        'queue': type(failed.get_queue()).__module__ + '.' + type(failed.get_queue()).__qualname__,
        'key': failed.key,
    }))
    """
)


@pytest.mark.parametrize('backend', ['redis', 'fake'])
def test_a_job_reaches_its_registries_with_only_its_own_module_imported(backend: str, redis_url: str) -> None:
    """It raised "needs rqfast.registry: import it (or rqfast) first" before."""
    result = subprocess.run(
        [sys.executable, '-c', _ONLY_THE_JOB_MODULE, redis_url if backend == 'redis' else 'fake'],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {
        'before': [],  # nothing imported them ahead
        'failed': 'FailedJobRegistry',
        'started': 'StartedJobRegistry',
        'finished': 'FinishedJobRegistry',
        'executions': 'ExecutionRegistry',
        'job_class': True,
        'queue': 'rqfast.queue.Queue',
        'key': 'rq:failed:lookup',
    }


def test_the_dotted_paths_name_the_classes() -> None:
    assert {kind: class_at(path) for kind, path in REGISTRY_CLASSES.items()} == {
        'started': StartedJobRegistry,
        'failed': FailedJobRegistry,
        'finished': FinishedJobRegistry,
        'executions': ExecutionRegistry,
    }
    assert class_at(REGISTRY_QUEUE_CLASS) is Queue


class _AppJob(Job):
    pass


class _AppQueue(Queue):
    pass


def test_a_jobs_registries_take_its_class_as_rqs_do(connection: redis.Redis) -> None:
    queue = Queue('lookup', connection=connection, job_class=_AppJob)
    job = _AppJob.create('operator.add', args=(1, 2), connection=connection, origin='lookup')
    for registry in (job.failed_job_registry, job.started_job_registry, job.finished_job_registry):
        assert registry.job_class is _AppJob
        assert registry.name == 'lookup'
    FailedJobRegistry(queue=queue).add(job, exc_string='boom')
    assert type(job.failed_job_registry.requeue(job.id)) is _AppJob
    assert queue.job_ids == [job.id]


def test_a_registry_takes_queue_class_and_keeps_rqs_signatures(connection: redis.Redis) -> None:
    made: Any = FailedJobRegistry('lookup', connection=connection, queue_class=_AppQueue)
    assert type(made.get_queue()) is _AppQueue
    assert made.get_queue().name == 'lookup'
    # RQ's own ways to make one: name and connection, or queue=, with job_class= and serializer=
    for registry in (
        FailedJobRegistry('lookup', connection=connection, job_class=_AppJob, serializer='json'),
        FailedJobRegistry(queue=_AppQueue('lookup', connection=connection), job_class=_AppJob),
    ):
        assert registry.key == 'rq:failed:lookup'
        assert registry.job_class is _AppJob
        assert type(registry.get_queue()) is Queue  # RQ's get_queue() makes its own Queue class
    assert FailedJobRegistry('lookup', connection=connection).job_class is Job


def test_the_scheduler_makes_scheduled_registries_of_its_own(connection: redis.Redis) -> None:
    scheduler = RQScheduler(['lookup'], connection=connection)
    scheduler.prepare_registries(['lookup'])
    assert [type(r) for r in scheduler._scheduled_job_registries] == [ScheduledJobRegistry]
    assert scheduler._scheduled_job_registries[0].key == 'rq:scheduled:lookup'


def test_has_sockets_tells_a_server_from_fakeredis(connection: redis.Redis) -> None:
    real = type(connection).__module__.startswith('redis')
    assert has_sockets(connection) is real
    assert has_sockets(redis.Redis(connection_pool=connection.connection_pool)) is real  # the pool tells too
