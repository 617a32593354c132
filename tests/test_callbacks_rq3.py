"""RQ 3.0's rqfast.callbacks in rqfast's own code paths: what a job's callbacks are given on a real
(forking) worker and in a sync run, when they run (after the outcome is stored, in a sync run), and
what their errors do."""

from __future__ import annotations

from typing import Any

import pytest
import redis

import rqfast
from rqfast import Callback, callbacks
from rqfast.job import JobStatus
from rqfast.timeouts import NoDeathPenalty

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def noted(conn: redis.Redis, job: rqfast.Job) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in conn.hgetall(f'callback:{job.id}').items()}


def test_a_forking_worker_gives_the_callbacks_rqs_arguments(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    ok = q.enqueue(jobs.add, 2, 3, on_success=Callback(jobs.noting_success_callback))
    bad = q.enqueue(jobs.div_by_zero, on_failure=Callback(jobs.noting_failure_callback))
    rqfast.Worker([q], connection=redis_conn).work(burst=True)
    assert noted(redis_conn, ok) == {'kind': 'success', 'result': '5', 'status': 'started'}
    failure = noted(redis_conn, bad)
    assert failure == {
        'kind': 'failure',
        'type': 'ZeroDivisionError',
        'value': "ZeroDivisionError('division by zero')",
        'tb': 'traceback',
        'status': 'started',
    }
    assert ok.get_status() == JobStatus.FINISHED and bad.get_status() == JobStatus.FAILED


def test_a_raising_or_coroutine_success_callback_fails_the_job_on_a_worker(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    raising = q.enqueue(jobs.noop, on_success=Callback(jobs.raising_callback))
    coroutine = q.enqueue(jobs.noop, on_success=Callback(jobs.coroutine_callback))
    rqfast.SimpleWorker([q], connection=redis_conn).work(burst=True)
    assert raising.get_status() == JobStatus.FAILED
    assert 'callback broke' in (raising.latest_result().exc_string or '')
    assert coroutine.get_status() == JobStatus.FAILED  # RQ 3.0: TypeError, not an un-awaited coroutine
    assert 'Coroutine success callbacks are not supported' in (coroutine.latest_result().exc_string or '')


def test_a_sync_run_stores_the_outcome_before_the_callback_runs(redis_conn: redis.Redis) -> None:
    """As RQ's run_sync: the callback sees the job stored finished (or failed), and gets the return
    value even when result_ttl=0 discards it."""
    q = rqfast.Queue('q', connection=redis_conn, is_async=False)
    ok = q.enqueue(jobs.add, 2, 3, on_success=Callback(jobs.noting_success_callback), result_ttl=60)
    assert noted(redis_conn, ok) == {'kind': 'success', 'result': '5', 'status': 'finished'}
    bad = q.enqueue(jobs.div_by_zero, on_failure=Callback(jobs.noting_failure_callback))
    assert noted(redis_conn, bad)['status'] == 'failed'
    assert noted(redis_conn, bad)['type'] == 'ZeroDivisionError'


@pytest.mark.parametrize('option', ['on_success', 'on_failure'])
def test_a_sync_runs_raising_callback_propagates_after_the_outcome_is_stored(
    redis_conn: redis.Redis, option: str
) -> None:
    q = rqfast.Queue('q', connection=redis_conn, is_async=False)
    func = jobs.noop if option == 'on_success' else jobs.div_by_zero
    with pytest.raises(RuntimeError, match='callback broke'):
        q.enqueue(func, job_id='j', **{option: Callback(jobs.raising_callback)})
    stored = redis_conn.hget('rq:job:j', 'status')
    assert stored == (b'finished' if option == 'on_success' else b'failed')


def test_jobs_rq_212_methods_run_the_callbacks_functions(redis_conn: redis.Redis, monkeypatch: Any) -> None:
    seen: list[tuple[str, Any]] = []
    monkeypatch.setattr(callbacks, 'execute_success_callback', lambda job, penalty, result: seen.append(('s', result)))
    monkeypatch.setattr(callbacks, 'execute_stopped_callback', lambda job, penalty: seen.append(('x', penalty)))
    job = rqfast.Queue('q', connection=redis_conn).enqueue(jobs.noop)
    job.execute_success_callback(NoDeathPenalty, 42)
    job.execute_stopped_callback(NoDeathPenalty)
    assert seen == [('s', 42), ('x', NoDeathPenalty)]


def test_a_coroutine_callback_is_called_under_212_compat(redis_conn: redis.Redis, monkeypatch: Any) -> None:
    from rqfast import defaults

    monkeypatch.setattr(defaults, 'RQFAST_COMPAT', '2.12')
    job = rqfast.Queue('q', connection=redis_conn).enqueue(jobs.noop, on_success=Callback(jobs.coroutine_callback))
    with pytest.warns(RuntimeWarning, match='never awaited'):
        callbacks.execute_success_callback(job, NoDeathPenalty, None)
        import gc

        gc.collect()
