"""The actions an operator takes from the dashboard, each a call of rqfast's own API (as the CLI's admin
commands make them): what it asks before, what it checks, what it does, and what it says after.

A job is loaded sealed (rqfast.security.restore_sealed) for the actions that need it: its payload is
never deserialized, and what a requeue writes back is what was stored. Every check is made before
anything is written: a refused action changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import keys, suspension
from ..command import STOP_JOB, send_command
from ..exceptions import InvalidJobOperation, NoSuchJobError
from ..job import Job
from ..security import restore_sealed
from ..status import JobStatus
from ..text import as_text
from .jobview import valid_id
from .reads import queue
from .settings import Settings

if TYPE_CHECKING:
    from redis import Redis


class ActionError(Exception):
    """An action that cannot be done as asked (nothing was written)."""


@dataclass(frozen=True)
class Target:
    """What an action is asked about: a queue, a job of a queue, or (workers) neither."""

    queue: str = ''
    job_id: str = ''


@dataclass(frozen=True)
class Action:
    name: str
    label: str  # the button
    needs: str  # 'job', 'queue' or ''
    question: Callable[[Settings, Target], str]  # the confirmation
    perform: Callable[[Settings, Target], str]  # what was done, in a sentence
    danger: bool = False


def _sealed(settings: Settings, target: Target) -> Job:
    """The job, loaded without deserializing its payload; ActionError when there is none."""
    with keys.within(target.queue):
        raw = settings.connection.hgetall(keys.job_key(target.job_id))
        if not raw:
            raise ActionError(f'There is no job {target.job_id} (any more).')
        job = Job(target.job_id, connection=settings.connection, serializer=settings.job_serializer)
        try:
            restore_sealed(job, raw)
        except Exception as exc:
            raise ActionError(f'Job {target.job_id} cannot be loaded ({type(exc).__name__}: {exc}).') from exc
    return job


def _status(connection: Redis, target: Target) -> str:
    with keys.within(target.queue):
        return as_text(connection.hget(keys.job_key(target.job_id), 'status') or b'')


def _requeue_one(settings: Settings, target: Target) -> str:
    job = _sealed(settings, target)
    try:
        queue(settings.connection, job.origin or target.queue, settings.serializer).failed_job_registry.requeue(job)
    except (InvalidJobOperation, NoSuchJobError) as exc:
        raise ActionError(f'Job {target.job_id} was not requeued: {exc}') from exc
    return f'Requeued job {target.job_id} onto queue {job.origin}.'


def _requeue_all(settings: Settings, target: Target) -> str:
    registry = queue(settings.connection, target.queue, settings.serializer).failed_job_registry
    done = skipped = 0
    for job_id in registry.get_job_ids(cleanup=False):
        try:
            registry.requeue(_sealed(settings, Target(target.queue, job_id)))
            done += 1
        except (ActionError, InvalidJobOperation, NoSuchJobError):
            skipped += 1
    more = f' ({skipped} could not be: gone or no longer failed)' if skipped else ''
    return f'Requeued {done} failed jobs of queue {target.queue}{more}.'


def _cancel(settings: Settings, target: Target) -> str:
    job = _sealed(settings, target)
    if job.get_status(refresh=False) == JobStatus.CANCELED:
        raise ActionError(f'Job {target.job_id} is canceled already.')
    try:
        job.cancel()
    except (InvalidJobOperation, NoSuchJobError) as exc:
        raise ActionError(f'Job {target.job_id} was not canceled: {exc}') from exc
    return f'Canceled job {target.job_id}.'


def _delete(settings: Settings, target: Target) -> str:
    job = _sealed(settings, target)
    job.delete()
    return f'Deleted job {target.job_id}.'


def _stop(settings: Settings, target: Target) -> str:
    job = _sealed(settings, target)
    if job.get_status(refresh=False) != JobStatus.STARTED or not job.worker_name:
        raise ActionError(f'Job {target.job_id} is not running (it is {job.get_status(refresh=False).value}).')
    with keys.within(target.queue):
        send_command(settings.connection, job.worker_name, STOP_JOB, job_id=target.job_id)
    return f'Sent a stop to worker {job.worker_name} for job {target.job_id}.'


def _empty(settings: Settings, target: Target) -> str:
    removed = queue(settings.connection, target.queue, settings.serializer).empty()
    return f'Removed {removed} jobs from queue {target.queue}.'


def _pause(settings: Settings, target: Target) -> str:
    queue(settings.connection, target.queue).pause()
    return f'Paused queue {target.queue}: rqfast workers start none of its jobs until it is resumed.'


def _resume(settings: Settings, target: Target) -> str:
    queue(settings.connection, target.queue).resume()
    return f'Resumed queue {target.queue}.'


def _suspend_workers(settings: Settings, target: Target) -> str:
    suspension.suspend(settings.connection)
    return 'Suspended every worker: jobs in hand finish, no new one starts until they are resumed.'


def _resume_workers(settings: Settings, target: Target) -> str:
    suspension.resume(settings.connection)
    return 'Resumed the workers.'


def _job_question(verb: str, after: str = '') -> Callable[[Settings, Target], str]:
    def question(settings: Settings, target: Target) -> str:
        with keys.within(target.queue):
            description = settings.connection.hget(keys.job_key(target.job_id), 'description')
        what = f' ({as_text(description)[:200]})' if description else ''
        return f'{verb} job {target.job_id}{what} of queue {target.queue}{after}?'

    return question


def _count_question(text: str, counted: Callable[[Settings, Target], int]) -> Callable[[Settings, Target], str]:
    return lambda settings, target: text.format(queue=target.queue, count=counted(settings, target))


ACTIONS: dict[str, Action] = {
    action.name: action
    for action in (
        Action('requeue', 'Requeue', 'job', _job_question('Requeue', ' from the failed registry'), _requeue_one),
        Action(
            'requeue-all',
            'Requeue all failed',
            'queue',
            _count_question(
                'Requeue all {count} failed jobs of queue {queue}?',
                lambda s, t: queue(s.connection, t.queue).failed_job_registry.get_job_count(cleanup=False),
            ),
            _requeue_all,
        ),
        Action('cancel', 'Cancel', 'job', _job_question('Cancel'), _cancel, danger=True),
        Action('delete', 'Delete', 'job', _job_question('Delete', ', its results and its hash'), _delete, danger=True),
        Action('stop', 'Stop', 'job', _job_question('Send a stop to the worker running'), _stop, danger=True),
        Action(
            'empty',
            'Empty queue',
            'queue',
            _count_question(
                'Delete all {count} queued jobs of queue {queue}?', lambda s, t: queue(s.connection, t.queue).count
            ),
            _empty,
            danger=True,
        ),
        Action('pause', 'Pause queue', 'queue', lambda s, t: f'Pause queue {t.queue}?', _pause),
        Action('resume', 'Resume queue', 'queue', lambda s, t: f'Resume queue {t.queue}?', _resume),
        Action(
            'suspend-workers',
            'Suspend workers',
            '',
            lambda s, t: 'Suspend every worker (no new job starts anywhere until they are resumed)?',
            _suspend_workers,
            danger=True,
        ),
        Action('resume-workers', 'Resume workers', '', lambda s, t: 'Resume every worker?', _resume_workers),
    )
}


def check(action: Action, target: Target, queue_names: list[str]) -> None:
    """ActionError unless the target is one the action can be asked about (before any question is read)."""
    if action.needs == 'queue' and target.queue not in queue_names:
        raise ActionError(f'There is no queue named {target.queue!r}.')
    if action.needs == 'job' and not valid_id(target.job_id):
        raise ActionError(f'{target.job_id!r} is not a job id.')
