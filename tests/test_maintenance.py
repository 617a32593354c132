"""Maintenance: abandoned jobs, expired registry entries, stranded intermediate ids, dead workers.

The abandoned-job tests kill a real SimpleWorker process with SIGKILL in the middle of a job. Its
started-registry entry keeps the deadline of its last heartbeat (now + min(timeout,
job_monitoring_interval) + 60); rather than wait that minute out, the tests either pass the pass a
`timestamp` past the deadline, or move the entry's deadline into the past (what a lapse looks
like) and watch a live worker's periodic pass find it. Both run the same script.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
import redis
import rq
import rq.registry

from rqfast import Callback, Queue, Retry, SimpleWorker, engine, keys, maintenance
from rqfast.dates import now
from rqfast.exceptions import AbandonedJobError
from rqfast.job import Dependency, JobStatus
from rqfast.outcome import Outcome, OutcomeKind
from rqfast.registry import FailedJobRegistry, StartedJobRegistry
from rqfast.results import Result

try:
    import jobs
    import worker_jobs
    from polling import wait_for
except ImportError:  # tests/ became a package
    from tests import jobs, worker_jobs  # type: ignore[no-redef]
    from tests.polling import wait_for  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

TESTS = Path(__file__).resolve().parent
WJOBS = worker_jobs.__name__
MONITORING_INTERVAL = 2  # the victim's: its entry's deadline is at most 62 s after its last heartbeat

WORKER_SCRIPT = """
import sys, redis
from rqfast.worker import SimpleWorker
conn = redis.Redis.from_url(sys.argv[1])
worker = SimpleWorker(['q'], connection=conn, name=sys.argv[2], job_monitoring_interval=int(sys.argv[3]),
                      maintenance_interval=int(sys.argv[4]))
worker.work(burst=False, logging_level='WARNING', max_jobs=int(sys.argv[5]) or None,
            max_idle_time=int(sys.argv[6]))
"""


def start_worker(
    redis_url: str,
    name: str,
    monitoring_interval: int = MONITORING_INTERVAL,
    maintenance_interval: int = 60,
    max_jobs: int = 1,
    max_idle_time: int = 20,
) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS.parent)]))
    return subprocess.Popen(
        [
            sys.executable,
            '-c',
            WORKER_SCRIPT,
            redis_url,
            name,
            str(monitoring_interval),
            str(maintenance_interval),
            str(max_jobs),
            str(max_idle_time),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def kill_mid_job(conn: redis.Redis, redis_url: str, processes: list, job: Any) -> float:
    """Start a victim worker, let it take `job`, SIGKILL it; the moment of the kill (epoch)."""
    victim = start_worker(redis_url, 'victim')
    processes.append(victim)
    wait_for(lambda: job.get_status() == JobStatus.STARTED)
    time.sleep(MONITORING_INTERVAL + 0.5)  # at least one in-job heartbeat
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    return time.time()


def wip_entries(conn: redis.Redis) -> list[tuple[str, float]]:
    return [(m.decode(), s) for m, s in conn.zrange(keys.started_registry_key('q'), 0, -1, withscores=True)]


# --- abandoned jobs, with a real worker killed mid-job


def test_killed_worker_job_is_failed_as_abandoned(redis_conn: redis.Redis, redis_url: str, processes: list) -> None:
    queue = Queue('q', connection=redis_conn)
    job = queue.enqueue(f'{WJOBS}.wait_for_key', 'never', 50, on_failure=Callback(f'{WJOBS}.failure_callback_meta'))
    killed_at = kill_mid_job(redis_conn, redis_url, processes, job)

    [(member, deadline)] = wip_entries(redis_conn)
    assert member.startswith(f'{job.id}:')
    # The bound: the entry lapses at most min(timeout, monitoring interval) + 60 s after the kill.
    assert deadline <= killed_at + MONITORING_INTERVAL + 60 + 1
    assert job.get_status() == JobStatus.STARTED
    before = time.time()
    assert maintenance.clean_registries(redis_conn, ['q'], timestamp=deadline - 1).abandoned == []

    report = maintenance.clean_registries(redis_conn, ['q'], timestamp=deadline + 1)

    assert report.abandoned == [('q', job.id, 'failed')]
    assert job.get_status() == JobStatus.FAILED
    assert wip_entries(redis_conn) == []
    assert job.id in FailedJobRegistry('q', connection=redis_conn)
    score = redis_conn.zscore(keys.failed_registry_key('q'), job.id)
    assert before + 31536000 - 1 <= score <= time.time() + 31536000
    assert 31535000 < redis_conn.ttl(keys.job_key(job.id)) <= 31536000
    result = job.latest_result()
    assert result.type == Result.Type.FAILED and result.worker_name == ''
    assert result.exc_string.startswith('Moved to FailedJobRegistry, due to AbandonedJobError, at ')
    assert redis_conn.ttl(keys.results_key(job.id)) == -1  # no failure_ttl given: RQ never expires it
    assert redis_conn.get(f'callback:failure:{job.id}') == b'AbandonedJobError'
    # RQ reads the same story.
    rq_job = rq.job.Job.fetch(job.id, connection=redis_conn)
    assert rq_job.get_status() == 'failed'
    assert rq_job.latest_result().exc_string == result.exc_string
    assert job.id in rq.registry.FailedJobRegistry('q', connection=redis_conn)


def test_killed_worker_job_is_retried_by_a_live_worker(
    redis_conn: redis.Redis, redis_url: str, processes: list
) -> None:
    """The live worker's own periodic pass finds the lapsed entry; it retries the job and then runs it."""
    queue = Queue('q', connection=redis_conn)
    job = queue.enqueue(f'{WJOBS}.wait_for_key', 'go', 50, retry=Retry(max=1))
    kill_mid_job(redis_conn, redis_url, processes, job)
    redis_conn.set('go', 1)
    live = start_worker(redis_url, 'live', maintenance_interval=1)
    processes.append(live)
    wait_for(lambda: redis_conn.exists(keys.worker_key('live')))
    time.sleep(0.5)  # its start-up pass has run: the entry has not lapsed yet
    assert job.get_status() == JobStatus.STARTED

    [(member, _)] = wip_entries(redis_conn)
    redis_conn.zadd(keys.started_registry_key('q'), {member: int(time.time()) - 1}, xx=True)  # the lapse
    found_in = wait_for(lambda: job.get_status() != JobStatus.STARTED, timeout=10)
    wait_for(lambda: job.get_status() == JobStatus.FINISHED, timeout=10)

    assert found_in < 3  # maintenance_interval=1; at the default 60 s this is at most a minute
    job.refresh()
    assert job.retries_left == 0
    assert job.worker_name == 'live'
    assert job.return_value() is True
    assert live.wait(25) == 0


def test_killed_worker_job_is_failed_by_a_live_worker(redis_conn: redis.Redis, redis_url: str, processes: list) -> None:
    queue = Queue('q', connection=redis_conn)
    job = queue.enqueue(f'{WJOBS}.wait_for_key', 'never', 50)
    kill_mid_job(redis_conn, redis_url, processes, job)
    [(member, _)] = wip_entries(redis_conn)
    redis_conn.zadd(keys.started_registry_key('q'), {member: int(time.time()) - 1}, xx=True)

    live = start_worker(redis_url, 'live', maintenance_interval=60)
    processes.append(live)
    wait_for(lambda: job.get_status() == JobStatus.FAILED, timeout=10)  # its start-up pass

    assert job.latest_result().exc_string.startswith('Moved to FailedJobRegistry, due to AbandonedJobError')
    assert wip_entries(redis_conn) == []


# --- abandoned jobs, the rules (a claim with no worker behind it stands for a dead worker)


def claim(conn: redis.Redis, queue: str = 'q') -> engine.Claim:
    claimed = engine.claim_job(conn, engine.WorkerRef('', [queue], job_monitoring_interval=30))
    assert claimed
    return claimed


def lapse() -> float:
    """A cutoff past any deadline a claim just set."""
    return time.time() + 200


def test_abandoned_job_with_retry_interval_is_scheduled(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop, retry=Retry(max=2, interval=[5, 50]), ttl=1000)
    claim(connection)
    now = int(time.time())

    report = maintenance.clean_registries(connection, ['q'], timestamp=lapse())

    assert report.abandoned == [('q', job.id, 'retried')]
    job.refresh()
    assert job.get_status() == JobStatus.SCHEDULED
    assert job.retries_left == 1
    assert now + 5 <= connection.zscore(keys.scheduled_registry_key('q'), job.id) <= now + 6
    assert queue.get_job_ids() == []
    assert connection.xlen(keys.results_key(job.id)) == 0
    assert 0 < connection.ttl(keys.job_key(job.id)) <= 1000


def test_abandoned_job_without_interval_goes_back_on_its_queue(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    back = queue.enqueue(jobs.noop, retry=Retry(max=1))
    claim(connection)
    front = queue.enqueue(jobs.noop, retry=Retry(max=1, enqueue_at_front=True))
    claim(connection)
    other = queue.enqueue(jobs.noop)

    report = maintenance.clean_registries(connection, ['q'], timestamp=lapse())

    assert sorted(report.abandoned) == sorted([('q', back.id, 'retried'), ('q', front.id, 'retried')])
    assert queue.get_job_ids() == [front.id, other.id, back.id]
    assert back.get_status() == front.get_status() == JobStatus.QUEUED


def test_abandoned_job_failure_ttl_and_dependents(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    parent = queue.enqueue(jobs.noop, failure_ttl=300)
    tolerant = queue.enqueue(jobs.noop, depends_on=Dependency(jobs=[parent], allow_failure=True))
    strict = queue.enqueue(jobs.noop, depends_on=parent)
    claim(connection)

    maintenance.clean_registries(connection, ['q'], timestamp=lapse())

    assert parent.get_status() == JobStatus.FAILED
    assert 0 < connection.ttl(keys.results_key(parent.id)) <= 300
    assert 0 < connection.ttl(keys.job_key(parent.id)) <= 300
    assert tolerant.get_status() == JobStatus.QUEUED
    assert strict.get_status() == JobStatus.DEFERRED
    assert queue.get_job_ids() == [tolerant.id]


def test_failure_ttl_minus_one_keeps_the_failed_entry(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop, failure_ttl=-1)
    claim(connection)

    maintenance.clean_registries(connection, ['q'], timestamp=lapse())

    assert connection.zscore(keys.failed_registry_key('q'), job.id) == -1
    assert connection.ttl(keys.job_key(job.id)) == -1
    maintenance.clean_registries(connection, ['q'], timestamp=lapse())
    assert connection.zscore(keys.failed_registry_key('q'), job.id) == -1


def test_exception_handlers_see_abandoned_job_error(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop)
    claim(connection)
    seen: list[Any] = []

    count = maintenance.fail_abandoned_jobs(
        connection, 'q', timestamp=lapse(), exception_handlers=[lambda j, t, v, tb: seen.append((j.id, t))]
    )

    assert count == 1
    assert seen == [(job.id, AbandonedJobError)]


@pytest.mark.parametrize('compat', ['2.12', ''])
def test_every_abandoned_job_goes_through_execute_failure_callback_as_in_rq(
    connection: redis.Redis, monkeypatch: pytest.MonkeyPatch, compat: str
) -> None:
    """RQ's cleanup runs the failure callback step for each abandoned job, a callback or not (an
    override sees them all), then the handlers, with AbandonedJobError; a job without a callback or a
    handler is not fetched for it. RQ 2.12 calls job.execute_failure_callback (the cleaning stack as
    the traceback); RQ 3.0 rq.callbacks.execute_failure_callback(job, ...) with no traceback."""
    from rqfast import defaults
    from rqfast.job import Job
    from rqfast.timeouts import UnixSignalDeathPenalty

    monkeypatch.setattr(defaults, 'RQFAST_COMPAT', compat)
    calls: list[Any] = []
    if compat:
        monkeypatch.setattr(Job, 'execute_failure_callback', lambda job, *args: calls.append((job.id, *args[:2])))
    else:
        monkeypatch.setattr(maintenance, 'execute_failure_callback', lambda job, *args: calls.append((job.id, *args)))
    queue = Queue('q', connection=connection)
    first, second = queue.enqueue(jobs.noop), queue.enqueue(jobs.noop)
    claim(connection), claim(connection)

    assert maintenance.fail_abandoned_jobs(connection, 'q', timestamp=lapse()) == 2
    if compat:
        expected = [(job.id, UnixSignalDeathPenalty, AbandonedJobError) for job in (first, second)]
    else:
        expected = [(job.id, UnixSignalDeathPenalty, AbandonedJobError, ANY, None) for job in (first, second)]
    assert sorted(calls, key=str) == sorted(expected, key=str)


def test_started_registry_cleanup_fails_abandoned_jobs(connection: redis.Redis) -> None:
    """RQ's StartedJobRegistry.cleanup (and so registry.count) runs the same logic, lock or no lock."""
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop)
    claim(connection)
    connection.set(keys.maintenance_lock_key('q'), 1)
    registry = StartedJobRegistry('q', connection=connection)

    registry.cleanup(timestamp=time.time() + 10)
    assert registry.count == 1  # not lapsed yet

    registry.cleanup(timestamp=lapse())

    assert registry.get_job_count(cleanup=False) == 0
    assert job.get_status() == JobStatus.FAILED


def test_only_started_jobs_are_failed(connection: redis.Redis) -> None:
    """An entry whose job was settled meanwhile (or is gone) is only dropped."""
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop)
    claimed = claim(connection)
    gone = f'missing:{claimed.execution_id}'
    connection.zadd(keys.started_registry_key('q'), {gone: 1})
    connection.hset(keys.job_key(job.id), 'status', 'canceled')

    report = maintenance.clean_registries(connection, ['q'], timestamp=lapse())

    assert report.abandoned == []
    assert connection.zcard(keys.started_registry_key('q')) == 0
    assert job.get_status() == JobStatus.CANCELED


def test_an_abandoned_job_settled_meanwhile_is_left_alone(connection: redis.Redis) -> None:
    """finish_job's fence: the outcome is recorded only while the job is started and its entry still there."""
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop)
    claimed = claim(connection)
    member = f'{job.id}:{claimed.execution_id}'
    moment = now()
    plan = engine.plan(job, Outcome(OutcomeKind.ABANDONED, exc_string='gone'), moment)
    connection.hset(keys.job_key(job.id), 'status', 'finished')  # its worker recorded it after all

    assert not engine.record_abandoned(connection, job.id, 'q', member, plan, moment)

    assert job.get_status() == JobStatus.FINISHED
    assert connection.zcard(keys.started_registry_key('q')) == 0  # the entry is dropped
    assert connection.zcard(keys.failed_registry_key('q')) == 0
    assert not connection.exists(keys.results_key(job.id))


def test_an_abandoned_job_is_recorded_once(connection: redis.Redis) -> None:
    """Two cleaners that found the same entry: the second one's fence no longer holds."""
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop)
    claimed = claim(connection)
    member = f'{job.id}:{claimed.execution_id}'
    moment = now()
    plan = engine.plan(job, Outcome(OutcomeKind.ABANDONED, exc_string='gone'), moment)

    first = engine.record_abandoned(connection, job.id, 'q', member, plan, moment)
    second = engine.record_abandoned(connection, job.id, 'q', member, plan, moment)

    assert (first, second) == (True, False)
    assert job.get_status() == JobStatus.FAILED
    assert connection.xlen(keys.results_key(job.id)) == 1
    assert connection.zcard(keys.started_registry_key('q')) == 0


def test_worker_start_runs_the_pass(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop)
    claimed = claim(connection)
    connection.zadd(keys.started_registry_key('q'), {f'{job.id}:{claimed.execution_id}': 1}, xx=True)

    SimpleWorker(['q'], connection=connection).work(burst=True, logging_level=None)

    wait_for(lambda: job.get_status() == JobStatus.FAILED, timeout=5)  # the pass runs on its own thread


# --- the rest of the pass


def test_expired_finished_and_failed_entries_are_dropped(connection: redis.Redis) -> None:
    now = int(time.time())
    connection.zadd(keys.finished_registry_key('q'), {'f-old': now - 10, 'f-new': now + 100, 'f-inf': '+inf'})
    connection.zadd(keys.failed_registry_key('q'), {'x-old': now - 10, 'x-new': now + 100, 'x-keep': -1})

    report = maintenance.clean_registries(connection, ['q'])

    assert (report.finished_expired, report.failed_expired) == (1, 1)
    assert connection.zrange(keys.finished_registry_key('q'), 0, -1) == [b'f-new', b'f-inf']
    assert connection.zrange(keys.failed_registry_key('q'), 0, -1) == [b'x-keep', b'x-new']


def test_ids_stranded_in_the_intermediate_list_are_put_back(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    stranded = queue.enqueue(jobs.noop)
    waiting = queue.enqueue(jobs.noop)
    running = queue.enqueue(jobs.noop)
    canceled = queue.enqueue(jobs.noop)
    intermediate = keys.intermediate_queue_key('q')
    connection.lmove(keys.queue_key('q'), intermediate, 'LEFT', 'RIGHT')  # stranded
    connection.lrem(keys.queue_key('q'), 1, canceled.id)
    connection.hset(keys.job_key(canceled.id), 'status', 'canceled')
    connection.rpush(intermediate, 'no-such-job', canceled.id)
    connection.lrem(keys.queue_key('q'), 1, running.id)
    connection.lpush(keys.queue_key('q'), running.id)
    claim(connection)  # running: started, and in the started registry
    connection.rpush(intermediate, running.id)  # an RQ worker between its LMOVE and the job start
    marker = f'{intermediate}:first_seen:{stranded.id}'

    first = maintenance.clean_registries(connection, ['q'])  # first sighting: only noted

    assert first.rescued == [] and first.dropped == 1
    assert connection.lrange(intermediate, 0, -1) == [stranded.id.encode(), canceled.id.encode(), running.id.encode()]
    assert 86000 < connection.ttl(marker) <= 86400
    connection.set(marker, repr(time.time() - 61))
    connection.set(f'{intermediate}:first_seen:{canceled.id}', repr(time.time() - 61))

    second = maintenance.clean_registries(connection, ['q'])

    assert second.rescued == [('q', stranded.id)] and second.dropped == 1  # the canceled job is only removed
    assert queue.get_job_ids() == [stranded.id, waiting.id]
    assert connection.lrange(intermediate, 0, -1) == [running.id.encode()]
    assert stranded.get_status() == JobStatus.QUEUED
    assert not connection.exists(marker)


def test_dead_workers_leave_the_worker_sets(connection: redis.Redis) -> None:
    live = SimpleWorker(['q'], connection=connection, name='live')
    live.register_birth()
    for key in (keys.workers_by_queue_key('q'), keys.WORKERS):
        connection.sadd(key, keys.worker_key('ghost'))

    report = maintenance.clean_registries(connection, ['q'])

    assert report.dead_workers == 1
    assert connection.smembers(keys.workers_by_queue_key('q')) == {keys.worker_key('live').encode()}
    assert connection.smembers(keys.WORKERS) == {keys.worker_key('live').encode()}


def test_a_held_maintenance_lock_skips_the_queue(connection: redis.Redis) -> None:
    """RQ's rq:clean_registries:<q>: a queue another worker is cleaning is left alone."""
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.noop)
    claim(connection)
    now = int(time.time())
    connection.zadd(keys.finished_registry_key('p'), {'old': now - 10})
    connection.zadd(keys.finished_registry_key('q'), {'old': now - 10})
    connection.set(keys.maintenance_lock_key('q'), 1, ex=899)

    report = maintenance.clean_registries(connection, ['p', 'q'], timestamp=lapse())

    assert report.locked == ['q'] and report.abandoned == []
    assert job.get_status() == JobStatus.STARTED
    assert connection.zcard(keys.finished_registry_key('q')) == 1
    assert connection.zcard(keys.finished_registry_key('p')) == 0
    assert connection.get(keys.maintenance_lock_key('q')) == b'1'
    assert not connection.exists(keys.maintenance_lock_key('p'))  # taken and released in the call

    connection.delete(keys.maintenance_lock_key('q'))
    assert maintenance.clean_registries(connection, ['q'], timestamp=lapse()).abandoned == [('q', job.id, 'failed')]


def test_the_pass_is_one_round_trip_plus_one_per_abandoned_job(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass script settles everything but the abandoned jobs; each of those (rare) is one finish_job call."""
    queue = Queue('q', connection=redis_conn)
    for _ in range(3):
        queue.enqueue(jobs.noop)
        claim(redis_conn)
    queue.enqueue(jobs.noop, retry=Retry(max=1))
    claim(redis_conn)
    maintenance.clean_registries(redis_conn, ['q'])  # loads the scripts
    engine.finish_job(redis_conn, 'none', 'q', '', engine.Plan(), 0.0, None, claim_next=False)
    sent: list[Any] = []
    original = redis.connection.Connection.send_packed_command

    def counting(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(command)
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, 'send_packed_command', counting)
    quiet = maintenance.clean_registries(redis_conn, ['q', 'r', 's'])
    assert quiet.abandoned == [] and len(sent) == 1

    report = maintenance.clean_registries(redis_conn, ['q', 'r', 's'], timestamp=time.time() + 200)

    assert sorted(outcome for _, _, outcome in report.abandoned) == ['failed'] * 3 + ['retried']
    assert len(sent) == 1 + 1 + 4


@pytest.mark.timeout(150)
def test_killed_worker_job_is_failed_in_real_time(redis_conn: redis.Redis, redis_url: str, processes: list) -> None:
    """No pinned time: the entry lapses by itself (61 s after the last heartbeat) and a live worker finds it."""
    queue = Queue('q', connection=redis_conn)
    job = queue.enqueue(f'{WJOBS}.wait_for_key', 'never', 100)
    victim = start_worker(redis_url, 'victim', monitoring_interval=1)
    processes.append(victim)
    wait_for(lambda: job.get_status() == JobStatus.STARTED)
    time.sleep(1.5)
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    killed_at = time.monotonic()
    live = start_worker(redis_url, 'live', maintenance_interval=5, max_jobs=0, max_idle_time=120)
    processes.append(live)

    wait_for(lambda: job.get_status() == JobStatus.FAILED, timeout=110, step=0.2)

    took = time.monotonic() - killed_at
    print(f'abandoned job failed {took:.1f} s after the kill')
    assert took < 61 + 5 + 5
