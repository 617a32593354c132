"""Worker classes and jobs of the runner contract tests (test_worker_runner_contract.py), at module level so a
spawned child imports them by name, patches included (made as this module is imported, as an app or an
instrumentation library patches at start-up).

Each hook call is noted, with the process it ran in, in the file named by $RQFAST_HOOK_TRAIL.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import wrapt

from rqfast import get_current_job
from rqfast.worker import SimpleWorker, SpawnWorker, Worker


def note(*what: Any) -> None:
    with open(os.environ['RQFAST_HOOK_TRAIL'], 'a') as trail:
        trail.write(' '.join(str(part) for part in what) + f' {os.getpid()}\n')


class Contract:
    """Every extension point the contract names, each noted and calling the default."""

    def execute(self, job: Any, claim: Any, now: Any = None) -> Any:
        note('execute', job.id)
        return super().execute(job, claim, now)  # type: ignore[misc]

    def perform_job(self, job: Any, queue: Any, execution: Any = None) -> bool:
        note('perform_job', job.id)
        return bool(super().perform_job(job, queue, execution))  # type: ignore[misc]

    def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any = None, execution: Any = None) -> None:
        note('handle_job_success', job.id)
        super().handle_job_success(job, queue, started_job_registry, execution)  # type: ignore[misc]

    def handle_job_failure(
        self, job: Any, queue: Any, started_job_registry: Any = None, exc_string: str = '', execution: Any = None
    ) -> None:
        note('handle_job_failure', job.id)
        super().handle_job_failure(job, queue, started_job_registry, exc_string, execution)  # type: ignore[misc]

    def handle_exception(self, job: Any, *exc_info: Any) -> None:
        # (Sentry's integration reports only a job whose status is FAILED by then)
        note('handle_exception', job.id, job.get_status(refresh=False).value)
        super().handle_exception(job, *exc_info)  # type: ignore[misc]


class ContractSimple(Contract, SimpleWorker):
    pass


class ContractWorker(Contract, Worker):
    pass


class ContractSpawn(Contract, SpawnWorker):
    pass


# --- perform_job patched as instrumentation patches it: functools.wraps, or wrapt


def _wraps_patch(klass: type) -> type:
    original = klass.perform_job  # type: ignore[attr-defined]

    @functools.wraps(original)
    def perform_job(self: Any, job: Any, *args: Any, **kwargs: Any) -> Any:
        note('wrapped', job.id, 'horse' if self.is_horse else 'worker')
        return original(self, job, *args, **kwargs)

    klass.perform_job = perform_job  # type: ignore[attr-defined]
    return klass


def _wrapt_wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    note('wrapt', args[0].id, 'horse' if instance.is_horse else 'worker')
    return wrapped(*args, **kwargs)


@_wraps_patch
class WrapsSimple(SimpleWorker):
    pass


@_wraps_patch
class WrapsWorker(Worker):
    pass


@_wraps_patch
class WrapsSpawn(SpawnWorker):
    pass


class WraptSimple(SimpleWorker):
    pass


class WraptWorker(Worker):
    pass


class WraptSpawn(SpawnWorker):
    pass


for _name in ('WraptSimple', 'WraptWorker', 'WraptSpawn'):
    wrapt.wrap_function_wrapper(__name__, f'{_name}.perform_job', _wrapt_wrapper)


# --- jobs


def ok(tag: str) -> str:
    return tag


def fail(tag: str) -> None:
    raise ValueError(f'asked to fail: {tag}')


def rendezvous(key: str, count: int, timeout: float = 30.0) -> int:
    """Arrive, then wait until `count` jobs have arrived (or `timeout` s): how many had, at most. Jobs that
    all see `count` ran at the same time."""
    job = get_current_job()
    assert job is not None
    connection = job.connection
    connection.incr(key)
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        seen = int(connection.get(key) or 0)
        if seen >= count:
            break
        time.sleep(0.02)
    return seen
