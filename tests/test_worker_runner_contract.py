"""One way to run a job at every concurrency: the runner contract.

Every worker class runs a job through the same runner at concurrency 1 (on the loop's thread) and at N
(on the slots' threads): a subclass that overrides execute, perform_job, handle_job_success,
handle_job_failure and handle_exception sees the same calls, in RQ's order, at 1 and at 4 (perform_job
and the handlers where the job runs: a forking worker's horse, a spawned child). A patch of perform_job
made as instrumentation makes it (functools.wraps, wrapt: both copy the original's name and module) is
called once per job under every class at 1 and 4, and does not make a forking worker run one job at a
time.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import redis

import rqfast
from rqfast.status import JobStatus
from rqfast.worker import BaseWorker, SimpleWorker, Worker
from rqfast.worker.calling import replaced

try:
    import runner_workers as rw
except ImportError:  # tests/ became a package
    from tests import runner_workers as rw  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(240)

CONTRACT = {'SimpleWorker': rw.ContractSimple, 'Worker': rw.ContractWorker, 'SpawnWorker': rw.ContractSpawn}
TAGS = ['ok-0', 'fail-1', 'ok-2', 'fail-3', 'ok-4', 'ok-5']
EXPECTED_OK = ['execute', 'perform_job', 'handle_job_success']
EXPECTED_FAIL = ['execute', 'perform_job', 'handle_exception failed', 'handle_job_failure']


@pytest.fixture
def trail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / 'trail'
    path.touch()
    monkeypatch.setenv('RQFAST_HOOK_TRAIL', str(path))
    return path


def read_trail(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()]


def run_tagged(klass: type, connection: redis.Redis, concurrency: int, trail: Path) -> dict[str, list[str]]:
    """Enqueue TAGS, work them; each tag's hook calls in order (the pids left out: which process is checked
    apart), with the job's end checked."""
    trail.write_text('')
    queue = rqfast.Queue('contract', connection=connection)
    jobs = {tag: queue.enqueue(rw.ok if tag.startswith('ok') else rw.fail, tag) for tag in TAGS}
    worker = klass(['contract'], connection=connection, concurrency=concurrency)
    assert worker.uses_hooks
    worker.work(burst=True, logging_level='WARNING')
    by_id = {job.id: tag for tag, job in jobs.items()}
    calls: dict[str, list[str]] = defaultdict(list)
    for hook, job_id, *rest in read_trail(trail):
        calls[by_id[job_id]].append(' '.join([hook, *rest[:-1]]))
    for tag, job in jobs.items():
        expected = JobStatus.FINISHED if tag.startswith('ok') else JobStatus.FAILED
        assert job.get_status(refresh=True) is expected, tag
    assert worker.successful_job_count == 4 and worker.failed_job_count == 2
    return dict(calls)


@pytest.mark.parametrize('name', list(CONTRACT))
def test_every_class_calls_the_same_hooks_in_rq_order_at_concurrency_1_and_4(
    name: str, redis_conn: redis.Redis, trail: Path
) -> None:
    klass = CONTRACT[name]
    at_one = run_tagged(klass, redis_conn, 1, trail)
    at_four = run_tagged(klass, redis_conn, 4, trail)
    assert at_one == at_four
    for tag in TAGS:
        assert at_one[tag] == (EXPECTED_OK if tag.startswith('ok') else EXPECTED_FAIL), (tag, at_one[tag])


@pytest.mark.parametrize('name', ['Worker', 'SpawnWorker'])
def test_perform_job_and_the_handlers_run_where_the_job_runs(name: str, redis_conn: redis.Redis, trail: Path) -> None:
    """In a forking or spawn worker, perform_job and the handlers run in the horse (as in RQ), execute in the worker."""
    queue = rqfast.Queue('contract', connection=redis_conn)
    job = queue.enqueue(rw.fail, 'horse')
    CONTRACT[name](['contract'], connection=redis_conn, concurrency=4).work(burst=True, logging_level='WARNING')
    pids = {hook: int(rest[-1]) for hook, _, *rest in read_trail(trail)}
    assert set(pids) == {'execute', 'perform_job', 'handle_exception', 'handle_job_failure'}
    assert pids['execute'] == os.getpid()
    assert pids['perform_job'] == pids['handle_exception'] == pids['handle_job_failure'] != os.getpid()
    assert job.get_status(refresh=True) is JobStatus.FAILED


PATCHED = {
    'wraps': {'SimpleWorker': rw.WrapsSimple, 'Worker': rw.WrapsWorker, 'SpawnWorker': rw.WrapsSpawn},
    'wrapt': {'SimpleWorker': rw.WraptSimple, 'Worker': rw.WraptWorker, 'SpawnWorker': rw.WraptSpawn},
}


@pytest.mark.parametrize('how', list(PATCHED))
@pytest.mark.parametrize('name', ['SimpleWorker', 'Worker', 'SpawnWorker'])
@pytest.mark.parametrize('concurrency', [1, 4])
def test_a_wrapped_perform_job_is_called_once_per_job(
    how: str, name: str, concurrency: int, redis_conn: redis.Redis, trail: Path
) -> None:
    klass = PATCHED[how][name]
    wrapper = vars(klass)['perform_job']
    assert wrapper.__module__ == BaseWorker.perform_job.__module__  # (what once made rqfast take it for its own)
    queue = rqfast.Queue('patched', connection=redis_conn)
    jobs = [queue.enqueue(rw.ok if i % 3 else rw.fail, f'tag-{i}') for i in range(6)]
    worker = klass(['patched'], connection=redis_conn, concurrency=concurrency)
    assert worker.uses_hooks
    worker.work(burst=True, logging_level='WARNING')
    calls = read_trail(trail)
    assert sorted(job_id for _, job_id, *_ in calls) == sorted(job.id for job in jobs)  # once per job
    where = {place for _, _, place, _ in calls}
    assert where == ({'worker'} if name == 'SimpleWorker' else {'horse'})
    assert [job.get_status(refresh=True) for job in jobs] == [
        JobStatus.FAILED if i % 3 == 0 else JobStatus.FINISHED for i in range(6)
    ]


@pytest.mark.parametrize('how', list(PATCHED))
def test_a_wrapped_perform_job_leaves_a_forking_worker_running_4_jobs_at_once(
    how: str, redis_conn: redis.Redis, trail: Path
) -> None:
    queue = rqfast.Queue('patched', connection=redis_conn)
    jobs = [queue.enqueue(rw.rendezvous, 'arrived', 4) for _ in range(4)]
    worker = PATCHED[how]['Worker'](['patched'], connection=redis_conn, concurrency=4)
    worker.work(burst=True, logging_level='WARNING')
    assert [job.return_value(refresh=True) for job in jobs] == [4, 4, 4, 4]  # each saw all four running
    assert len(read_trail(trail)) == 4


def test_a_patch_on_rqfasts_own_class_counts_whatever_wraps_it(redis_conn: redis.Redis, trail: Path) -> None:
    """As Sentry patches RQ's Worker: on the library's class itself, with the original's name and module."""
    import functools

    import wrapt

    calls: list[str] = []
    original = BaseWorker.perform_job

    @functools.wraps(original)
    def wrapped(self: Any, job: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(job.id)
        return original(self, job, *args, **kwargs)

    queue = rqfast.Queue('q', connection=redis_conn)
    assert not replaced(SimpleWorker(['q'], connection=redis_conn), 'perform_job')
    for patch in ('wraps', 'wrapt'):
        if patch == 'wraps':
            BaseWorker.perform_job = wrapped  # type: ignore[method-assign]
        else:
            wrapt.wrap_function_wrapper(
                BaseWorker, 'perform_job', lambda f, _, a, k: calls.append(a[0].id) or f(*a, **k)
            )
        try:
            for klass in (SimpleWorker, Worker):
                job = queue.enqueue(rw.ok, patch)
                worker = klass(['q'], connection=redis_conn)
                assert replaced(worker, 'perform_job')
                worker.work(burst=True, logging_level='WARNING')
                assert job.get_status(refresh=True) is JobStatus.FINISHED
                if klass is SimpleWorker:
                    assert calls[-1] == job.id  # (a forked horse's call is in its own memory)
        finally:
            del BaseWorker.perform_job  # type: ignore[attr-defined]
    assert not replaced(SimpleWorker(['q'], connection=redis_conn), 'perform_job')
