"""What the worker's mixins read from the worker, declared once for mypy (WorkerAttributes).

BaseWorker sets these attributes (its __init__) or defines these methods; the mixins it is made of
(hooks.py, reads.py, stepwise.py, signals.py, rq_api.py) read or call them on `self`. Each mixin
subclasses this class instead of repeating what it reads; a class attribute it gives a value is its own.
The private ones are the objects the worker holds (its collaborators), which the mixins hand their work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from redis import Redis

from ..job import Job
from ..security import JobPolicy

if TYPE_CHECKING:
    from .calling import HookCaller
    from .context import WorkerContext
    from .loading import JobLoader
    from .loop import Loop
    from .recorder import Recorder
    from .runner import Runner
    from .stopping import StopRequest
    from .workerhash import WorkerHash


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
    successful_job_count: int
    failed_job_count: int
    total_working_time: float
    current_job_working_time: float
    birth_date: datetime | None  # reads.py's (its hash's)
    last_heartbeat: datetime | None  # reads.py's (its hash's)
    uses_hooks: bool
    runs_jobs_in_process: bool
    _exc_handlers: list[Callable[..., Any]]  # RQ's
    _stopped_job_id: str | None  # RQ's
    _stop_requested: bool  # RQ's (signals.py: its StopRequest's)
    _shutdown_requested_date: datetime | None  # RQ's (signals.py: its StopRequest's)
    # the objects the worker holds
    _context: WorkerContext  # what its collaborators read of it
    _hash: WorkerHash  # its hash: birth, death, heartbeats (workerhash.py)
    _recorder: Recorder  # its claims, the jobs in flight, its state, the record of each end (recorder.py)
    _loader: JobLoader  # a claimed job loaded (loading.py)
    _hooks: HookCaller  # RQ's hooks called as RQ calls them; the job in hand per thread (calling.py)
    _runner: Runner  # how this class runs a job (runner.py, horses.py)
    _stop_request: StopRequest  # a warm shutdown's state (stopping.py)
    _loop: Loop | None  # the work loop, once work() or step() made it (loop.py)

    # methods of BaseWorker, or of one mixin that another calls
    queue_names: Callable[[], list[str]]
    set_state: Callable[[Any], None]
    kill_horse: Callable[..., None]
    execute: Callable[..., Any]
    get_current_executions: Callable[..., list[Any]]
