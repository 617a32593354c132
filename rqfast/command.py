"""RQ's worker commands over pub/sub: sending them, and what each does in the worker that receives it.

The wire format is RQ's: a JSON object `{"command": "shutdown" | "kill-horse" | "stop-job", ...}`
(RQ 3.0 adds `{"command": "stop-execution", "job_id": ..., "execution_id": ...}`)
published on `rq:pubsub:<worker name>`, so rq and rqfast workers and tools command each other.
The worker's listener (rqfast/worker/commands.py) hands each payload to handle_command.
"""

from __future__ import annotations

import json
import os
import signal
from typing import TYPE_CHECKING, Any

from redis import Redis

from . import keys
from .exceptions import InvalidJobOperation
from .job import Job
from .text import as_text

if TYPE_CHECKING:
    from .worker import BaseWorker

PUBSUB_CHANNEL_TEMPLATE = keys.pubsub_channel('%s')  # 'rq:pubsub:%s', as RQ names it

SHUTDOWN = 'shutdown'
KILL_HORSE = 'kill-horse'
STOP_JOB = 'stop-job'
STOP_EXECUTION = 'stop-execution'  # RQ 3.0's


def send_command(connection: Redis, worker_name: str, command: str, **kwargs: Any) -> None:
    """Publish `command` (and any fields in kwargs) to the worker's channel."""
    connection.publish(keys.pubsub_channel(worker_name), json.dumps({'command': command, **kwargs}))


def send_shutdown_command(connection: Redis, worker_name: str) -> None:
    """A warm shutdown: the worker finishes the job in hand, then stops."""
    send_command(connection, worker_name, SHUTDOWN)


def send_kill_horse_command(connection: Redis, worker_name: str) -> None:
    """The worker kills its work horse (the job fails); ignored by a worker without one."""
    send_command(connection, worker_name, KILL_HORSE)


def send_stop_job_command(connection: Redis, job_id: str, serializer: Any = None) -> None:
    """Stop a running job (it ends STOPPED).

    NoSuchJobError for an unknown job, InvalidJobOperation for one no worker is running.
    """
    job = Job.fetch(job_id, connection=connection, serializer=serializer)
    if not job.worker_name:
        raise InvalidJobOperation('Job is not currently executing')
    send_command(connection, job.worker_name, STOP_JOB, job_id=job_id)


def send_stop_execution_command(connection: Redis, job_id: str, execution_id: str) -> None:
    """RQ 3.0's: stop one execution of a job (it ends STOPPED); the worker is read from the execution.

    InvalidJobOperation when that execution is not running.
    """
    worker_name = connection.hget(keys.execution_key(job_id, execution_id), 'worker_name')
    if not worker_name:
        raise InvalidJobOperation('Execution is not running')
    send_command(connection, as_text(worker_name), STOP_EXECUTION, job_id=job_id, execution_id=execution_id)


def parse_payload(message: dict[str, Any]) -> dict[str, Any]:
    """The command a pub/sub message carries; ValueError when its data is not a JSON object."""
    payload = json.loads(as_text(message['data']))
    if not isinstance(payload, dict):
        raise ValueError(f'not a command: {payload!r}')
    return payload


def handle_command(worker: BaseWorker, payload: dict[str, Any]) -> None:
    """Route one command to the worker; an unknown command is ignored."""
    command = payload.get('command')
    if command == STOP_JOB:
        handle_stop_job_command(worker, payload)
    elif command == SHUTDOWN:
        handle_shutdown_command(worker)
    elif command == KILL_HORSE:
        handle_kill_worker_command(worker, payload)
    elif command == STOP_EXECUTION:
        handle_stop_execution_command(worker, payload)


def handle_shutdown_command(worker: BaseWorker) -> None:
    """SIGINT to the worker's own process: the same warm shutdown as Ctrl-C."""
    worker.log.info('Worker %s: received shutdown command, sending SIGINT signal', worker.name)
    os.kill(os.getpid(), signal.SIGINT)


def handle_kill_worker_command(worker: BaseWorker, payload: dict[str, Any]) -> None:
    worker.log.info('Worker %s: received kill horse command', worker.name)
    worker.kill_horse()


def handle_stop_job_command(worker: BaseWorker, payload: dict[str, Any]) -> None:
    job_id = payload.get('job_id')
    if isinstance(job_id, str) and worker.is_working_on(job_id):
        worker.stop_job(job_id)
    else:
        worker.log.info('Worker %s: not working on job %s, stop-job command ignored', worker.name, job_id)


def handle_stop_execution_command(worker: BaseWorker, payload: dict[str, Any]) -> None:
    """A stop-job for the job the execution runs, while that execution is still running (its hash is
    deleted when it ends): a late command does not stop a later run of the same job."""
    job_id, execution_id = payload.get('job_id'), payload.get('execution_id')
    if (
        isinstance(job_id, str)
        and isinstance(execution_id, str)
        and worker.connection.exists(keys.execution_key(job_id, execution_id))
    ):
        handle_stop_job_command(worker, {'job_id': job_id})
    else:
        worker.log.info(
            'Worker %s: execution %s of job %s is not running, command ignored', worker.name, execution_id, job_id
        )
