"""What the worker's mixins read from the worker, declared once for mypy (WorkerAttributes).

BaseWorker sets these attributes (its __init__) or defines these methods; the mixins it is made of
(hooks.py, calling.py, workerhash.WorkerReads, stepwise.py, signals.py, rq_api.py) read
or call them on `self`. Each mixin subclasses this class instead of repeating what it reads; what
a mixin alone reads from another worker file (the loop's recorder, the worker's hash...) it declares
itself, and a class attribute it gives a value is its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis import Redis

from .. import engine
from ..executions import Execution
from ..job import Job
from ..outcome import Outcome
from ..security import JobPolicy
from ..status import WorkerStatus
from .finishing import Finisher


class WorkerAttributes:
    """The worker's attributes and methods its mixins use (see the module's docstring)."""

    # set by BaseWorker.__init__ (RQ's public attributes first)
    connection: Redis
    name: str
    log: logging.Logger
    queues: list[Any]
    queue_class: Any
    job_class: type[Job]
    serializer: Any
    worker_ttl: int
    job_monitoring_interval: int
    maintenance_interval: int
    default_result_ttl: int
    log_job_description: bool
    death_penalty_class: Any
    work_horse_killed_handler: Any
    job_policy: JobPolicy | None
    pid: int
    hostname: str
    ip_address: str
    version: str
    python_version: str
    birth_date: datetime | None
    last_heartbeat: datetime | None
    uses_hooks: bool
    runs_jobs_in_process: bool
    _exc_handlers: list[Callable[..., Any]]
    _state: WorkerStatus
    _in_flight: dict[str, engine.Claim]  # the jobs running now, by id (the recorder's)
    _finisher: Finisher  # a claimed job loaded, run inline and recorded (finishing.py)
    _stopped_job_id: str | None
    _stop_requested: bool  # signals.py's (its StopRequest's)
    _shutdown_requested_date: datetime | None  # signals.py's (its StopRequest's)

    # methods of BaseWorker, or of one mixin that another calls
    queue_names: Callable[[], list[str]]
    set_state: Callable[[WorkerStatus | str], None]
    execute: Callable[..., Outcome]
    kill_horse: Callable[..., None]
    _claim: Callable[..., engine.Claim]
    _waiter_for: Callable[[], Any]
    _finish: Callable[..., engine.Claim]
    _log_exception: Callable[..., None]
    process_through_hooks: Callable[..., engine.Claim]
    execution: Any  # RQ 3.0's: one of the worker's running executions
    _local_execution: Callable[[], Execution | None]
    _held_executions: Callable[[], dict[str, Execution]]
    _end_execution: Callable[[Execution | None], None]
    get_current_executions: Callable[..., list[Execution]]
