"""Job functions for the worker tests (state read from job.meta or Redis, so rq and rqfast run them alike)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

try:
    import jobs
    from snapshot import snapshot
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import snapshot  # type: ignore[no-redef]

SNAPSHOTS: list[Any] = []


def _job() -> Any:
    return jobs._current_job()


def fail_until(attempts: int) -> int:
    """Raises on the first `attempts` runs (counted in job.meta), then returns the run number."""
    job = _job()
    job.meta['runs'] = job.meta.get('runs', 0) + 1
    job.save_meta()
    if job.meta['runs'] <= attempts:
        raise ValueError(f'run {job.meta["runs"]} fails')
    return int(job.meta['runs'])


def return_retry(max: int, interval: int = 0) -> Any:
    """Returns a Retry of the library that runs the job (RQ 2.12's retry-by-return)."""
    job = _job()
    module = type(job).__module__.split('.')[0]
    retry_class = __import__(module).Retry
    return retry_class(max=max, interval=interval)


def snapshot_inside() -> str:
    """Dumps the whole db while the job runs, to compare the started state."""
    job = _job()
    SNAPSHOTS.append(snapshot(job.connection))
    return job.id


def cancel_self() -> str:
    """Cancels the running job from inside it (a cancel that lands mid-run)."""
    job = _job()
    job.cancel()
    return job.id


def set_key(key: str, value: str = '1') -> str:
    """Leaves a mark in Redis, to see that (and when) the job ran."""
    _job().connection.set(key, value)
    return key


def incr_key(key: str) -> int:
    """Counts runs in Redis: the fleet test checks each job ran exactly once."""
    return int(_job().connection.incr(key))


def wait_for_key(key: str, timeout: float = 10.0) -> bool:
    """Runs until `key` exists in Redis (or `timeout`), so a test can act while the job is in flight."""
    connection = _job().connection
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if connection.exists(key):
            return True
        time.sleep(0.02)
    return False


def signal_self(signum: int, then_sleep: float = 0.0) -> str:
    """Sends the worker process a signal from inside the job (the job runs in the worker's process)."""
    os.kill(os.getpid(), signum)
    time.sleep(then_sleep)
    return signal.Signals(signum).name


def sleep_ignoring_timeout(seconds: float) -> float:
    """Sleeps in small steps so a pending SIGALRM lands promptly."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)
    return seconds


def success_callback_meta(job: Any, connection: Any, result: Any) -> None:
    """A success callback with a visible effect in Redis."""
    connection.set(f'callback:success:{job.id}', repr(result))


def failure_callback_meta(job: Any, connection: Any, exc_type: Any, exc: Any, tb: Any) -> None:
    connection.set(f'callback:failure:{job.id}', exc_type.__name__)


def stopped_callback_meta(job: Any, connection: Any) -> None:
    connection.set(f'callback:stopped:{job.id}', '1')


def slow_callback(job: Any, connection: Any, *args: Any) -> None:
    """A callback that runs past its timeout."""
    time.sleep(5)


def raising_callback(job: Any, connection: Any, *args: Any) -> None:
    raise RuntimeError('callback failed')


def record(tag: str) -> str:
    """Appends `tag` to the Redis list `order`, so a test sees the order jobs ran in."""
    _job().connection.rpush('order', tag)
    return tag


def heartbeat_probe(seconds: float) -> dict[str, Any]:
    """What the worker hash, the started registry and the job hash say before and after `seconds`."""
    job = _job()
    connection = job.connection
    worker_key = f'rq:worker:{job.worker_name}'

    def look() -> dict[str, Any]:
        member = next(m for m in connection.zrange(f'rq:wip:{job.origin}', 0, -1) if m.startswith(job.id.encode()))
        return {
            'worker_heartbeat': connection.hget(worker_key, 'last_heartbeat').decode(),
            'worker_ttl': connection.ttl(worker_key),
            'working_time': float(connection.hget(worker_key, 'current_job_working_time') or 0),
            'job_heartbeat': connection.hget(job.key, 'last_heartbeat').decode(),
            'started_score': connection.zscore(f'rq:wip:{job.origin}', member),
        }

    before = look()
    time.sleep(seconds)
    return {'before': before, 'after': look()}


def worker_hash_inside() -> dict[str, Any]:
    """The running worker's hash and TTLs, read from inside its job."""
    job = _job()
    connection = job.connection
    worker_key = f'rq:worker:{job.worker_name}'
    execution = next(iter(connection.keys(f'rq:execution:{job.id}:*')))
    wip = connection.zrange(f'rq:wip:{job.origin}', 0, -1, withscores=True)
    return {
        'fields': {k.decode(): v.decode() for k, v in connection.hgetall(worker_key).items()},
        'ttl': connection.ttl(worker_key),
        'execution_ttl': connection.ttl(execution),
        'executions_ttl': connection.ttl(f'rq:executions:{job.id}'),
        'started_expiry': wip[0][1] - time.time(),
        'job_ttl': connection.ttl(job.key),
        'time': time.time(),
    }


def rq_sees_worker() -> list[dict[str, Any]]:
    """rq's Worker.all(), called from inside the job: what rq's tools see of the running worker."""
    from rq.worker import Worker

    return [
        {
            'name': w.name,
            'state': w.get_state(),
            'current_job': w.get_current_job_id(),
            'queues': w.queue_names(),
            'successful': w.successful_job_count,
            'failed': w.failed_job_count,
            'birth': w.birth_date is not None,
            'pid': w.pid,
            'hostname': w.hostname,
        }
        for w in Worker.all(connection=_job().connection)
    ]


def exit_process(code: int = 3) -> None:
    """A job that calls sys.exit(): it fails; the worker must not exit with it."""
    import sys

    sys.exit(code)


def raise_keyboard_interrupt() -> None:
    raise KeyboardInterrupt


DASHBOARD: Any = None  # a Flask test client of rq-dashboard, set by tests/test_worker_dashboard.py


def dashboard_inside(*paths: str) -> dict[str, Any]:
    """What rq-dashboard answers while this job runs (its JSON endpoints, fetched from inside the job)."""
    answers = {}
    for path in paths:
        response = DASHBOARD.get(path)
        answers[path] = response.get_json() if response.is_json else response.status_code
    return answers


def count_run(fail: bool = False) -> str:
    """Counts this job's runs in the Redis hash `runs` (field: the job id); fails when asked to."""
    job = _job()
    job.connection.hincrby('runs', job.id, 1)
    if fail:
        raise ValueError('asked to fail')
    return job.id
