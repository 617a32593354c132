"""RQ 3.0 behaviours that RQ 2.12 did differently, each in both modes (RQFAST_COMPAT=2.12 for 2.12's):
naive schedule times, `rq enqueue --at-front` with a schedule, the worker's own address (CLIENT INFO or
CLIENT LIST), and prepare_job_execution (the same in both)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from unittest import mock

import pytest
import redis
from click.testing import CliRunner

from rqfast import Queue, defaults
from rqfast.cli import main
from rqfast.dates import epoch_seconds
from rqfast.registry import ScheduledJobRegistry
from rqfast.worker import Worker

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv('TZ', 'America/New_York')
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def rq212(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaults, 'RQFAST_COMPAT', '2.12')


JANUARY, JULY = datetime(2019, 1, 1), datetime(2019, 7, 1)  # New York: UTC-5, then UTC-4


@pytest.mark.usefixtures('new_york')
def test_a_naive_schedule_time_is_local_time_on_its_date(redis_conn: redis.Redis) -> None:
    assert epoch_seconds(JANUARY) == 1546300800 + 5 * 3600
    assert epoch_seconds(JULY) == 1561939200 + 4 * 3600
    queue = Queue(connection=redis_conn)
    job = queue.enqueue_at(JANUARY, jobs.say_hello)
    assert redis_conn.zscore(ScheduledJobRegistry(queue=queue).key, job.id) == 1546300800 + 5 * 3600


@pytest.mark.usefixtures('new_york', 'rq212')
def test_rq212_takes_the_daylight_offset_whatever_the_date() -> None:
    assert epoch_seconds(JANUARY) == 1546300800 + 4 * 3600
    assert epoch_seconds(JULY) == 1561939200 + 4 * 3600


def _enqueue_scheduled(redis_url: str, job_id: str, *options: str) -> None:
    args = ['enqueue', '-u', redis_url, '--job-id', job_id, '--schedule-at', '2021-01-01T00:00:00', *options]
    result = CliRunner().invoke(main, [*args, 'tests.jobs.say_hello'])
    assert result.exit_code == 0, result.output


def test_cli_schedule_at_front(redis_conn: redis.Redis, redis_url: str) -> None:
    _enqueue_scheduled(redis_url, 'at-front', '--at-front')
    _enqueue_scheduled(redis_url, 'at-back')
    assert redis_conn.hget('rq:job:at-front', 'enqueue_at_front') is not None
    assert redis_conn.hget('rq:job:at-back', 'enqueue_at_front') is None


@pytest.mark.usefixtures('rq212')
def test_rq212_cli_ignores_at_front_with_a_schedule(redis_conn: redis.Redis, redis_url: str) -> None:
    _enqueue_scheduled(redis_url, 'at-front', '--at-front')
    assert redis_conn.hget('rq:job:at-front', 'enqueue_at_front') is None


def test_a_worker_reads_its_own_address_with_client_info(redis_conn: redis.Redis) -> None:
    with mock.patch.object(redis_conn, 'client_list') as client_list:
        worker = Worker([Queue(connection=redis_conn)], connection=redis_conn)
    client_list.assert_not_called()
    assert worker.ip_address not in ('', 'unknown')
    failing = redis.ResponseError('unknown subcommand')
    with mock.patch.object(redis_conn, 'client_info', side_effect=failing):  # a server before 6.2
        worker = Worker([Queue(connection=redis_conn)], connection=redis_conn)
    assert worker.ip_address not in ('', 'unknown')


@pytest.mark.usefixtures('rq212')
def test_rq212_worker_reads_its_own_address_from_the_client_list(redis_conn: redis.Redis) -> None:
    with mock.patch.object(redis_conn, 'client_info') as client_info:
        worker = Worker([Queue(connection=redis_conn)], connection=redis_conn)
    client_info.assert_not_called()
    assert worker.ip_address not in ('', 'unknown')


def test_prepare_job_execution_persists_the_job(redis_conn: redis.Redis) -> None:
    queue = Queue(connection=redis_conn)
    job = queue.enqueue(jobs.say_hello)
    worker = Worker([queue], connection=redis_conn)
    worker.prepare_execution(job)
    redis_conn.expire(job.key, 60)
    worker.prepare_job_execution(job)
    assert redis_conn.ttl(job.key) == -1
