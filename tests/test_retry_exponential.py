"""Retry.exponential: growing delays stored as RQ's own `retry_intervals` list, followed by rqfast and RQ workers."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
import rq.job

from rqfast import Queue, Retry, SimpleWorker
from rqfast.scheduler import RQScheduler

try:
    import worker_jobs
except ImportError:  # tests/ became a package
    from tests import worker_jobs  # type: ignore[no-redef]


def test_delays_double_from_base_up_to_cap() -> None:
    assert Retry.exponential(5).intervals == [1, 2, 4, 8, 16]
    assert Retry.exponential(6, base=10, cap=100).intervals == [10, 20, 40, 80, 100, 100]
    assert Retry.exponential(3, base=1.5).intervals == [2, 3, 6]  # rounded: RQ stores ints
    retry = Retry.exponential(2, enqueue_at_front=True)
    assert retry.max == 2 and retry.enqueue_at_front
    assert Retry.exponential(10_000).intervals[-1] == 3600  # the default cap; no overflow


def test_jitter_draws_each_delay_between_its_fraction_and_itself() -> None:
    retry = Retry.exponential(8, base=100, cap=10_000, jitter=0.5)
    full = [100, 200, 400, 800, 1600, 3200, 6400, 10_000]
    draws = [retry.intervals for _ in range(50)]
    for drawn in draws:
        assert all(isinstance(d, int) for d in drawn)
        assert all(round(d * 0.5) <= got <= d for got, d in zip(drawn, full, strict=True))
    assert len({tuple(d) for d in draws}) > 1  # drawn afresh for each job, not once per Retry
    assert all(0 <= d <= 40 for d in Retry.exponential(3, base=10, jitter=True).intervals)
    assert Retry.exponential(3, base=10, jitter=False).intervals == [10, 20, 40]


@pytest.mark.parametrize(
    ('kwargs', 'message'),
    [
        ({'max': 0}, 'max: an int greater than 0'),
        ({'max': 2.5}, 'max: an int greater than 0'),
        ({'max': True}, 'max: an int greater than 0'),
        ({'max': 3, 'base': 0}, 'base: a number of seconds greater than 0'),
        ({'max': 3, 'base': '1'}, 'base: a number of seconds greater than 0'),
        ({'max': 3, 'base': 10, 'cap': 5}, 'cap: a number of seconds no smaller than base'),
        ({'max': 3, 'jitter': 1.5}, 'jitter: a fraction between 0 and 1'),
        ({'max': 3, 'jitter': -0.1}, 'jitter: a fraction between 0 and 1'),
        ({'max': 3, 'jitter': 'yes'}, 'jitter: a fraction between 0 and 1'),
    ],
)
def test_bad_arguments_are_refused_with_the_argument_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Retry.exponential(**kwargs)


def test_rq_reads_the_stored_intervals(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    plain = queue.enqueue(worker_jobs.fail_until, 5, retry=Retry.exponential(4, base=5))
    jittered = queue.enqueue(worker_jobs.fail_until, 5, retry=Retry.exponential(4, base=5, jitter=0.3))
    theirs = rq.job.Job.fetch(plain.id, connection=connection)
    assert theirs.retry_intervals == [5, 10, 20, 40] and theirs.retries_left == 4
    theirs = rq.job.Job.fetch(jittered.id, connection=connection)
    assert theirs.retry_intervals == jittered.retry_intervals and len(theirs.retry_intervals) == 4


def test_an_rqfast_worker_waits_the_growing_delays(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue(worker_jobs.fail_until, 5, retry=Retry.exponential(3, base=30))
    scheduler = RQScheduler(['q'], connection=connection)
    for delay in (30, 60, 120):
        before = time.time()
        SimpleWorker(['q'], connection=connection).work(burst=True, logging_level='WARNING')
        score = connection.zscore('rq:scheduled:q', job.id)
        assert score is not None and before + delay - 1 <= score <= time.time() + delay + 1
        connection.zadd('rq:scheduled:q', {job.id: 0})  # due now instead of in `delay` seconds
        assert scheduler.tick() == {'q': 1}
    SimpleWorker(['q'], connection=connection).work(burst=True, logging_level='WARNING')
    assert job.get_status() == 'failed' and job.get_meta()['runs'] == 4


def test_an_rq_worker_follows_the_same_delays(connection: redis.Redis) -> None:
    import rq

    job = Queue('q', connection=connection).enqueue(worker_jobs.fail_until, 5, retry=Retry.exponential(3, base=45))
    before = time.time()
    rq.SimpleWorker(['q'], connection=connection).work(burst=True, logging_level='WARNING')
    score = connection.zscore('rq:scheduled:q', job.id)
    assert score is not None and before + 44 <= score <= time.time() + 46
    assert rq.job.Job.fetch(job.id, connection=connection).retries_left == 2


def test_a_pickled_retry_keeps_the_attributes_older_readers_know() -> None:
    import pickle

    retry = Retry.exponential(3, base=2, jitter=0.5)
    state = retry.__getstate__()
    assert state['intervals'] == [2, 4, 8] and '_intervals' not in state  # what older rqfast versions read
    loaded = pickle.loads(pickle.dumps(retry))
    assert loaded.max == 3 and loaded.jitter == 0.5 and all(1 <= d <= 8 for d in loaded.intervals)
    older = Retry.__new__(Retry)  # a Retry pickled before the property (its state: max, intervals, ...)
    older.__setstate__({'max': 2, 'intervals': [5, 9], 'enqueue_at_front': False})
    assert older.intervals == [5, 9] and older.jitter == 0.0
