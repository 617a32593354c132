"""Issue 11's regressions and Redis outages, each against real worker processes of every class.

- a horse whose worker died records its own outcome (fenced, one call), instead of it being thrown away;
- every BaseException from a job fails the job and the worker goes on; a cold shutdown names itself;
- an id the worker cannot use is moved aside visibly (rq:dead-letter:<queue>), never run or heartbeated;
- Redis killed (SIGKILL) and restarted on the same port: idle, mid-job and mid-finish, every class resumes
  within seconds, and an outcome computed while Redis was down is recorded once;
- the recovery bound with default settings (the measurement itself is in tests/chaos/).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from rqfast import Queue, Retry, SimpleWorker, engine, keys
from rqfast.defaults import (
    DEFAULT_JOB_MONITORING_INTERVAL,
    JOB_HEARTBEAT_GRACE,
    MAX_BACKOFF,
    RECOVERY_INTERVAL,
)
from rqfast.registry import FailedJobRegistry, StartedJobRegistry
from rqfast.worker import Worker
from rqfast.worker.upkeep import heartbeat_interval

try:
    import fleet
    import jobs
except ImportError:  # tests/ became a package
    from tests import fleet, jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(120)
sys.path.insert(0, str(Path(__file__).with_name('chaos')))  # chaos_jobs, for in-process workers

import chaos_jobs  # noqa: E402

CLASSES = ['SimpleWorker', 'Worker', 'SpawnWorker']


@pytest.fixture
def workers() -> Iterator[list[fleet.WorkerProcess]]:
    started: list[fleet.WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / 'marks'
    path.mkdir()
    return path


def start(url: str, started: list[fleet.WorkerProcess], log_dir: Path, **options: Any) -> fleet.WorkerProcess:
    worker = fleet.WorkerProcess(url, options, log_dir / f'worker-{len(started)}.log')
    started.append(worker)
    return worker


def status(conn: redis.Redis, job_id: str) -> str | None:
    value = conn.hget(keys.job_key(job_id), 'status')
    return value.decode() if value else None


def result_entries(conn: redis.Redis, job_id: str) -> int:
    return int(conn.xlen(keys.results_key(job_id)))


# ---------------------------------------------------------------------------------------------------
# A horse whose worker died


@pytest.mark.parametrize('worker_class', ['Worker', 'SpawnWorker'])
def test_a_horse_whose_worker_was_killed_records_its_own_outcome(
    redis_conn: redis.Redis, redis_url: str, tmp_path: Path, marks: Path, workers: list, worker_class: str
) -> None:
    job = Queue('q', connection=redis_conn).enqueue(chaos_jobs.mark, str(marks), 1.5, retry=Retry(max=2))
    worker = start(redis_url, workers, tmp_path, **{'class': worker_class})
    fleet.wait_until(lambda: fleet.runs(marks, job.id)[0] == 1, timeout=30, what=f'the job to start\n{worker.log()}')
    killed_at = time.monotonic()
    worker.signal(signal.SIGKILL)
    fleet.wait_until(lambda: status(redis_conn, job.id) == 'finished', timeout=15, what='the horse to record the job')
    assert time.monotonic() - killed_at < 10  # at once, not ~50 s later as an abandoned job
    assert fleet.runs(marks, job.id) == (1, 1) and result_entries(redis_conn, job.id) == 1
    assert redis_conn.hget(job.key, 'retries_left') == b'2'  # not retried
    assert StartedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert not redis_conn.keys(f'rq:execution:{job.id}:*')


def test_a_worker_killed_between_the_report_and_its_record_leaves_it_to_the_horse(
    redis_conn: redis.Redis, redis_url: str, tmp_path: Path, marks: Path, workers: list
) -> None:
    """The horse stands by until its worker has recorded the outcome; the worker's death says it never will."""
    job = Queue('q', connection=redis_conn).enqueue(chaos_jobs.mark, str(marks), 0.2)
    worker = start(redis_url, workers, tmp_path, **{'class': 'chaos_jobs.SlowRecordWorker'})
    fleet.wait_until(lambda: fleet.runs(marks, job.id)[1] == 1, timeout=30, what=f'the job to end\n{worker.log()}')
    time.sleep(0.5)  # the report is in the worker's hands, not recorded yet
    assert status(redis_conn, job.id) == 'started'
    worker.signal(signal.SIGKILL)
    fleet.wait_until(
        lambda: status(redis_conn, job.id) == 'finished', timeout=10, what=f'the horse to record it\n{worker.log()}'
    )
    assert result_entries(redis_conn, job.id) == 1


# ---------------------------------------------------------------------------------------------------
# BaseExceptions and shutdowns


@pytest.mark.parametrize('worker_class', [SimpleWorker, Worker])
def test_every_base_exception_from_a_job_fails_it_and_the_worker_goes_on(
    redis_conn: redis.Redis, marks: Path, worker_class: type
) -> None:
    q = Queue('q', connection=redis_conn)
    outcomes = ['cancelled', 'base', 'keyboard', 'exit']
    failing = [q.enqueue(chaos_jobs.mark, str(marks), 0, outcome) for outcome in outcomes]
    last = q.enqueue(jobs.add, 1, 2)
    worker = worker_class(['q'], connection=redis_conn)
    assert worker.work(burst=True, logging_level='WARNING') is True
    names = ['CancelledError', 'ChaosBaseException', 'KeyboardInterrupt', 'SystemExit']
    for job, name in zip(failing, names, strict=True):
        assert status(redis_conn, job.id) == 'failed', name
        assert name in (q.fetch_job(job.id).exc_info or ''), name  # type: ignore[union-attr]
    assert status(redis_conn, last.id) == 'finished'
    assert sorted(FailedJobRegistry('q', connection=redis_conn).get_job_ids()) == sorted(j.id for j in failing)
    assert not asyncio.iscoroutinefunction(chaos_jobs.mark)


@pytest.mark.parametrize('worker_class', ['SimpleWorker', 'Worker'])
def test_a_cold_shutdown_names_itself_in_the_job_failure(
    redis_conn: redis.Redis, redis_url: str, tmp_path: Path, marks: Path, workers: list, worker_class: str
) -> None:
    job = Queue('q', connection=redis_conn).enqueue(chaos_jobs.mark, str(marks), 30)
    worker = start(redis_url, workers, tmp_path, **{'class': worker_class})
    fleet.wait_until(lambda: fleet.runs(marks, job.id)[0] == 1, timeout=30, what=f'the job to start\n{worker.log()}')
    worker.signal(signal.SIGTERM)
    time.sleep(1.2)  # a second signal within 1 s of the first is taken as the same one
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) != -signal.SIGKILL
    assert status(redis_conn, job.id) == 'failed'
    reason = Queue('q', connection=redis_conn).fetch_job(job.id).exc_info or ''  # type: ignore[union-attr]
    assert f'cold shutdown of worker {worker.name} (SIGTERM' in reason, reason


# ---------------------------------------------------------------------------------------------------
# Ids a worker cannot use

BAD_IDS = ['a:b c', 'x:y', '*', 'z' * 600, '']


@pytest.mark.parametrize('worker_class', [SimpleWorker, Worker])
def test_unusable_ids_are_dead_lettered_visibly(redis_conn: redis.Redis, worker_class: type) -> None:
    q = Queue('q', connection=redis_conn)
    good = q.enqueue(jobs.add, 1, 2)
    redis_conn.hset('rq:job:x:y', mapping={'data': b'whatever', 'status': 'queued', 'origin': 'q'})
    redis_conn.rpush(q.key, *BAD_IDS)
    after = q.enqueue(jobs.add, 2, 2)
    worker = worker_class(['q'], connection=redis_conn)
    assert worker.work(burst=True, logging_level='WARNING') is True
    assert status(redis_conn, good.id) == 'finished' and status(redis_conn, after.id) == 'finished'
    dead = {k.decode(): v.decode() for k, v in redis_conn.hgetall(keys.dead_letter_key('q')).items()}
    assert sorted(dead) == sorted(BAD_IDS)
    assert 'outside [A-Za-z0-9_-]' in dead['a:b c'] and 'longer than' in dead['z' * 600] and 'empty' in dead['']
    assert redis_conn.hget('rq:job:x:y', 'status') == b'queued'  # never started, never parsed as job 'x'
    assert redis_conn.llen(q.key) == 0 and StartedJobRegistry('q', connection=redis_conn).count == 0
    assert not redis_conn.keys('rq:execution:*')


def test_an_unusable_id_moved_by_a_blocking_wait_is_dead_lettered(redis_conn: redis.Redis) -> None:
    redis_conn.rpush(keys.intermediate_queue_key('q'), 'a:b')
    ref = engine.WorkerRef('w', ['q'])
    claim = engine.claim_job(redis_conn, ref, moved=('q', 'a:b'))
    assert not claim and claim.dead_lettered == [('q', 'a:b', 'job id outside [A-Za-z0-9_-]')]
    assert redis_conn.hexists(keys.dead_letter_key('q'), 'a:b')


# ---------------------------------------------------------------------------------------------------
# A lost reply to a finish call: sent again as it was, recorded once


def test_a_finish_sent_again_after_a_lost_reply_is_recorded_once(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    job = q.enqueue(jobs.add, 1, 2)
    second = q.enqueue(jobs.add, 2, 2)
    ref = engine.WorkerRef('w', ['q'])
    claim = engine.claim_job(connection, ref)
    loaded = q.fetch_job(job.id)
    assert loaded is not None
    loaded.started_at = loaded.ended_at = claim.started_at
    from rqfast.outcome import Outcome, OutcomeKind

    plan = engine.plan(loaded, Outcome(OutcomeKind.SUCCESS, 3), claim.started_at or loaded.created_at)
    args = (connection, job.id, 'q', claim.execution_id, plan, 0.1, ref)
    first = engine.finish_job(*args, next_execution='n1')  # its reply "lost"
    again = engine.finish_job(*args, next_execution='n1')
    assert first.recorded and not again.recorded
    assert again.job_id == first.job_id == second.id and again.execution_id == 'n1'
    assert result_entries(connection, job.id) == 1 and connection.hget(job.key, 'status') == b'finished'
    assert connection.zrange(keys.started_registry_key('q'), 0, -1) == [f'{second.id}:n1'.encode()]


def test_a_claim_sent_again_after_a_lost_reply_gets_the_job_it_started(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    job = q.enqueue(jobs.add, 1, 2)
    other = q.enqueue(jobs.add, 2, 2)
    ref = engine.WorkerRef('w', ['q'])
    first = engine.claim_job(connection, ref, execution_id='x1')
    again = engine.claim_job(connection, ref, execution_id='x1')
    assert first.job_id == again.job_id == job.id
    assert status(connection, other.id) == 'queued'


def test_several_claims_sent_again_after_a_lost_reply_get_the_jobs_they_started(connection: redis.Redis) -> None:
    """finish_jobs (a worker at concurrency > 1) sent again as it was: the jobs its first call claimed
    are the answer, none claimed twice, none left started with no one to run them."""
    from rqfast.outcome import Outcome, OutcomeKind

    q = Queue('q', connection=connection)
    ids = [q.enqueue(jobs.add, i, 1).id for i in range(5)]
    ref = engine.WorkerRef('w', ['q'])
    running = engine.finish_jobs(connection, ref, [], 2)
    ended = []
    for claim in running.claims:
        loaded = q.fetch_job(claim.job_id)
        assert loaded is not None
        loaded.started_at = loaded.ended_at = claim.started_at
        plan = engine.plan(loaded, Outcome(OutcomeKind.SUCCESS, 3), claim.started_at or loaded.created_at)
        ended.append(engine.Ended(claim.job_id, 'q', claim.execution_id, plan, 0.1))
    first = engine.finish_jobs(connection, ref, ended, 2, execution_ids=['x1', 'x2'])  # its reply "lost"
    again = engine.finish_jobs(connection, ref, ended, 2, execution_ids=['x1', 'x2'], resent=True)
    assert first.recorded == [True, True] and again.recorded == [False, False]
    assert [c.job_id for c in again.claims] == [c.job_id for c in first.claims] == ids[2:4]
    assert [c.execution_id for c in again.claims] == ['x1', 'x2']
    assert all(c.raw.get(b'data') for c in again.claims)  # (the job hash, as a claim's)
    assert status(connection, ids[4]) == 'queued'
    started = connection.zrange(keys.started_registry_key('q'), 0, -1)
    assert sorted(started) == sorted([f'{ids[2]}:x1'.encode(), f'{ids[3]}:x2'.encode()])
    assert all(result_entries(connection, job_id) == 1 for job_id in ids[:2])
    # the lost call claimed one job only (the queue ran dry): the second id claims what came since
    late = q.enqueue(jobs.add, 9, 9)
    more = engine.finish_jobs(connection, ref, [], 2, execution_ids=['y1', 'y2'], resent=True)
    assert [c.job_id for c in more.claims] == [ids[4], late.id]


def test_a_concurrent_workers_call_whose_reply_was_lost_runs_the_jobs_it_claimed(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker at concurrency 2 whose finish_jobs call ran but whose reply was lost (the connection
    dropped): sent again, it runs the jobs the lost call claimed, each once, and none stays started."""
    from rqfast.worker import keyspaces

    q = Queue('q', connection=redis_conn)
    enqueued = [q.enqueue(jobs.add, i, 1) for i in range(8)]
    real, lost = keyspaces.finish_jobs, []

    def loses_one_reply(*args: Any, **kwargs: Any) -> engine.Batch:
        batch = real(*args, **kwargs)
        if batch.claims and any(batch.recorded) and not lost:  # (outcomes recorded, jobs claimed)
            lost.append([c.job_id for c in batch.claims])
            raise redis.ConnectionError('the reply was lost')
        return batch

    monkeypatch.setattr(keyspaces, 'finish_jobs', loses_one_reply)
    monkeypatch.setattr('rqfast.worker.recorder.Backoff', lambda: type('B', (), {'next': lambda self: 0.0})())
    worker = SimpleWorker([q], connection=redis_conn, concurrency=2)
    worker.work(burst=True, logging_level='WARNING')
    assert lost, 'no finish_jobs call recorded an outcome and claimed a job'
    assert [status(redis_conn, job.id) for job in enqueued] == ['finished'] * len(enqueued)
    assert worker.successful_job_count == len(enqueued)  # (the lost call's outcomes: recorded, and counted)
    assert all(result_entries(redis_conn, job.id) == 1 for job in enqueued)
    assert StartedJobRegistry('q', connection=redis_conn).count == 0


# ---------------------------------------------------------------------------------------------------
# The recovery bound with default settings


def test_default_settings_recover_a_killed_workers_job_within_a_minute() -> None:
    """The arithmetic behind the bound measured in tests/chaos: a heartbeat TTL of interval + grace from the
    last beat, then at most one recovery interval to the next pass."""
    ttl = DEFAULT_JOB_MONITORING_INTERVAL + JOB_HEARTBEAT_GRACE
    beat = heartbeat_interval(DEFAULT_JOB_MONITORING_INTERVAL, 420)
    assert ttl + RECOVERY_INTERVAL <= 50 and ttl >= 3 * beat and MAX_BACKOFF <= 3


# ---------------------------------------------------------------------------------------------------
# Redis outages


@pytest.fixture
def killable() -> Iterator[fleet.KillableRedis]:
    server = fleet.KillableRedis()
    server.start()
    yield server
    server.close()


OUTAGE = 9.0  # seconds: with the old 60 s cap, a worker retried at 7 and 15 s, so it sat idle 6 s after Redis came back


@pytest.mark.parametrize('worker_class', CLASSES)
def test_redis_killed_mid_job_and_mid_finish(
    killable: fleet.KillableRedis, tmp_path: Path, marks: Path, workers: list, worker_class: str
) -> None:
    conn = redis.Redis.from_url(killable.url, socket_timeout=5)
    job = Queue('q', connection=conn).enqueue(chaos_jobs.mark, str(marks), 1.0)
    worker = start(killable.url, workers, tmp_path, **{'class': worker_class}, idle_wakeup=1)
    fleet.wait_until(lambda: fleet.runs(marks, job.id)[0] == 1, timeout=30, what=f'the job to start\n{worker.log()}')
    killed = time.monotonic()
    killable.kill()  # mid-job: the job ends, and its finish is tried, while Redis is down
    fleet.wait_until(lambda: fleet.runs(marks, job.id)[1] == 1, timeout=10, what='the job to end')
    time.sleep(max(0.0, OUTAGE - (time.monotonic() - killed)))
    assert worker.alive(), worker.log()
    killable.start()
    back = time.monotonic()
    fleet.wait_until(lambda: status(conn, job.id) == 'finished', timeout=20, what=f'the finish\n{worker.log()}')
    assert time.monotonic() - back < 4, worker.log()
    assert result_entries(conn, job.id) == 1 and fleet.runs(marks, job.id) == (1, 1)  # recorded once
    assert f'could not record job {job.id}' in worker.log()
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0, worker.log()
    conn.close()


def test_redis_killed_while_the_worker_is_idle(
    killable: fleet.KillableRedis, tmp_path: Path, marks: Path, workers: list
) -> None:
    """The idle loop is BaseWorker's, the same for every class."""
    conn = redis.Redis.from_url(killable.url, socket_timeout=5)
    worker = start(killable.url, workers, tmp_path, idle_wakeup=1)
    fleet.wait_until(lambda: conn.hget(worker.key, 'state') == b'idle', timeout=15, what=f'start\n{worker.log()}')
    killable.kill()
    time.sleep(OUTAGE)
    assert worker.alive(), worker.log()
    killable.start()
    back = time.monotonic()
    job = Queue('q', connection=conn).enqueue(chaos_jobs.mark, str(marks), 0)
    fleet.wait_until(lambda: status(conn, job.id) == 'finished', timeout=20, what=f'the next job\n{worker.log()}')
    assert time.monotonic() - back < 4, worker.log()
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0, worker.log()
    conn.close()
