"""job.set_progress(value) from inside a job, Job.progress to read it: rqfast's own `progress` job hash field."""

from __future__ import annotations

import pytest
import redis
import rq.job

import rqfast
from rqfast import Queue, SimpleWorker
from rqfast.job import Job

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]


def test_a_job_reports_progress_and_the_caller_reads_it(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    reporting = queue.enqueue(jobs.report_progress, 10, 50, {'done': 3, 'of': 7})
    silent = queue.enqueue(jobs.add, 1, 2)
    assert reporting.progress is None
    SimpleWorker(['q'], connection=connection).work(burst=True, logging_level='WARNING')
    assert reporting.return_value() == 3 and reporting.progress == {'done': 3, 'of': 7}
    assert Job.fetch(reporting.id, connection=connection).progress == {'done': 3, 'of': 7}
    assert silent.progress is None and connection.hget(silent.key, 'progress') is None
    theirs = rq.job.Job.fetch(reporting.id, connection=connection)  # rq loads a job with the extra field
    assert theirs.get_status() == 'finished' and theirs.return_value() == 3


def test_set_progress_from_outside_a_worker_and_bad_values(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.add, 1, 2)
    job.set_progress(0.25)
    assert job.progress == 0.25 and connection.hget(job.key, 'progress') == b'0.25'
    job.set_progress('step 2')
    assert job.progress == 'step 2'
    for bad in (object(), float('nan'), {1, 2}):
        with pytest.raises(TypeError, match='set_progress: a JSON value'):
            job.set_progress(bad)
    assert job.progress == 'step 2'  # a refused value writes nothing


def test_progress_from_a_forked_horse(redis_conn: redis.Redis) -> None:
    job = Queue('q', connection=redis_conn).enqueue(jobs.report_progress, 1, 99)
    rqfast.Worker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    assert job.return_value() == 2 and job.progress == 99
