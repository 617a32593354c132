"""BaseWorker: what every worker class shares; work() starts the worker and runs its loop.

The loop is loop.py's, one for every concurrency: at concurrency 1 it is `step()` repeated (run the
claim in hand, or claim one, execute it, finish it and take the next claim from the same script
call); at N, up to N jobs in flight. It waits (blocking) while the queues are empty and stops on
burst, max_jobs, max_idle_time or a signal; recorder.py records how each job ended.

What owns state is an object the worker holds, with a narrow interface: its hash (records.WorkerHash:
birth, death, heartbeats), the command listener (commands.py), its duties (upkeep.Duties: heartbeat
and maintenance threads, the scheduler), a stop request (signals.StopRequest), the loop and its
recorder, its finisher (finishing.Finisher: a claimed job loaded, run inline and recorded), the
Waiter (waiting.py), the horse pool (pool.py). What RQ users call or override stays the worker's own
methods, which call those objects: RQ's extension points (register_birth, heartbeat, request_stop,
perform_job...: here, hooks.py, rq_api.py, signals.py) and RQ's by-hand API (records.WorkerReads,
stepwise.py), mixins with no state of their own; and rqfast's own, below RQ's: `execute` (how a job
is executed: simple.py's, forking.py's or spawn.py's) and `_finish` (recording it), which the
finisher calls. What the mixins read from the worker is declared once, in declared.py.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import uuid
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import Any

import redis
from redis import Redis

from .. import cluster, engine, keys, scripts
from ..connections import has_sockets
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
from ..outcome import Outcome
from ..queue import Queue
from ..security import JobPolicy
from ..serializers import resolve_serializer, serializer_path
from ..status import WorkerStatus
from ..timeouts import UnixSignalDeathPenalty
from ..version import VERSION
from . import keyspaces, records
from .commands import CommandListener
from .finishing import Finisher
from .hooks import JobHooks, handler_list
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
from .recorder import Recorder
from .records import WorkerHash, WorkerReads
from .rq_api import RQWorkerAPI
from .signals import SHUTDOWN_SIGNAL as SHUTDOWN_SIGNAL  # RQ's names here too
from .signals import StopRequest, StopSignals
from .signals import signal_name as signal_name
from .stepwise import Stepwise
from .upkeep import Duties, heartbeat_interval
from .waiting import Waiter, log_dropped

logger = logging.getLogger('rqfast.worker')

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
        self._hands = threading.local()  # the hooks' job in hand, per thread (hooks.py)
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
        self.log = logger
        self.pid = os.getpid()
        self.hostname = socket.gethostname()
        self.ip_address = records.client_address(connection, self.name) if prepare_for_work else 'unknown'
        self.version = VERSION
        self.python_version = sys.version
        self._hash = WorkerHash(connection, self.name, logger)  # birth, death, heartbeats (records.py)
        self._duties = Duties(connection, self.name, logger)  # upkeep threads, scheduler (upkeep.py)
        self._listener: CommandListener | None = None  # RQ's commands while working (subscribe())
        self.successful_job_count = 0
        self.failed_job_count = 0
        self.total_working_time = 0.0
        self._state = WorkerStatus.STARTED
        self._stop_request = StopRequest(connection, self.name, logger)  # a warm shutdown's state (signals.py)
        self._stopped_job_id: str | None = None
        self._recorder = Recorder(self)  # the jobs in flight and the record of each end (recorder.py)
        self._in_flight: dict[str, engine.Claim] = self._recorder.in_flight
        self._finisher = Finisher(self, self._recorder)  # a claimed job loaded, run and recorded (finishing.py)
        self._queue_order = QueueOrder([q.name for q in self.queues])
        self._waiter: Waiter | None = None
        self._engine_client: Any = None
        self.look_for_hooks()

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

    def _ref(self) -> engine.WorkerRef:
        return engine.WorkerRef(
            self.name,
            self._queue_order.next(),
            self.job_monitoring_interval,
            self.worker_ttl + 60,
            self.heartbeat_grace,
        )

    def _engine_connection(self) -> Any:
        """The claim/finish calls' own connection, held rather than taken from the pool per call (the pool
        polls a connection for pending data every time it hands one out) and fed pre-packed commands."""
        if self._engine_client is None:
            real = has_sockets(self.connection) and not cluster.is_cluster(self.connection)
            # fakeredis: its own client, no sockets for packed commands; a RedisCluster follows MOVED itself
            self._engine_client = scripts.DirectLine(self.connection) if real else self.connection
        return self._engine_client

    # --- what the worker writes about itself (RQ's extension points; its hash: records.WorkerHash)

    def register_birth(self) -> None:
        about = {'pid': self.pid, 'hostname': self.hostname, 'ip_address': self.ip_address}
        about.update(version=self.version, python_version=self.python_version)
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
        in_flight, started = list(self._in_flight.values()), self._recorder.busy_since
        interval, grace = self.job_monitoring_interval, self.heartbeat_grace
        return keyspaces.beat(self._hash, self.queue_names(), in_flight, started, self.worker_ttl, interval, grace)

    def get_state(self) -> str:
        return self._state.value

    def set_state(self, state: WorkerStatus | str) -> None:
        self._state = WorkerStatus(state)
        self._hash.write_state(self._state)

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
        self.register_birth()
        self.log.info('Worker %s: started with PID %d, version %s', self.name, self.pid, self.version)
        self.log.info('*** Listening on %s...', ', '.join(self.queue_names()))
        every = heartbeat_interval(self.job_monitoring_interval, self.worker_ttl)
        recover = self.recover_abandoned_jobs
        self._duties.start(self.heartbeat, every, self.run_maintenance_tasks, self.maintenance_interval, recover)
        self.subscribe()

    def teardown(self) -> None:
        self._duties.stop()
        if self._waiter is not None:
            self._waiter.close()
        self.stop_scheduler()
        self.unsubscribe()
        try:
            self.register_death()
        except redis.ConnectionError as exc:
            self.log.warning('Worker %s: could not register death: %s', self.name, exc)
        if self._engine_client is not None and self._engine_client is not self.connection:
            self._engine_client.close()  # gives its connection back to the pool
        self._engine_client = None
        self.close_webhooks()

    # --- how a job is executed and recorded: rqfast's extension points, which the finisher calls

    def execute(self, job: Job, claim: engine.Claim, now: datetime | None = None) -> Outcome:
        """Run the job and say how it ended (`now`: a pinned time for the times the run records)."""
        raise NotImplementedError

    def _finish(
        self, job: Job, claim: engine.Claim, outcome: Outcome, claim_next: bool, now: datetime | None = None
    ) -> engine.Claim:
        """Record how the job ended (one finish_job call), claiming the next unless not claim_next."""
        return self._finisher.finish(job, claim, outcome, claim_next, now)

    def _webhook_func_name(self, job: Job) -> str | None:
        """The function's name for its webhooks' payload (a forking worker's horse reports it)."""
        try:
            func_name = job.func_name
        except Exception:  # its data cannot be read (a poison job)
            return None
        return None if func_name is None else str(func_name)

    @property
    def _webhook_sender(self) -> Any:
        return self._recorder.webhooks

    def close_webhooks(self) -> None:
        """Send the webhooks still pending, for webhook_shutdown_wait seconds at most (docs/switching.md)."""
        self._recorder.close(self.webhook_shutdown_wait)

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
        self.look_for_hooks()  # a patch since the worker was made counts too
        self._install_signal_handlers()  # first: a SIGTERM during registration is a normal stop, not a kill
        self.bootstrap(logging_level, date_format, log_format)
        if with_scheduler:
            self.start_scheduler(burst)
        size = self.concurrency
        if size > 1 and self.uses_hooks and not self.runs_jobs_in_process:
            self.log.warning(
                "Worker %s: %s overrides RQ's hooks, which a forking or spawn worker runs one job at a time: "
                'concurrency %d is not used',
                self.name,
                type(self).__name__,
                size,
            )
            size = 1  # (a SimpleWorker's hooks run on each job's thread)
        loop = self._loop_of(size)
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
            loop = self._loop = Loop(self, size)
            loop.in_hand = in_hand
        return loop

    def _claim(
        self, moved: tuple[str, str] | None = None, now: datetime | None = None, execution_id: str = ''
    ) -> engine.Claim:
        """One claim script call (of the job a blocking wait moved, if any); never blocks. `execution_id`:
        that of a claim whose reply was lost (see engine.claim_job)."""
        claim = keyspaces.claim_job(self._engine_connection(), self._ref(), moved, now, execution_id)
        log_dropped(self.log, self.name, claim)
        if claim:
            self._queue_order.claimed_from(claim.queue or '')
        return claim

    def _waiter_for(self) -> Waiter:
        if self._waiter is None or self._waiter.queues != self._queue_order.names:
            if self._waiter is not None:
                self._waiter.close()
            self._waiter = Waiter(self.connection, list(self._queue_order.names))
        return self._waiter

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BaseWorker) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.name!r})'
