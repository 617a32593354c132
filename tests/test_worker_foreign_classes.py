"""What django-rq hands any WORKER_CLASS: rq's Job (its JOB_CLASS) and the class of its queues (DjangoRQ,
a subclass of rq's Queue). An rqfast worker takes them from rq 2.12 or rq 3.0 (whichever is installed:
`python -m tests.rq3` runs this file beside rq 3.0) and loads and records jobs as rqfast's.

A job whose loading fails (a bad field, a job class that raises as the worker or its horse loads it)
logs RQ's error line with its traceback, as a job that raised does, at every worker class, at
concurrency 1 and 2 and at each logging level a failure shows at.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import rq
import rq.job

import rqfast
from rqfast.job import Job
from rqfast.worker import SimpleWorker, SpawnWorker, Worker
from tests import jobs, load_failure_jobs

pytestmark = pytest.mark.timeout(60)

WORKERS = {'SimpleWorker': SimpleWorker, 'Worker': Worker, 'SpawnWorker': SpawnWorker}


class DjangoRQ(rq.Queue):
    """django-rq's queue class as the worker gets it: a subclass of rq's Queue taking its own kwargs."""

    def __init__(self, *args: Any, autocommit: bool = True, commit_mode: str = 'auto', **kwargs: Any) -> None:
        self._autocommit = autocommit
        super().__init__(*args, **kwargs)


# (JOB_CLASS, QUEUE_CLASS) as django-rq's get_worker hands them: rq's by default, rqfast's when set
CLASSES = {
    'worker_class_only': (rq.job.Job, DjangoRQ),
    'job_class': (Job, DjangoRQ),
    'queue_class': (rq.job.Job, rqfast.Queue),
    'job_and_queue_class': (Job, rqfast.Queue),
}


@pytest.fixture(autouse=True)
def _rqfast_log_level() -> Iterator[None]:
    """work(logging_level=...) sets the rqfast logger's level: put it back for the other tests."""
    logger = logging.getLogger('rqfast')
    level = logger.level
    yield
    logger.setLevel(level)


def django_rq_worker(worker_class: Any, conn: redis.Redis, job_class: Any, queue_class: Any, **kwargs: Any) -> Any:
    """django_rq.workers.get_worker's call: queues of queue_class made with job_class, both handed on."""
    queues = [queue_class('default', connection=conn, job_class=job_class, autocommit=True)]
    return worker_class(queues, connection=conn, job_class=job_class, queue_class=type(queues[0]), name='w', **kwargs)


@pytest.mark.parametrize('classes', CLASSES)
@pytest.mark.parametrize('worker_name', WORKERS)
def test_rq_job_and_queue_classes_run_end_to_end(redis_conn: redis.Redis, worker_name: str, classes: str) -> None:
    job_class, queue_class = CLASSES[classes]
    job = queue_class('default', connection=redis_conn, job_class=job_class, autocommit=True).enqueue(jobs.add, 2, 3)
    worker = django_rq_worker(WORKERS[worker_name], redis_conn, job_class, queue_class)
    assert worker.job_class is Job and all(isinstance(q, rqfast.Queue) for q in worker.queues)

    assert worker.work(burst=True, logging_level='WARNING')

    assert rq.job.Job.fetch(job.id, connection=redis_conn).get_status() == 'finished'
    assert Job.fetch(job.id, connection=redis_conn).return_value() == 5
    assert (worker.successful_job_count, worker.failed_job_count) == (1, 0)


def test_a_foreign_job_subclass_is_named_and_a_queue_class_keeps_its_timeout(
    fake_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    class AppJob(rq.job.Job):
        pass

    class SlowQueue(rq.Queue):
        DEFAULT_TIMEOUT = 1234

    with caplog.at_level(logging.WARNING, logger='rqfast'):
        worker = SimpleWorker(['q'], connection=fake_conn, job_class=AppJob, queue_class=SlowQueue)
        plain = SimpleWorker(['q'], connection=fake_conn, job_class='rq.job.Job', queue_class='rq.Queue')
    assert worker.job_class is Job and plain.job_class is Job and plain.queue_class is rqfast.Queue
    assert issubclass(worker.queue_class, rqfast.Queue) and worker.queue_class.DEFAULT_TIMEOUT == 1234
    warned = [r.getMessage() for r in caplog.records if 'is not a subclass of rqfast.job.Job' in r.getMessage()]
    assert len(warned) == 1 and 'AppJob' in warned[0]  # rq's own Job is replaced without a word
    own = SimpleWorker(['q'], connection=fake_conn, job_class=load_failure_jobs.StartFailsJob)
    assert own.job_class is load_failure_jobs.StartFailsJob  # an rqfast subclass is kept


def test_prepare_job_execution_takes_an_rq_job(fake_conn: redis.Redis) -> None:
    """RQ's step-by-step API with a job of rq's own class, as RQ's tools hand it."""
    job = rq.Queue('q', connection=fake_conn).enqueue(jobs.add, 2, 3)
    worker = SimpleWorker(['q'], connection=fake_conn)
    worker.prepare_job_execution(job)
    assert job.get_status(refresh=False) == 'started' and job.worker_name == worker.name
    assert rq.job.Job.fetch(job.id, connection=fake_conn).get_status() == 'started'


# ---------------------------------------------------------------------------------------------------
# A job that fails while it is loaded is logged as a job that raised


def enqueue_broken(conn: redis.Redis, how: str) -> str:
    job = rqfast.Queue('default', connection=conn).enqueue(jobs.add, 2, 3)
    if how == 'field':
        conn.hset(job.key, 'timeout', b'abc')
    return job.id


LOAD_FAILURES = {  # how -> what the logged traceback says
    'start': 'ImportError: start_fails: no module named rqfast_missing_plugin',
    'horse': 'ImportError: horse_fails: no module named rqfast_missing_plugin',
    'field': "unreadable field(s) timeout=b'abc'",
}


@pytest.mark.parametrize('concurrency', [1, 2])
@pytest.mark.parametrize(
    ('worker_name', 'how'),
    [(w, how) for w in WORKERS for how in LOAD_FAILURES if not (how == 'horse' and w == 'SimpleWorker')],
)
def test_a_job_whose_load_fails_is_logged_with_its_traceback(
    redis_conn: redis.Redis,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    worker_name: str,
    how: str,
    concurrency: int,
) -> None:
    monkeypatch.setenv('RQFAST_TEST_WORKER_PID', str(os.getpid()))
    job_id = enqueue_broken(redis_conn, how)
    job_class = {'start': load_failure_jobs.StartFailsJob, 'horse': load_failure_jobs.HorseFailsJob}.get(how)
    worker = WORKERS[worker_name](['default'], connection=redis_conn, job_class=job_class, concurrency=concurrency)

    worker.work(burst=True, logging_level='WARNING')

    assert rq.job.Job.fetch(job_id, connection=redis_conn).get_status() == 'failed'
    lines = [r for r in caplog.records if r.levelno == logging.ERROR and job_id in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    message = lines[0].getMessage()
    assert f'job {job_id}: exception raised while executing' in message
    assert 'Traceback (most recent call last)' in message and LOAD_FAILURES[how] in message


@pytest.mark.parametrize('level', ['DEBUG', 'INFO', 'WARNING', 'ERROR'])
def test_a_load_failure_shows_at_every_level_a_failed_job_shows(
    redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture, level: str
) -> None:
    failing = rqfast.Queue('default', connection=redis_conn).enqueue(jobs.div_by_zero)
    broken = enqueue_broken(redis_conn, 'field')
    SimpleWorker(['default'], connection=redis_conn).work(burst=True, logging_level=level)
    raised = [r for r in caplog.records if failing.id in r.getMessage() and 'exception raised' in r.getMessage()]
    unloaded = [r for r in caplog.records if broken in r.getMessage() and 'exception raised' in r.getMessage()]
    assert len(raised) == 1 and len(unloaded) == 1 and raised[0].levelno == unloaded[0].levelno
