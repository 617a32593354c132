"""Job functions reading a deployment through django-rq and rq-exporter, from inside a running job
(so the worker running it is busy). tests/test_ecosystem_readers.py runs them on rq's and rqfast's
SimpleWorker, with whichever rq is installed (2.12 normally, 3.0 under `python -m tests.rq3`).
"""

from __future__ import annotations

from typing import Any


def exporter_sees(url: str) -> dict[str, Any]:
    """rq-exporter's worker and per-queue job metrics (its collector's two reads)."""
    import redis
    from rq_exporter.utils import get_jobs_by_queue, get_workers_stats

    conn = redis.Redis.from_url(url)
    workers = [
        {
            'name': w['name'],
            'queues': w['queues'],
            'state': str(getattr(w['state'], 'value', w['state'])),
            'successful_job_count': w['successful_job_count'],
            'failed_job_count': w['failed_job_count'],
        }
        for w in get_workers_stats(conn)
    ]
    jobs = {
        queue: {str(getattr(status, 'value', status)): count for status, count in counts.items()}
        for queue, counts in get_jobs_by_queue(conn).items()
    }
    return {'workers': workers, 'jobs': jobs}


def django_rq_sees(url: str) -> dict[str, Any]:
    """django-rq's statistics (its dashboard's and /stats.json's data) and its workers' current jobs."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            INSTALLED_APPS=['django.contrib.contenttypes', 'django.contrib.auth', 'django_rq'],
            RQ_QUEUES={'q': {'URL': url}, 'hold': {'URL': url}},
            USE_TZ=True,
        )
        django.setup()
    from django_rq.queues import get_queue
    from django_rq.utils import get_statistics
    from rq import Worker

    queues = [
        {k: v for k, v in queue.items() if k not in ('connection_kwargs', 'oldest_job_timestamp', 'scheduler_pid')}
        for queue in get_statistics()['queues']
    ]
    workers = [
        {'name': w.name, 'state': str(getattr(w.get_state(), 'value', w.get_state())), 'job': w.get_current_job_id()}
        for w in Worker.all(queue=get_queue('q'))
    ]
    return {'queues': queues, 'workers': workers}
