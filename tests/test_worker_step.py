"""BaseWorker.step(): one turn of the loop, driven by a test with a pinned time (as huey's Worker.loop(now)).

No threads, no sleeps, no bootstrap: a SimpleWorker is built and stepped. Runs on the real server and
on fakeredis (`connection`).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

import pytest
import redis

from rqfast import Queue, SimpleWorker, keys
from rqfast.dates import utcformat
from rqfast.job import Job
from rqfast.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(30)

PINNED = datetime(2031, 2, 3, 4, 5, 6, 789012, tzinfo=timezone.utc)


def test_step_with_nothing_queued_returns_false_without_blocking(connection: redis.Redis) -> None:
    worker = SimpleWorker(['q'], connection=connection)
    worker.dequeue_timeout = 60  # a blocking wait would take a minute
    started = time.monotonic()
    assert worker.step() is False
    assert worker.step(now=PINNED) is False
    assert time.monotonic() - started < 20  # an idle work() would block here
    assert worker.successful_job_count == worker.failed_job_count == 0


def test_step_runs_one_job_and_records_the_pinned_time(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.say_hello, 'step')
    worker = SimpleWorker(['q'], connection=connection)
    assert worker.step(now=PINNED) is True
    stored = Job.fetch(job.id, connection=connection)
    assert stored.get_status() == 'finished'
    assert stored.return_value() == 'Hi there, step!'
    assert stored.started_at == stored.ended_at == PINNED
    assert connection.hget(job.key, 'started_at') == utcformat(PINNED).encode()
    assert connection.hget(job.key, 'ended_at') == utcformat(PINNED).encode()
    assert stored.worker_name == worker.name
    assert job.id in FinishedJobRegistry('q', connection=connection)
    assert worker.successful_job_count == 1
    assert worker.total_working_time == 0.0  # started and ended at the same pinned moment
    assert worker.step(now=PINNED) is False


def test_a_failing_job_ends_at_the_pinned_time(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.div_by_zero)
    worker = SimpleWorker(['q'], connection=connection)
    assert worker.step(now=PINNED) is True
    stored = Job.fetch(job.id, connection=connection)
    assert stored.get_status() == 'failed'
    assert stored.started_at == stored.ended_at == PINNED
    assert 'ZeroDivisionError' in (stored.latest_result().exc_string or '')
    assert job.id in FailedJobRegistry('q', connection=connection)
    assert worker.failed_job_count == 1


def test_finishing_a_job_claims_the_next_and_the_next_step_runs_it(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first, second = queue.enqueue(jobs.add, 1, 2), queue.enqueue(jobs.add, 3, 4)
    worker = SimpleWorker(['q'], connection=connection)
    assert worker.step() is True
    assert Job.fetch(first.id, connection=connection).get_status() == 'finished'
    # the finish claimed the second job in the same script call: it is started, in the worker's hand
    assert Job.fetch(second.id, connection=connection).get_status() == 'started'
    assert second.id in StartedJobRegistry('q', connection=connection)
    assert queue.count == 0
    assert worker.step() is True
    assert Job.fetch(second.id, connection=connection).return_value() == 7
    assert worker.step() is False
    assert worker.successful_job_count == 2


def test_step_without_claiming_next_leaves_the_queue_alone(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first, second = queue.enqueue(jobs.noop), queue.enqueue(jobs.noop)
    worker = SimpleWorker(['q'], connection=connection)
    assert worker.step(claim_next=False) is True
    assert Job.fetch(first.id, connection=connection).get_status() == 'finished'
    assert Job.fetch(second.id, connection=connection).get_status() == 'queued'
    assert worker.step(claim_next=False) is True
    assert worker.step() is False


def test_a_step_pins_the_claim_of_the_next_job_too(connection: redis.Redis) -> None:
    """The next job is claimed in the finish call, at the step's time: its hash and the worker's say so."""
    queue = Queue('q', connection=connection)
    queue.enqueue(jobs.noop)
    second = queue.enqueue(jobs.noop)
    worker = SimpleWorker(['q'], connection=connection)
    assert worker.step(now=PINNED) is True
    assert Job.fetch(second.id, connection=connection).get_status() == 'started'
    assert connection.hget(second.key, 'started_at') == utcformat(PINNED).encode()
    assert connection.hget(worker.key, 'last_heartbeat') == utcformat(PINNED).encode()
    assert connection.hget(worker.key, 'current_job') == second.id.encode()
    # its started-registry entry expires a monitoring interval (and the heartbeat grace) after the pinned time
    ((_, score),) = connection.zrange(keys.started_registry_key('q'), 0, -1, withscores=True)
    assert score == int(PINNED.timestamp()) + worker.job_monitoring_interval + worker.heartbeat_grace
    assert worker.step() is True
    assert Job.fetch(second.id, connection=connection).get_status() == 'finished'


def test_a_busy_worker_keeps_its_keys_ttls_from_job_to_job_and_restores_them_when_gone(
    connection: redis.Redis,
) -> None:
    """From one job to the next, the worker hash and its RQ 3.0 executions index keep the TTL they have
    (no EXPIRE per job) and the index always holds the running execution; a hash that vanished while a
    job ran (expired, or deleted by a cleaner) is written back with its TTL, never without one."""
    queue = Queue('q', connection=connection)
    first, second, third, fourth = (queue.enqueue(jobs.add, n, n) for n in range(4))
    worker = SimpleWorker(['q'], connection=connection)
    worker.register_birth()
    worker_key, index_key = keys.worker_key(worker.name), keys.worker_executions_key(worker.name)
    assert worker.step() is True  # the first claim (claim_job) sets the busy TTLs, the finish claims the second
    assert connection.ttl(worker_key) > 0 and connection.ttl(index_key) > 0
    members = {m.decode().split(':')[0] for m in connection.smembers(index_key)}
    assert members == {second.id}  # the first's execution left after the second's joined
    connection.expire(worker_key, 1000)
    connection.expire(index_key, 1000)
    assert worker.step() is True  # busy to busy: the TTLs stay as they were
    assert 990 < connection.ttl(worker_key) <= 1000 and 990 < connection.ttl(index_key) <= 1000
    assert {m.decode().split(':')[0] for m in connection.smembers(index_key)} == {third.id}
    connection.delete(worker_key, index_key)  # gone while the third runs
    assert worker.step() is True  # the third finishes and the fourth is claimed: both keys written back...
    assert 0 < connection.ttl(worker_key) < 1000 and 0 < connection.ttl(index_key) < 1000  # ...with a TTL
    assert connection.hget(worker_key, 'current_job') == fourth.id.encode()
    assert worker.step() is True and worker.step() is False


def test_step_runs_each_job_through_the_worker_s_own_execute_and_its_record_claims_the_next(
    connection: redis.Redis,
) -> None:
    """A worker class's execute (rqfast's extension point) is what runs each job, with the job and its
    claim; the job's record claims the next one in the same call, as without the override."""
    calls: list[tuple[str, str, object]] = []

    class Traced(SimpleWorker):
        def execute(self, job: Job, claim: Any, now: datetime | None = None) -> Any:
            outcome = super().execute(job, claim, now)
            calls.append(('execute', job.id, (claim.job_id, outcome.kind.value)))
            return outcome

    queue = Queue('q', connection=connection)
    first, second = queue.enqueue(jobs.add, 1, 2), queue.enqueue(jobs.div_by_zero)
    worker = Traced(['q'], connection=connection)
    assert worker.uses_hooks
    assert worker.step(now=PINNED) is True
    assert worker._loop is not None and worker._loop.in_hand.job_id == second.id  # claimed by the first's record
    assert worker.step(now=PINNED, claim_next=False) is True
    assert calls == [('execute', first.id, (first.id, 'success')), ('execute', second.id, (second.id, 'failure'))]
    assert Job.fetch(first.id, connection=connection).return_value() == 3
    assert Job.fetch(second.id, connection=connection).get_status() == 'failed'
    assert worker.successful_job_count == worker.failed_job_count == 1
