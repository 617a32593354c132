"""django-rq and rq-exporter read rqfast's state as they read rq's: the same deployment (a finished,
a failed, a deferred and a scheduled job, and a busy worker) built once by rq and once by rqfast, read
through each tool from inside the running job. Runs with rq 2.12 (the normal run: install the tools
with `pip install --no-deps django-rq rq-exporter prometheus_client Django asgiref sqlparse`, as
rq-exporter pins redis<6) and with rq 3.0 (`python -m tests.rq3` installs them).
"""

from __future__ import annotations

import importlib.util
from datetime import timedelta
from typing import Any

import pytest
import redis
import rq
import rq.worker

import rqfast
import rqfast.worker
from tests import ecosystem_jobs

pytestmark = pytest.mark.timeout(60)


def deployment(impl: str, conn: redis.Redis, url: str, reader: str) -> Any:
    conn.flushdb()
    q = (rq.Queue if impl == 'rq' else rqfast.Queue)('q', connection=conn)
    hold = (rq.Queue if impl == 'rq' else rqfast.Queue)('hold', connection=conn)
    q.enqueue('operator.add', 1, 2, job_id='done')
    q.enqueue('operator.truediv', 1, 0, job_id='bad')
    parent = hold.enqueue('operator.add', 0, 0, job_id='parent')  # never run: its dependent stays deferred
    q.enqueue('operator.add', 3, 4, job_id='child', depends_on=parent)
    q.enqueue_in(timedelta(hours=1), 'operator.add', 5, 6, job_id='later')
    q.enqueue(getattr(ecosystem_jobs, reader), url, job_id='probe')
    q.enqueue('operator.add', 7, 8, job_id='queued_after')
    cls = rq.worker.SimpleWorker if impl == 'rq' else rqfast.worker.SimpleWorker
    cls(['q'], name='w1', connection=conn).work(burst=True, max_jobs=3, logging_level='WARNING')
    return (rq.job.Job.fetch('probe', connection=conn)).return_value()


@pytest.mark.parametrize('reader', ['exporter_sees', 'django_rq_sees'])
def test_tool_reads_rqfast_as_rq(reader: str, redis_url: str, redis_conn: redis.Redis) -> None:
    tool = 'rq_exporter' if reader == 'exporter_sees' else 'django_rq'
    if importlib.util.find_spec(tool) is None:  # not imported here: django_rq needs its settings first
        pytest.skip(f'{tool} is not installed (see the module docstring)')
    expected = deployment('rq', redis_conn, redis_url, reader)
    assert deployment('rqfast', redis_conn, redis_url, reader) == expected
    # the oracle itself shows a busy worker and every registry, so the comparison means something
    if reader == 'exporter_sees':
        assert expected['workers'][0]['state'] == 'busy'
        assert expected['jobs']['q'] == {
            'queued': 1,
            'started': 1,
            'finished': 1,
            'failed': 1,
            'deferred': 1,
            'scheduled': 1,
        }
    else:
        assert expected['workers'] == [{'name': 'w1', 'state': 'busy', 'job': 'probe'}]
        [hold, q] = expected['queues']
        assert (q['jobs'], q['started_jobs'], q['finished_jobs'], q['failed_jobs']) == (1, 1, 1, 1)
        assert (q['deferred_jobs'], q['scheduled_jobs'], q['workers']) == (1, 1, 1)
