"""Fenced completions: an execution that no longer owns its job writes nothing when it finishes or beats.

The owner of a job is the execution whose hash (rq:execution:<id>:<x>) exists; maintenance recording the
job as abandoned, or a new claim of it, ends that execution. The in-process tests drive the engine
directly; the process tests pause a real worker (SIGSTOP) past its heartbeat deadline, let the job be
recovered (and run again elsewhere), wake it (SIGCONT) and compare the whole db before and after.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from rqfast import Queue, Retry, SimpleWorker, engine, keys, maintenance
from rqfast.outcome import Outcome, OutcomeKind

try:
    import fleet
    import jobs
    from snapshot import snapshot
except ImportError:  # tests/ became a package
    from tests import fleet, jobs  # type: ignore[no-redef]
    from tests.snapshot import snapshot  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(120)
sys.path.insert(0, str(Path(__file__).with_name('chaos')))  # chaos_jobs, for the in-process worker


class _Expiry:
    """When a key expires (ms since the epoch), equal to another within 2 s: a TTL ticks down between
    two dumps, so TTLs rounded to a bucket once failed on a boundary; a refreshed TTL moves it further."""

    def __init__(self, ttl_ms: int) -> None:
        self.at = ttl_ms if ttl_ms < 0 else time.time() * 1000 + ttl_ms

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Expiry):
            return NotImplemented
        if self.at < 0 or other.at < 0:
            return self.at == other.at
        return abs(self.at - other.at) <= 2000

    def __repr__(self) -> str:
        return f'<expires at {self.at:.0f} ms>' if self.at >= 0 else f'<ttl {self.at:.0f}>'


def _comparable(conn: redis.Redis, skip: set[str]) -> dict[str, Any]:
    """The db without `skip`, each key with when it expires."""
    return {
        key: (entry['type'], entry['value'], _Expiry(entry['ttl_ms']))
        for key, entry in snapshot(conn).items()
        if key not in skip
    }


def _worker_ref(name: str) -> engine.WorkerRef:
    return engine.WorkerRef(name, ['q'], job_monitoring_interval=1, heartbeat_grace=1)


def _plan_success(conn: redis.Redis, job_id: str, claim: engine.Claim) -> engine.Plan:
    job = Queue('q', connection=conn).fetch_job(job_id)
    assert job is not None
    job.started_at = job.ended_at = claim.started_at
    return engine.plan(job, Outcome(OutcomeKind.SUCCESS, 'late'), claim.started_at or job.created_at)


def test_a_finish_after_the_job_was_recovered_and_claimed_again_writes_nothing(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.noop, retry=Retry(max=2))
    zombie = engine.claim_job(connection, _worker_ref('zombie'))
    assert zombie.job_id == job.id
    # the zombie stops beating; its entry expires; maintenance retries the job; another worker claims it
    connection.zadd(keys.started_registry_key('q'), {f'{job.id}:{zombie.execution_id}': 1}, xx=True)
    report = maintenance.recover_abandoned(connection, ['q'])
    assert report.abandoned == [('q', job.id, 'retried')]
    assert not connection.exists(keys.execution_key(job.id, zombie.execution_id))
    owner = engine.claim_job(connection, _worker_ref('owner'))
    assert owner.job_id == job.id and owner.execution_id != zombie.execution_id
    before = _comparable(connection, {'rq:worker:zombie', 'rq:worker:zombie:executions'})

    late = engine.finish_job(
        connection,
        job.id,
        'q',
        zombie.execution_id,
        _plan_success(connection, job.id, zombie),
        1.0,
        _worker_ref('zombie'),
    )
    assert late.recorded is False and not late  # nothing recorded, and no other job to claim
    suspended, lost = fleet_heartbeat(connection, 'zombie', job.id, zombie.execution_id)
    assert lost == [job.id] and suspended is False
    assert not connection.sismember(keys.worker_executions_key('zombie'), f'{job.id}:{zombie.execution_id}')
    assert _comparable(connection, {'rq:worker:zombie', 'rq:worker:zombie:executions'}) == before

    done = engine.finish_job(
        connection, job.id, 'q', owner.execution_id, _plan_success(connection, job.id, owner), 1.0, _worker_ref('owner')
    )
    assert done.recorded is True
    assert connection.hget(job.key, 'status') == b'finished'


def test_a_late_requeue_writes_nothing(connection: redis.Redis) -> None:
    """A zombie whose job failed with retries left would put it back on its queue: fenced, it does not."""
    job = Queue('q', connection=connection).enqueue(jobs.noop, retry=Retry(max=3))
    zombie = engine.claim_job(connection, _worker_ref('zombie'))
    connection.zadd(keys.started_registry_key('q'), {f'{job.id}:{zombie.execution_id}': 1}, xx=True)
    assert maintenance.recover_abandoned(connection, ['q']).abandoned == [('q', job.id, 'retried')]
    before = _comparable(connection, {'rq:worker:zombie', 'rq:worker:zombie:executions'})
    loaded = Queue('q', connection=connection).fetch_job(job.id)
    assert loaded is not None
    loaded.started_at = loaded.ended_at = zombie.started_at
    plan = engine.plan(loaded, Outcome(OutcomeKind.FAILURE, exc_string='late'), loaded.created_at)
    assert plan.put_back == 'queue'
    late = engine.finish_job(connection, job.id, 'q', zombie.execution_id, plan, 1.0, _worker_ref('zombie'), False)
    assert late.recorded is False
    assert (
        _comparable(connection, {'rq:worker:zombie', 'rq:worker:zombie:executions'}) == before
    )  # queued once, retries_left 2, as recovered


def test_a_new_claim_fences_an_execution_left_on_record(connection: redis.Redis) -> None:
    """A job put back on its queue by anyone while an execution was still on record: the claim ends it."""
    q = Queue('q', connection=connection)
    job = q.enqueue(jobs.noop)
    first = engine.claim_job(connection, _worker_ref('first'))
    connection.hset(job.key, 'status', 'queued')
    connection.rpush(keys.queue_key('q'), job.id)
    second = engine.claim_job(connection, _worker_ref('second'))
    assert second.job_id == job.id
    assert connection.zrange(keys.started_registry_key('q'), 0, -1) == [f'{job.id}:{second.execution_id}'.encode()]
    late = engine.finish_job(
        connection, job.id, 'q', first.execution_id, _plan_success(connection, job.id, first), 1.0, _worker_ref('first')
    )
    assert late.recorded is False and connection.hget(job.key, 'status') == b'started'


def test_the_owner_is_recorded_and_stays_one_call(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.noop)
    claim = engine.claim_job(connection, _worker_ref('w'))
    done = engine.finish_job(
        connection, job.id, 'q', claim.execution_id, _plan_success(connection, job.id, claim), 1.0, _worker_ref('w')
    )
    assert done.recorded is True and connection.hget(job.key, 'status') == b'finished'


def fleet_heartbeat(conn: redis.Redis, worker: str, job_id: str, execution_id: str) -> Any:
    from rqfast.worker.workerhash import write_heartbeat

    return write_heartbeat(conn, worker, 60, fleet_now(), 2, '', [(job_id, 'q', execution_id)], 1)


def fleet_now() -> Any:
    from rqfast.dates import now

    return now()


# ---------------------------------------------------------------------------------------------------
# A real worker paused past its deadline


@pytest.fixture
def workers(redis_url: str, tmp_path: Path) -> Iterator[list[fleet.WorkerProcess]]:
    started: list[fleet.WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


def _start(url: str, tmp_path: Path, started: list[fleet.WorkerProcess], **options: Any) -> fleet.WorkerProcess:
    worker = fleet.WorkerProcess(url, options, tmp_path / f'worker-{len(started)}.log')
    started.append(worker)
    return worker


@pytest.mark.parametrize(
    ('worker_class', 'retry'),
    [('SimpleWorker', True), ('SimpleWorker', False), ('Worker', True), ('SpawnWorker', True)],
)
def test_a_woken_zombie_writes_nothing(
    redis_conn: redis.Redis,
    redis_url: str,
    tmp_path: Path,
    workers: list[fleet.WorkerProcess],
    worker_class: str,
    retry: bool,
) -> None:
    marks = tmp_path / 'marks'
    marks.mkdir()
    q = Queue('q', connection=redis_conn)
    job = q.enqueue('chaos_jobs.mark', str(marks), 3.0, retry=Retry(max=1) if retry else None)
    zombie = _start(
        redis_url,
        tmp_path,
        workers,
        **{'class': worker_class},
        worker={'job_monitoring_interval': 1, 'maintenance_interval': 3600},
        attrs={'heartbeat_grace': 1},
        work={'max_jobs': 1},
    )
    fleet.wait_until(lambda: fleet.runs(marks, job.id)[0] == 1, timeout=30, what=f'the job to start\n{zombie.log()}')
    zombie.signal(signal.SIGSTOP)
    # past its deadline (1 + 1 s), maintenance recovers the job
    fleet.wait_until(lambda: maintenance.recover_abandoned(redis_conn, ['q']).abandoned, timeout=15, step=0.2)
    if retry:
        assert redis_conn.hget(job.key, 'status') == b'queued'
        SimpleWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
        assert redis_conn.hget(job.key, 'status') == b'finished'
        started, ended = fleet.runs(marks, job.id)  # the owner's run completed (a zombie's horse may have too)
        assert started == 2 and ended >= 1
    else:
        assert redis_conn.hget(job.key, 'status') == b'failed'
    skip = {zombie.key, f'{zombie.key}:executions', 'rq:workers', 'rq:workers:q'}  # the zombie's own records
    before = _comparable(redis_conn, skip)

    zombie.signal(signal.SIGCONT)
    assert zombie.wait(30) == 0, zombie.log()
    assert fleet.runs(marks, job.id) == ((2, 2) if retry else (1, 1))  # the zombie's body did complete
    assert 'no longer owned it' in zombie.log(), zombie.log()
    assert _comparable(redis_conn, skip) == before
    time.sleep(0)  # (nothing else to wait for: the zombie has exited)
