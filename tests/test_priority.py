"""Priority lanes within one queue: enqueue(..., priority=0..9), 0 first (rqfast's own option).

A prioritized job is on its queue's list as any job (RQ's tools count it, RQ's workers run it in list
order) and in the additive sorted set rq:queue:<name>:priority, which rqfast's claim reads first:
lanes in order, FIFO within a lane, then the jobs without a priority (docs/features.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import rq
import rq.worker
from click.testing import CliRunner

from rqfast import Queue, RateLimit, Retry, SimpleWorker, engine, keys
from rqfast.cli import main
from rqfast.decorators import job
from rqfast.job import Job, JobStatus
from rqfast.scheduler import RQScheduler

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

LANES = 'rq:queue:q:priority'  # (keys.priority_queue_key('q'))


def work(connection: redis.Redis, max_jobs: int | None = None) -> SimpleWorker:
    worker = SimpleWorker(['q'], connection=connection)
    worker.work(burst=True, max_jobs=max_jobs, logging_level='WARNING')
    return worker


def run_order(connection: redis.Redis, enqueued: list[Job]) -> list[Job]:
    """The jobs that started, in the order they started."""
    for one in enqueued:
        one.refresh()
    started = [one for one in enqueued if one.started_at is not None]
    return sorted(started, key=lambda one: one.started_at)  # type: ignore[arg-type,return-value]


class RQSimpleWorker(rq.worker.SimpleWorker):
    """RQ 2.12's own SimpleWorker, without its pub/sub thread (it writes nothing and takes 1 s to join)."""

    def subscribe(self) -> None:
        self.pubsub_thread = None

    def unsubscribe(self) -> None:
        pass


def test_ten_urgent_jobs_start_within_the_next_ten_claims_behind_a_thousand(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    backlog = queue.enqueue_many([Queue.prepare_data(jobs.add, (i, 0), priority=9) for i in range(1000)])
    urgent = [queue.enqueue(jobs.add, i, 1, priority=0) for i in range(10)]
    assert queue.count == 1010  # RQ's tools count every job: the list holds them all

    work(connection, max_jobs=10)

    assert run_order(connection, urgent + backlog[:20] + backlog[-20:]) == urgent
    assert all(one.get_status() == JobStatus.FINISHED for one in urgent)
    assert queue.count == 1000 and queue.job_ids[:3] == [one.id for one in backlog[:3]]
    assert connection.zcard(LANES) == 1000


def test_lanes_in_order_fifo_within_a_lane_then_the_jobs_without_priority(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    plain_1 = queue.enqueue(jobs.noop)
    low_1 = queue.enqueue(jobs.noop, priority=5)
    high_1 = queue.enqueue(jobs.noop, priority=1)
    plain_2 = queue.enqueue(jobs.noop)
    low_2 = queue.enqueue(jobs.noop, priority=5)
    high_2 = queue.enqueue(jobs.noop, priority=1)
    front = queue.enqueue(jobs.noop, priority=5, at_front=True)  # first of its lane (and of the list)
    top = queue.enqueue(jobs.noop, priority=0)
    everything = [plain_1, low_1, high_1, plain_2, low_2, high_2, front, top]
    assert queue.job_ids[0] == front.id and len(queue.job_ids) == 8  # the list keeps every job, as RQ's tools see it

    work(connection)

    assert run_order(connection, everything) == [top, high_1, high_2, front, low_1, low_2, plain_1, plain_2]
    assert not connection.exists(LANES)


def test_the_job_keeps_its_priority_field_and_no_priority_writes_nothing_new(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    plain = queue.enqueue(jobs.noop)
    assert not connection.exists(LANES)
    assert b'priority' not in connection.hgetall(keys.job_key(plain.id))
    assert Job.fetch(plain.id, connection=connection).priority is None

    urgent = queue.enqueue(jobs.noop, priority=0)
    assert connection.hget(keys.job_key(urgent.id), 'priority') == b'0'
    assert Job.fetch(urgent.id, connection=connection).priority == 0
    assert connection.zscore(LANES, urgent.id) == 5 * 10**11  # the middle of lane 0 (keys.PRIORITY_LANE / 2)


@pytest.mark.parametrize('bad', [-1, 10, 1.0, '1', True, False, [0]])
def test_a_bad_priority_raises_before_redis_is_touched(connection: redis.Redis, bad: Any) -> None:
    queue = Queue('q', connection=connection)
    in_an_hour = datetime.now(timezone.utc) + timedelta(hours=1)
    attempts = [
        lambda: queue.enqueue(jobs.noop, priority=bad),
        lambda: queue.enqueue_call(jobs.noop, priority=bad),
        lambda: queue.enqueue_at(in_an_hour, jobs.noop, priority=bad),
        lambda: queue.enqueue_in(timedelta(minutes=1), jobs.noop, priority=bad),
        lambda: Queue.prepare_data(jobs.noop, priority=bad),
        lambda: job('q', connection=connection, priority=bad),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError, match='priority must be an int from 0'):
            attempt()
    made = queue.create_job(jobs.noop)
    made.priority = bad
    with pytest.raises(ValueError, match='priority must be an int from 0'):
        queue.enqueue_job(made)
    assert connection.dbsize() == 0


def test_enqueue_many_enqueue_at_and_the_decorator_take_a_priority(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    waiting = queue.enqueue_many([Queue.prepare_data(jobs.noop) for _ in range(3)])
    later = queue.enqueue_at(datetime.now(timezone.utc) - timedelta(seconds=5), jobs.noop, priority=2)
    assert later.get_status() == JobStatus.SCHEDULED and not connection.exists(LANES)
    scheduler = RQScheduler(['q'], connection=connection)
    try:
        scheduler.tick()  # the due job moves onto the queue and into its lane
    finally:
        scheduler.stop()
    decorated = job('q', connection=connection, priority=1)(jobs.noop).delay()
    batch = queue.enqueue_many([Queue.prepare_data(jobs.noop, priority=0)])
    assert Job.fetch(later.id, connection=connection).priority == 2

    work(connection)

    assert run_order(connection, [*waiting, later, decorated, *batch]) == [*batch, decorated, later, *waiting]


def test_a_retried_or_requeued_job_keeps_its_lane(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    backlog = [queue.enqueue(jobs.noop, priority=9) for _ in range(3)]
    failing = queue.enqueue(jobs.div_by_zero, priority=0, retry=Retry(max=1))

    work(connection, max_jobs=2)  # the failure, then its retry: back in lane 0, ahead of the backlog

    failing.refresh()
    assert failing.get_status() == JobStatus.FAILED and failing.retries_left == 0
    assert run_order(connection, backlog) == [] and connection.zcard(LANES) == 3

    failing.requeue()
    assert connection.zscore(LANES, failing.id) is not None
    work(connection, max_jobs=1)
    assert Job.fetch(failing.id, connection=connection).get_status() == JobStatus.FAILED
    assert run_order(connection, backlog) == []


def test_a_dependent_keeps_its_lane_when_released(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    parent = queue.enqueue(jobs.noop, priority=0)
    backlog = [queue.enqueue(jobs.noop, priority=9) for _ in range(3)]
    child = queue.enqueue(jobs.noop, priority=0, depends_on=parent)
    assert child.get_status() == JobStatus.DEFERRED and connection.zcard(LANES) == 4

    work(connection, max_jobs=2)

    assert run_order(connection, [parent, child, *backlog]) == [parent, child]


def test_delete_cancel_remove_and_empty_leave_no_lane_entry(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    deleted, canceled, removed, kept = (queue.enqueue(jobs.noop, priority=3) for _ in range(4))
    deleted.delete()
    canceled.cancel()
    assert queue.remove(removed) == 1
    assert [m.decode() for m in connection.zrange(LANES, 0, -1)] == [kept.id]
    assert queue.job_ids == [kept.id]
    assert queue.empty() == 1
    assert not connection.exists(LANES)
    again = queue.enqueue(jobs.noop, priority=3)
    queue.delete()
    assert not connection.exists(LANES) and not connection.exists(keys.job_key(again.id))


def test_an_rq_worker_runs_a_prioritized_job_and_the_claim_skips_its_stale_entry(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(jobs.add, 1, 2, priority=5)
    taken_away = queue.enqueue(jobs.add, 3, 4, priority=1)
    later = queue.enqueue(jobs.add, 5, 6, priority=5)

    theirs = RQSimpleWorker(['q'], connection=connection, name='rq-worker')
    theirs.work(burst=True, max_jobs=1, logging_level='WARNING')  # RQ's worker: the list's head, FIFO
    rq.Queue('q', connection=connection).remove(taken_away.id)  # RQ's remove knows no lane
    assert first.get_status() == JobStatus.FINISHED and first.return_value() == 3
    assert connection.zcard(LANES) == 3  # two stale entries, left for rqfast's claim

    ours = work(connection)

    assert later.get_status() == JobStatus.FINISHED and later.return_value() == 11
    first.refresh()
    taken_away.refresh()
    assert first.worker_name == 'rq-worker'  # run once, by RQ's worker
    assert taken_away.get_status() == JobStatus.QUEUED and taken_away.started_at is None  # not on the list: not run
    assert ours.successful_job_count == 1
    assert not connection.exists(LANES)


def test_a_job_taken_by_a_blocking_move_leaves_its_lane(connection: redis.Redis) -> None:
    """An idle worker's BLMOVE takes the list's head into the intermediate list; its claim drops the lane entry."""
    queue = Queue('q', connection=connection)
    moved = queue.enqueue(jobs.noop, priority=4)
    assert connection.lmove('rq:queue:q', 'rq:queue:q:intermediate') == moved.id.encode()

    claim = engine.claim_job(connection, engine.WorkerRef('w', ['q']), moved=('q', moved.id))

    assert claim.job_id == moved.id and moved.get_status() == JobStatus.STARTED
    assert not connection.exists(LANES)


def test_a_rate_limited_job_keeps_its_lane_when_it_gets_a_slot(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    limit = RateLimit('one-at-a-time', 1)
    first = queue.enqueue(jobs.noop, priority=0, rate_limit=limit)
    second = queue.enqueue(jobs.noop, priority=0, rate_limit=limit)
    backlog = [queue.enqueue(jobs.noop, priority=9) for _ in range(3)]
    assert second.get_status() == JobStatus.RATE_LIMITED and connection.zscore(LANES, second.id) is None

    work(connection, max_jobs=2)  # the first one's end gives the second its slot, and lane 0

    assert run_order(connection, [first, second, *backlog]) == [first, second]


def test_priority_counts_per_lane(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    queue.enqueue(jobs.noop)
    assert queue.priority_counts() == {}
    for lane in (0, 0, 4, 9, 9, 9):
        queue.enqueue(jobs.noop, priority=lane)
    assert queue.priority_counts() == {0: 2, 4: 1, 9: 3}


def test_rqfast_info_shows_the_jobs_per_lane(redis_conn: redis.Redis, redis_url: str) -> None:
    queue = Queue('q', connection=redis_conn)
    Queue('plain', connection=redis_conn).enqueue(jobs.noop)
    queue.enqueue(jobs.noop)
    queue.enqueue(jobs.noop, priority=0)
    queue.enqueue(jobs.noop, priority=9)
    queue.pause()

    result = CliRunner().invoke(main, ['info', '-u', redis_url, '--only-queues', '--raw'])

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert 'queue q 3, 0 executing, 0 finished, 0 failed, lanes 0:1 9:1, paused' in lines
    assert 'queue plain 1, 0 executing, 0 finished, 0 failed' in lines


def test_rqfast_enqueue_takes_a_priority(redis_conn: redis.Redis, redis_url: str) -> None:
    runner = CliRunner()
    plain = runner.invoke(main, ['enqueue', '-u', redis_url, '-q', 'q', 'jobs.noop', '--job-id', 'plain'])
    urgent = runner.invoke(
        main, ['enqueue', '-u', redis_url, '-q', 'q', 'jobs.noop', '--job-id', 'u', '--priority', '0']
    )
    bad = runner.invoke(main, ['enqueue', '-u', redis_url, '-q', 'q', 'jobs.noop', '--priority', '10'])

    assert plain.exit_code == 0 and urgent.exit_code == 0, plain.output + urgent.output
    assert bad.exit_code == 2 and "'--priority'" in bad.output
    assert Job.fetch('u', connection=redis_conn).priority == 0
    assert Job.fetch('plain', connection=redis_conn).priority is None
    assert redis_conn.zrange(LANES, 0, -1) == [b'u'] and Queue('q', connection=redis_conn).job_ids == ['plain', 'u']


def test_a_worker_with_concurrency_claims_the_lanes_first_too(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    backlog = queue.enqueue_many([Queue.prepare_data(jobs.noop, priority=9) for _ in range(40)])
    urgent = queue.enqueue_many([Queue.prepare_data(jobs.noop, priority=0) for _ in range(8)])

    SimpleWorker(['q'], connection=connection, concurrency=4).work(burst=True, logging_level='WARNING')

    order = [one.id for one in run_order(connection, backlog + urgent)]
    assert len(order) == 48
    # The lanes are claimed first; a job's started_at is when its thread began it, so the last urgent jobs
    # and backlog jobs claimed in the same call (4 slots, 1 held ahead) may start in either order.
    assert {one.id for one in urgent} <= set(order[: len(urgent) + 4])
