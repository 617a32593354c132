"""Cron strings in local time (RQ 3.0, like system cron) or in UTC (RQ 2.12, RQFAST_COMPAT=2.12), and a
cron job's kwargs kept apart from its job options (RQ 3.0)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
import redis

from rqfast import defaults
from rqfast.cron import CronJob

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

UTC = timezone.utc


@pytest.fixture
def local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Sets the process's local time zone (TZ) for the test."""

    def set_zone(name: str) -> None:
        monkeypatch.setenv('TZ', name)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def next_after(cron: str, moment: datetime) -> datetime:
    job = CronJob('default', func=jobs.say_hello, cron=cron)
    job.set_enqueue_time(moment)
    assert job.next_enqueue_time is not None
    return job.next_enqueue_time


def test_cron_fields_match_local_time(local_zone) -> None:  # type: ignore[no-untyped-def]
    local_zone('Asia/Jakarta')  # UTC+7: 09:00 local is 02:00 UTC
    assert next_after('0 9 * * *', datetime(2023, 10, 27, 0, 0, tzinfo=UTC)) == datetime(2023, 10, 27, 2, 0, tzinfo=UTC)
    assert next_after('0 9 * * *', datetime(2023, 10, 27, 3, 0, tzinfo=UTC)) == datetime(2023, 10, 28, 2, 0, tzinfo=UTC)


def test_clock_changes(local_zone) -> None:  # type: ignore[no-untyped-def]
    local_zone('America/New_York')
    # Falling back: a daily run keeps its local time; the repeated hour runs once.
    assert next_after('0 7 * * *', datetime(2026, 10, 31, 11, tzinfo=UTC)) == datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert next_after('0 * * * *', datetime(2026, 11, 1, 5, 30, tzinfo=UTC)) == datetime(2026, 11, 1, 7, tzinfo=UTC)
    assert next_after('* * * * *', datetime(2026, 11, 1, 6, 15, tzinfo=UTC)) == datetime(2026, 11, 1, 7, tzinfo=UTC)
    # Springing forward: 02:30 does not exist on 2026-03-08, it runs at 03:30 EDT.
    assert next_after('30 2 * * *', datetime(2026, 3, 7, 17, tzinfo=UTC)) == datetime(2026, 3, 8, 7, 30, tzinfo=UTC)
    # The gap to the previous slot (the window another scheduler's run counts in) is in real seconds, and
    # agrees with the runs: 01:00 EDT (05:00 UTC) then 02:00 EST (07:00 UTC) on the day clocks fall back.
    job = CronJob('default', func=jobs.say_hello, cron='0 * * * *')
    assert job.slot_gap(datetime(2026, 11, 1, 7, tzinfo=UTC)) == 7200
    assert job.slot_gap(datetime(2026, 11, 1, 8, tzinfo=UTC)) == 3600


def test_rq2_compat_keeps_utc(local_zone, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(defaults, 'RQFAST_COMPAT', '2.12')
    local_zone('Asia/Jakarta')
    assert next_after('0 9 * * *', datetime(2023, 10, 27, 0, 0, tzinfo=UTC)) == datetime(2023, 10, 27, 9, 0, tzinfo=UTC)


def test_kwargs_named_like_job_options_reach_the_function(redis_conn: redis.Redis) -> None:
    kwargs = {'description': 'nightly', 'ttl': 15, 'result_ttl': 10}
    job = CronJob('default', func=jobs.echo, args=('Hello',), kwargs=kwargs, interval=60).enqueue(redis_conn)
    assert job.kwargs == kwargs
    assert job.ttl is None
    assert job.result_ttl == defaults.DEFAULT_RESULT_TTL
    assert job.perform() == (('Hello',), kwargs)
