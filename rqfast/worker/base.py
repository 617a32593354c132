"""BaseWorker: what every worker class shares; work() starts the worker and runs its loop.

The loop is loop.py's, one for every concurrency: at concurrency 1 it is `step()` repeated (run the
claim in hand, or claim one, execute it, finish it and take the next claim from the same script
call); at N, up to N jobs in flight. It waits (blocking) while the queues are empty and stops on
burst, max_jobs, max_idle_time or a signal.

What owns state is an object the worker holds, with a narrow interface, each handed what it uses
(a WorkerContext, context.py: the worker read-only, made here) rather than the worker: its hash
(workerhash.WorkerHash: birth, death, heartbeats), the command listener (commands.py), its duties
(upkeep.Duties: heartbeat and maintenance threads, the scheduler), a stop request
(stopping.StopRequest), the recorder (recorder.py: its claims, the jobs in flight, its state, the
record of each end), the loader (loading.py), the hook caller (calling.py) and the runner
(runner.py, horses.py: how this class runs a job, `runner_class`), and the loop that drives them.
What RQ users call or override stays the worker's own methods, which call those objects: RQ's
extension points (register_birth, heartbeat, request_stop, execute_job, perform_job...: here,
hooks.py, rq_api.py, signals.py) and RQ's by-hand API (reads.py, stepwise.py), mixins with no state
of their own. What the mixins read from the worker is declared once, in declared.py.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import uuid
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any

import redis
from redis import Redis

from .. import engine, keys
from ..as_rq import logger_name
from ..connections import bound_handshakes, eviction_warning
from ..defaults import (
    DEFAULT_JOB_MONITORING_INTERVAL,
    DEFAULT_RESULT_TTL,
    DEFAULT_WORKER_TTL,
    IDLE_WAKEUP,
    JOB_HEARTBEAT_GRACE,
    MAINTENANCE_INTERVAL,
    WEBHOOK_SHUTDOWN_WAIT,
)
from ..exceptions import StopRequested
from ..job import Job
from ..logutils import worker_console
from ..outcome import Outcome, OutcomeKind
from ..queue import Queue
from ..rq_interop import is_rq_worker
from ..security import JobPolicy
from ..serializers import resolve_serializer, serializer_path
from ..status import WorkerStatus
from ..timeouts import UnixSignalDeathPenalty
from ..version import VERSION
from . import keyspaces, workerhash
from .calling import HookCaller
from .commands import CommandListener
from .hooks import JobHooks, handler_list
from .joblog import JobLog
from .loading import JobLoader
from .loop import Loop
from .order import DequeueStrategy, QueueOrder
from .queues import (
    configure_socket_timeout,
    connection_of,
    own_job_class,
    own_queue_class,
    queue_list,
    socket_timeout,
    worker_queue,
)
from .reads import WorkerReads
from .recorder import Recorder
from .rq_api import RQWorkerAPI
from .runner import Runner
from .signals import StopSignals
from .stepwise import Stepwise
from .stopping import SHUTDOWN_SIGNAL as SHUTDOWN_SIGNAL  # RQ's names here too
from .stopping import StopRequest
from .stopping import signal_name as signal_name
from .upkeep import Duties, heartbeat_interval
from .workerhash import WorkerHash

logger = logging.getLogger(logger_name('worker'))

DEFAULT_MAINTENANCE_TASK_INTERVAL = MAINTENANCE_INTERVAL  # RQ's is 600; abandoned jobs are found within a minute


class BaseWorker(JobHooks, WorkerReads, Stepwise, StopSignals, RQWorkerAPI):
    redis_worker_namespace_prefix = keys.WORKER_PREFIX
    redis_workers_keys = keys.WORKERS
    death_penalty_class: Any = UnixSignalDeathPenalty
    queue_class: type[Queue] = Queue
    job_class: type[Job] = Job
    runs_jobs_concurrently = False  # concurrency > 1 (loop.py's slots): SimpleWorker's, Worker's, SpawnWorker's
    dequeue_timeout = IDLE_WAKEUP  # seconds an idle worker blocks at a time (RQ's: worker_ttl - 15; see README)
    heartbeat_grace = JOB_HEARTBEAT_GRACE  # a running job's heartbeat TTL is job_monitoring_interval plus this
    current_job_working_time = 0.0
    runs_jobs_in_process = True  # False: a horse runs the job, and this process never deserializes its payload
    webhook_shutdown_wait: float = WEBHOOK_SHUTDOWN_WAIT  # seconds a stopping worker gives its pending webhooks
    job_observer: Callable[[Job, Outcome], None] | None = None  # told each recorded end (rqfast.metrics)
    runner_class: type[Runner] = Runner  # how this class runs a job (runner.py): in this process

    def __init__(
        self,
        queues: Any,
        name: str | None = None,
        default_result_ttl: int = DEFAULT_RESULT_TTL,
        connection: Redis | None = None,
        exception_handlers: Any = None,
        maintenance_interval: int = DEFAULT_MAINTENANCE_TASK_INTERVAL,
        default_worker_ttl: int | None = None,
        worker_ttl: int | None = None,
        job_class: Any = None,
        queue_class: Any = None,
        log_job_description: bool = True,
        job_monitoring_interval: int = DEFAULT_JOB_MONITORING_INTERVAL,
        disable_default_exception_handler: bool = False,
        prepare_for_work: bool = True,
        serializer: Any = None,
        work_horse_killed_handler: Callable[..., Any] | None = None,
        concurrency: int = 1,
        *,
        allow: Any = None,
        signing_key: str | bytes | None = None,
    ):
        self.concurrency = self.check_concurrency(concurrency)
        self._loop: Loop | None = None  # the work loop (loop.py), made by the first work() or step()
        # rq's Job and Queue (2.12's or 3.0's, django-rq's DjangoRQ, subclasses) become rqfast's (queues.py)
        self.job_class = own_job_class(self.job_class if job_class is None else job_class, logger)
        self.queue_class = own_queue_class(self.queue_class if queue_class is None else queue_class)
        self._serializer_arg = serializer_path(serializer)  # RQ's: how a spawned child names it
        self.serializer = resolve_serializer(serializer)
        if default_worker_ttl and not worker_ttl:
            warnings.warn('default_worker_ttl is deprecated, use worker_ttl.', DeprecationWarning, stacklevel=2)
        self.worker_ttl = worker_ttl or default_worker_ttl or DEFAULT_WORKER_TTL
        given = queue_list(queues)
        self.connection = connection = connection_of(given, connection)
        configure_socket_timeout(connection, self.connection_timeout)
        bound_handshakes(connection)  # (a connection made while the network is silent: docs/reliability.md)
        self.queues = [worker_queue(q, connection, self.queue_class, self.job_class, self.serializer) for q in given]
        self.name = name or uuid.uuid4().hex
        self.default_result_ttl = default_result_ttl
        self.job_monitoring_interval = job_monitoring_interval
        self.maintenance_interval = maintenance_interval
        self.log_job_description = log_job_description
        self.disable_default_exception_handler = disable_default_exception_handler
        self.work_horse_killed_handler = work_horse_killed_handler
        self.job_policy = JobPolicy.make(allow, signing_key)  # None unless allow= or a signing key (README: Security)
        self._exc_handlers: list[Callable[..., Any]] = []
        for handler in handler_list(exception_handlers):
            self.push_exc_handler(handler)
        self.log = logging.getLogger(logger_name('worker'))  # rq.worker while rqfast serves `rq`
        self.pid = os.getpid()
        self.hostname = socket.gethostname()
        self.ip_address = workerhash.client_address(connection, self.name) if prepare_for_work else 'unknown'
        self.version = VERSION
        self.python_version = sys.version
        self._hash = WorkerHash(connection, self.name, logger)  # birth, death, heartbeats (workerhash.py)
        self._duties = Duties(connection, self.name, logger)  # upkeep threads, scheduler (upkeep.py)
        self._listener: CommandListener | None = None  # RQ's commands while working (subscribe())
        self.successful_job_count = 0
        self.failed_job_count = 0
        self.total_working_time = 0.0
        self._stop_request = StopRequest(connection, self.name, logger)  # a warm shutdown's state (stopping.py)
        self._stopped_job_id: str | None = None  # RQ's: the job a stop-job command asked to stop
        self._queue_order = QueueOrder([q.name for q in self.queues])
        self._context = context = Context(self)  # the worker as its collaborators see it (context.py)
        joblog = JobLog(context)
        self._recorder = Recorder(context, self._hash, self._queue_order, joblog)  # jobs in flight, state, records
        self._loader = JobLoader(context, joblog, self.runs_jobs_in_process)  # a claimed job loaded (loading.py)
        self._hooks = HookCaller(self, context, self._recorder, joblog)  # RQ's hooks as RQ calls them
        self._runner = self.runner_class(self, context, self._hooks, joblog)  # how this class runs a job
        self._hooks.release = self._runner.release
        self.uses_hooks = self._hooks.look()

    @classmethod
    def check_concurrency(cls, concurrency: Any) -> int:
        """The one check of a concurrency (the CLI's too): an integer >= 1, and > 1 only for a class that runs
        jobs concurrently (SimpleWorker, Worker and SpawnWorker do); a ValueError that says so otherwise."""
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError(f'concurrency must be an integer >= 1, not {concurrency!r}')
        if concurrency > 1 and not cls.runs_jobs_concurrently:
            raise ValueError(
                f'concurrency {concurrency}: {cls.__name__} runs one job at a time (SimpleWorker runs jobs on threads '
                'and an event loop, Worker and SpawnWorker in a horse each: use one of them, or a subclass)'
            )
        return concurrency

    # --- identity

    @property
    def key(self) -> str:
        return keys.worker_key(self.name)

    @property
    def connection_timeout(self) -> int:
        return socket_timeout(self.worker_ttl)

    def queue_names(self) -> list[str]:
        return [q.name for q in self.queues]

    def queue_keys(self) -> list[str]:
        return [q.key for q in self.queues]

    # --- what the worker writes about itself (RQ's extension points; its hash: workerhash.WorkerHash)

    def register_birth(self) -> None:
        about = {'pid': self.pid, 'hostname': self.hostname, 'ip_address': self.ip_address}
        about.update(version=self.version, python_version=self.python_version)
        # rqfast's additive fields (RQ's readers ignore them): what the dashboard's workers page shows
        about.update(worker_class=f'{type(self).__module__}.{type(self).__qualname__}', concurrency=self.concurrency)
        for names in keys.by_keyspace(self.queue_names()):  # (sharded by queue: in each queue's keyspace)
            self._hash.birth(self.worker_ttl + 60, names, about)

    def register_death(self) -> None:
        for names in keys.by_keyspace(self.queue_names()):
            self._hash.death(names)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> bool:
        """Refresh the worker hash and every job in flight; True when rq:suspended is set.

        Called as RQ's (a timeout or a pipeline): the worker hash and its executions index only, kept
        `timeout` seconds (default worker_ttl + 60), in the pipeline if given; False.
        """
        if timeout is not None or pipeline is not None:
            self._hash.beat_into(pipeline if pipeline is not None else self.connection, timeout or self.worker_ttl + 60)
            return False
        in_flight, started = list(self._recorder.in_flight.values()), self._recorder.busy_since
        interval, grace = self.job_monitoring_interval, self.heartbeat_grace
        return keyspaces.beat(self._hash, self.queue_names(), in_flight, started, self.worker_ttl, interval, grace)

    def get_state(self) -> str:
        state = self._recorder.state
        return str(getattr(state, 'value', state))  # ('?' read back from a hash without one)

    def set_state(self, state: WorkerStatus | str) -> None:
        self._recorder.set_state(WorkerStatus(state))

    state = property(get_state, set_state)

    # --- starting and stopping

    def bootstrap(
        self,
        logging_level: str | None = 'INFO',
        date_format: str = '%H:%M:%S',
        log_format: str = '%(asctime)s %(message)s',
    ) -> None:
        if logging_level:  # as RQ: a handler the first time, and each work() call's level
            worker_console(logging_level, date_format, log_format)
        self._hash.birth_state = WorkerStatus.STARTED  # RQ's bootstrap: birth, then state=started (one call here)
        try:
            self.register_birth()
        finally:
            self._hash.birth_state = None
        self.log.info('Worker %s: started with PID %d, version %s', self.name, self.pid, self.version)
        self.log.info('*** Listening on %s...', ', '.join(self.queue_names()))
        evicting = eviction_warning(self.connection)  # (once per work() call: CONFIG GET, never raises)
        if evicting:
            self.log.warning('Worker %s: %s', self.name, evicting)
        every = heartbeat_interval(self.job_monitoring_interval, self.worker_ttl)
        recover = self.recover_abandoned_jobs
        self._duties.start(self.heartbeat, every, self.run_maintenance_tasks, self.maintenance_interval, recover)
        self.subscribe()

    def teardown(self) -> None:
        self._duties.stop()
        self.stop_scheduler()
        self.unsubscribe()
        try:
            self.register_death()
        except redis.ConnectionError as exc:
            self.log.warning('Worker %s: could not register death: %s', self.name, exc)
        self._recorder.close(self.webhook_shutdown_wait)  # its connections back, its webhooks sent

    def close_webhooks(self) -> None:
        """Send the webhooks still pending, for webhook_shutdown_wait seconds at most (docs/switching.md)."""
        self._recorder.close_webhooks(self.webhook_shutdown_wait)

    # --- the loop

    def work(
        self,
        burst: bool = False,
        logging_level: str | None = 'INFO',
        date_format: str = '%H:%M:%S',
        log_format: str = '%(asctime)s %(message)s',
        max_jobs: int | None = None,
        max_idle_time: int | None = None,
        with_scheduler: bool = False,
        dequeue_strategy: DequeueStrategy | str = DequeueStrategy.DEFAULT,
    ) -> bool:
        """Work until the queues are empty (burst), max_jobs, max_idle_time or a shutdown; True if any job ran."""
        if not self.queues:
            raise ValueError('a worker needs at least one queue to work')
        self._queue_order.strategy = DequeueStrategy(dequeue_strategy)
        self.uses_hooks = self._hooks.look()  # a patch since the worker was made counts too
        self._install_signal_handlers()  # first: a SIGTERM during registration is a normal stop, not a kill
        self.bootstrap(logging_level, date_format, log_format)
        if with_scheduler:
            self.start_scheduler(burst)
        loop = self._loop_of(self.concurrency)
        try:
            return loop.work(burst, max_jobs, max_idle_time) > 0
        except StopRequested:
            return loop.started > 0
        finally:
            self.teardown()

    def step(self, now: datetime | None = None, claim_next: bool = True) -> bool:
        """One turn of the loop: run the claim in hand, or claim a job (never blocking); False if there was none.

        Finishing the job claims the next one in the same call (unless not claim_next): the next step
        runs it. `now` pins the time the worker records (the claim, the finish, a SimpleWorker's run),
        like huey's Worker.loop(now), so a test can step a worker without threads or sleeps.
        """
        return self._loop_of(1).step(now, claim_next)

    def _loop_of(self, size: int) -> Loop:
        """The worker's loop (loop.py) with `size` slots; a new one takes over the claim in hand."""
        loop = self._loop
        if loop is None or loop.size != size or loop.closed:
            in_hand = loop.in_hand if loop is not None else engine.Claim()
            loop = self._loop = Loop(
                self._context, self._recorder, self._loader, self._runner, self._stop_request, size
            )
            loop.in_hand = in_hand
        return loop

    def __eq__(self, other: object) -> bool:
        """The same name, of rqfast's workers or rq's own (rq installed beside rqfast)."""
        return (isinstance(other, BaseWorker) or is_rq_worker(other)) and self.name == getattr(other, 'name', None)

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.name!r})'


class Context:
    """The worker read-only, as its collaborators see it (context.WorkerContext): what they read of it,
    read when used; the one write is the count of a recorded end into the worker's RQ counters."""

    __slots__ = ('_worker', 'name', 'connection', 'log')

    def __init__(self, worker: BaseWorker) -> None:
        self._worker = worker
        # its name, connection and logger are its own for life (its hash, duties and stop request take them too)
        self.name, self.connection, self.log = worker.name, worker.connection, worker.log

    @property
    def job_class(self) -> type[Job]:
        return self._worker.job_class

    @property
    def queue_class(self) -> Any:
        return self._worker.queue_class

    @property
    def serializer(self) -> Any:
        return self._worker.serializer

    @property
    def job_policy(self) -> JobPolicy | None:
        return self._worker.job_policy

    @property
    def exception_handlers(self) -> list[Callable[..., Any]]:
        return self._worker._exc_handlers

    @property
    def death_penalty_class(self) -> Any:
        return self._worker.death_penalty_class

    @property
    def default_result_ttl(self) -> int:
        return self._worker.default_result_ttl

    @property
    def disable_default_exception_handler(self) -> bool:
        return self._worker.disable_default_exception_handler

    @property
    def job_monitoring_interval(self) -> int:
        return self._worker.job_monitoring_interval

    @property
    def worker_ttl(self) -> int:
        return self._worker.worker_ttl

    @property
    def heartbeat_grace(self) -> int:
        return self._worker.heartbeat_grace

    @property
    def dequeue_timeout(self) -> int:
        return self._worker.dequeue_timeout

    @property
    def log_job_description(self) -> bool:
        return self._worker.log_job_description

    @property
    def log_result_lifespan(self) -> bool:
        return self._worker.log_result_lifespan

    @property
    def job_observer(self) -> Callable[[Job, Outcome], None] | None:
        return self._worker.job_observer

    def queue_names(self) -> list[str]:
        return self._worker.queue_names()

    def queue_named(self, name: str) -> Any:
        worker = self._worker
        for queue in worker.queues:
            if queue.name == name:
                return queue
        return worker.queue_class(name, connection=worker.connection)

    def tally(self, outcome: Outcome, working_time: float) -> None:
        worker = self._worker
        if outcome.kind is OutcomeKind.SUCCESS:
            worker.successful_job_count += 1
        else:
            worker.failed_job_count += 1
        worker.total_working_time += working_time
