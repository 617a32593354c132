"""BaseWorker: registration, heartbeats, commands, signals and the work loop shared by every class.

The loop (work) is: claim a job, execute it, finish it and claim the next in the same script call.
How a job is executed (in process, in a forked horse, in a spawned child) is the subclass's
`execute`.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from typing import Any

import redis
from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry as RedisRetry

from .. import engine, keys, scripts
from ..backoff import Backoff
from ..dates import now, utcformat, utcparse
from ..exceptions import StopRequested
from ..execution import Outcome
from ..imports import import_attribute
from ..job import Job, JobStatus
from ..jobhash import unreadable_fields
from ..queue import Queue
from ..serializers import resolve_serializer
from ..status import WorkerStatus
from ..text import as_text
from ..timeouts import UnixSignalDeathPenalty
from ..version import VERSION
from .waiting import Waiter

logger = logging.getLogger('rqfast.worker')

DEFAULT_WORKER_TTL = 420
DEFAULT_RESULT_TTL = 500
DEFAULT_JOB_MONITORING_INTERVAL = 30
DEFAULT_MAINTENANCE_TASK_INTERVAL = 60  # RQ's is 600; abandoned jobs are found within about a minute
IDLE_WAKEUP = 5  # seconds an idle worker blocks before it looks at suspension and shutdown again


class DequeueStrategy(str, Enum):
    DEFAULT = 'default'
    ROUND_ROBIN = 'round_robin'
    RANDOM = 'random'


class BaseWorker:
    redis_worker_namespace_prefix = keys.WORKER_PREFIX
    redis_workers_keys = keys.WORKERS
    death_penalty_class: Any = UnixSignalDeathPenalty
    queue_class: type[Queue] = Queue
    job_class: type[Job] = Job

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
    ):
        if job_class is not None:
            self.job_class = import_attribute(job_class) if isinstance(job_class, str) else job_class
        if queue_class is not None:
            self.queue_class = import_attribute(queue_class) if isinstance(queue_class, str) else queue_class
        self.serializer = resolve_serializer(serializer)
        queue_list = [queues] if isinstance(queues, str | Queue) else list(queues)
        if not queue_list:
            raise ValueError('a worker needs at least one queue')
        if connection is None:
            connection = next((q.connection for q in queue_list if isinstance(q, Queue)), None)
        if connection is None:
            raise TypeError('a worker needs a connection')
        self.connection = connection
        self.queues = [
            q
            if isinstance(q, Queue)
            else self.queue_class(q, connection=connection, job_class=self.job_class, serializer=self.serializer)
            for q in queue_list
        ]
        self.name = name or uuid.uuid4().hex
        self.default_result_ttl = default_result_ttl
        self.worker_ttl = worker_ttl or default_worker_ttl or DEFAULT_WORKER_TTL
        self.job_monitoring_interval = job_monitoring_interval
        self.maintenance_interval = maintenance_interval
        self.log_job_description = log_job_description
        self.disable_default_exception_handler = disable_default_exception_handler
        self.work_horse_killed_handler = work_horse_killed_handler
        self._exc_handlers: list[Callable[..., Any]] = []
        for handler in exception_handlers or []:
            self.push_exc_handler(handler)
        self.log = logger
        self.pid = os.getpid()
        self.hostname = socket.gethostname()
        self.ip_address = 'unknown'
        self.version = VERSION
        self.python_version = sys.version
        self.birth_date: datetime | None = None
        self.last_heartbeat: datetime | None = None
        self.successful_job_count = 0
        self.failed_job_count = 0
        self.total_working_time = 0.0
        self._state = WorkerStatus.STARTED
        self._stop_requested = False
        self._interruptible = False  # blocked waiting for a job: a stop request may raise there
        self._shutdown_requested_date: datetime | None = None
        self._stopped_job_id: str | None = None
        self._in_flight: dict[str, engine.Claim] = {}
        self._job_started_monotonic: float | None = None
        self._ordered_queues = [q.name for q in self.queues]
        self._dequeue_strategy = DequeueStrategy.DEFAULT
        self._heartbeat_stop = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._pubsub: Any = None
        self._pubsub_thread: Any = None
        self._waiter: Waiter | None = None
        self._engine_client: Any = None
        self.scheduler: Any = None
        self.last_cleaned_at: datetime | None = None

    # --- identity

    @property
    def key(self) -> str:
        return keys.worker_key(self.name)

    @property
    def pubsub_channel_name(self) -> str:
        return keys.pubsub_channel(self.name)

    def queue_names(self) -> list[str]:
        return [q.name for q in self.queues]

    def queue_keys(self) -> list[str]:
        return [q.key for q in self.queues]

    def push_exc_handler(self, handler: Callable[..., Any] | str) -> None:
        self._exc_handlers.append(import_attribute(handler) if isinstance(handler, str) else handler)

    def pop_exc_handler(self) -> Callable[..., Any]:
        return self._exc_handlers.pop()

    def get_state(self) -> str:
        return self._state.value

    def set_state(self, state: WorkerStatus | str) -> None:
        self._state = WorkerStatus(state)
        self.connection.hset(self.key, 'state', self._state.value)

    state = property(get_state, set_state)

    def _ref(self) -> engine.WorkerRef:
        return engine.WorkerRef(self.name, self._queue_order(), self.job_monitoring_interval, self.worker_ttl + 60)

    def _engine_connection(self) -> Any:
        """The claim/finish calls' own connection, held rather than taken from the pool per call (the pool
        polls a connection for pending data every time it hands one out) and fed pre-packed commands."""
        if self._engine_client is None:
            if type(self.connection).__module__.startswith('fakeredis'):
                self._engine_client = self.connection
            else:
                self._engine_client = scripts.DirectLine(self.connection)
        return self._engine_client

    def _queue_order(self) -> list[str]:
        if self._dequeue_strategy == DequeueStrategy.RANDOM:
            order = list(self._ordered_queues)
            random.shuffle(order)
            return order
        return list(self._ordered_queues)

    def _after_claim(self, queue: str) -> None:
        """Round robin: the queue after the one a job came from goes first next time."""
        if self._dequeue_strategy == DequeueStrategy.ROUND_ROBIN and queue in self._ordered_queues:
            index = self._ordered_queues.index(queue)
            self._ordered_queues = self._ordered_queues[index + 1 :] + self._ordered_queues[: index + 1]

    # --- birth, death, heartbeats

    def register_birth(self) -> None:
        self.birth_date = self.last_heartbeat = now()
        try:
            self.connection.client_setname(self.name)
            for client in self.connection.client_list():
                if client.get('name') == self.name:
                    self.ip_address = client.get('addr', 'unknown')
        except redis.ResponseError:
            pass
        fields = {
            'birth': utcformat(self.birth_date),
            'last_heartbeat': utcformat(self.last_heartbeat),
            'queues': ','.join(self.queue_names()),
            'pid': self.pid,
            'hostname': self.hostname,
            'ip_address': self.ip_address,
            'version': self.version,
            'python_version': self.python_version,
            'state': WorkerStatus.STARTED.value,
        }
        if not scripts.register_worker(
            self.connection,
            self.name,
            'birth',
            self.worker_ttl + 60,
            utcformat(self.birth_date),
            self.queue_names(),
            fields,
        ):
            raise ValueError(f'There exists an active worker named {self.name!r} already')

    def register_death(self) -> None:
        scripts.register_worker(self.connection, self.name, 'death', 60, utcformat(now()), self.queue_names())

    def heartbeat(self) -> bool:
        """Refresh the worker hash and every job in flight; True when rq:suspended is set."""
        moment = now()
        self.last_heartbeat = moment
        in_flight = [(c.job_id or '', c.queue or '', c.execution_id) for c in self._in_flight.values()]
        busy = in_flight and self._job_started_monotonic is not None
        working = repr(time.monotonic() - self._job_started_monotonic) if busy else ''  # type: ignore[operator]
        ttl = self.worker_ttl + 60 if not in_flight else self.job_monitoring_interval + 60
        return scripts.heartbeat(
            self.connection,
            self.name,
            ttl,
            engine._times(moment),
            self.job_monitoring_interval + 60,
            working,
            in_flight,
        )

    def _heartbeat_loop(self) -> None:
        interval = max(1.0, min(self.job_monitoring_interval, self.worker_ttl / 2) / 2)
        while not self._heartbeat_stop.wait(interval):
            try:
                self.heartbeat()
            except Exception as exc:  # a lost connection must not kill the heartbeat thread
                self.log.warning('Worker %s: heartbeat failed: %s', self.name, exc)

    def _start_side_threads(self) -> None:
        self._heartbeat_thread = threading.Thread(target=self._heartbeat_loop, name='rqfast-heartbeat', daemon=True)
        self._heartbeat_thread.start()
        threading.Thread(target=self._maintenance_loop, name='rqfast-maintenance', daemon=True).start()
        self.subscribe()

    def subscribe(self) -> None:
        """Listen for RQ's pub/sub commands on a connection of its own, in a thread blocked in a read."""
        pool = self.connection.connection_pool
        if not hasattr(pool, 'connection_kwargs') or type(self.connection).__module__.startswith('fakeredis'):
            return  # fakeredis: no sockets to listen on
        kwargs = {**pool.connection_kwargs, 'retry': RedisRetry(NoBackoff(), 0)}
        client = Redis(connection_pool=pool.__class__(connection_class=pool.connection_class, **kwargs))
        self._pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        self._pubsub.subscribe(self.pubsub_channel_name)
        self._pubsub_thread = threading.Thread(
            target=self._listen, args=(self._pubsub,), name='rqfast-commands', daemon=True
        )
        self._pubsub_thread.start()

    def _listen(self, pubsub: Any) -> None:
        """Handle commands until unsubscribe(); a lost connection is retried with capped backoff."""
        # listen() reconnects and resubscribes; redis-py's own retries are off so that a close ends the thread
        backoff = Backoff()
        while self._pubsub is pubsub:
            try:
                for message in pubsub.listen():
                    backoff.reset()
                    if message.get('type') == 'message':
                        self.handle_payload(message)
                return
            except Exception as exc:  # closed at teardown, or the connection was lost
                if self._pubsub is not pubsub:
                    return
                delay = backoff.next()
                self.log.warning('Worker %s: lost the command channel: %s; retrying in %.0f s', self.name, exc, delay)
                time.sleep(delay)

    def unsubscribe(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                pubsub.close()
            except Exception:
                pass
        self._pubsub_thread = None

    def handle_payload(self, message: dict[str, Any]) -> None:
        """RQ's pub/sub commands: shutdown, kill-horse, stop-job."""
        try:
            payload = json.loads(as_text(message['data']))
        except (ValueError, KeyError):
            return
        command = payload.get('command')
        self.log.info('Worker %s: received command %s', self.name, command)
        if command == 'shutdown':
            os.kill(os.getpid(), signal.SIGINT)
        elif command == 'kill-horse':
            self.kill_horse()
        elif command == 'stop-job':
            job_id = payload.get('job_id')
            if job_id and job_id in self._in_flight:
                self.stop_job(job_id)

    def kill_horse(self, sig: int = signal.SIGKILL) -> None:
        """Only workers with a horse have one to kill."""

    def stop_job(self, job_id: str) -> None:
        """Only workers that run jobs in another process can stop one (as in RQ)."""

    # --- signals

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self.request_stop)
            signal.signal(signal.SIGTERM, self.request_stop)

    def request_stop(self, signum: int, frame: Any) -> None:
        """Warm shutdown: finish the job in hand, then stop. A second signal is a cold shutdown."""
        self.log.info('Worker %s: warm shut down requested', self.name)
        self._shutdown_requested_date = now()
        self._stop_requested = True
        signal.signal(signal.SIGINT, self.request_force_stop)
        signal.signal(signal.SIGTERM, self.request_force_stop)
        if self._in_flight:
            # not from the handler: the interrupted thread may hold the connection pool's lock
            threading.Thread(target=self._record_shutdown_request, name='rqfast-shutdown', daemon=True).start()
        elif self._interruptible:
            raise StopRequested()  # only out of a blocking wait: never between a claim and its record

    def _record_shutdown_request(self) -> None:
        try:
            self.connection.hset(self.key, 'shutdown_requested_date', utcformat(self._shutdown_requested_date or now()))
        except redis.RedisError as exc:
            self.log.warning('Worker %s: could not record the shutdown request: %s', self.name, exc)

    def request_force_stop(self, signum: int, frame: Any) -> None:
        if self._shutdown_requested_date and (now() - self._shutdown_requested_date).total_seconds() < 1:
            return
        self.log.warning('Worker %s: cold shut down', self.name)
        self.kill_horse()
        raise SystemExit()

    # --- the loop

    def bootstrap(
        self,
        logging_level: str | None = 'INFO',
        date_format: str = '%H:%M:%S',
        log_format: str = '%(asctime)s %(message)s',
    ) -> None:
        if logging_level and not logging.getLogger('rqfast').handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter(log_format, date_format))
            logging.getLogger('rqfast').addHandler(handler)
            logging.getLogger('rqfast').setLevel(logging_level)
        self.register_birth()
        self.log.info('Worker %s: started with PID %d, version %s', self.name, self.pid, self.version)
        self.log.info('*** Listening on %s...', ', '.join(self.queue_names()))
        self._start_side_threads()

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
        self._dequeue_strategy = DequeueStrategy(dequeue_strategy)
        self.bootstrap(logging_level, date_format, log_format)
        self._install_signal_handlers()
        if with_scheduler:
            self.start_scheduler(burst)
        completed = 0
        try:
            claim = self._wait_for_claim(burst, max_idle_time)
            while claim:
                completed += 1
                more = not self._stop_requested and (max_jobs is None or completed < max_jobs)
                claim = self._process_safely(claim, more)
                if not more:
                    break
                if not claim:
                    claim = self._wait_for_claim(burst, max_idle_time)
        except StopRequested:
            pass
        finally:
            self.teardown()
        return completed > 0

    def _process_safely(self, claim: engine.Claim, claim_next: bool) -> engine.Claim:
        """process_claim; an error the job did not cause (a script error) is logged with its id, and work goes on."""
        try:
            return self.process_claim(claim, claim_next=claim_next)
        except Exception:
            self.log.exception('Worker %s: could not finish job %s; maintenance will find it', self.name, claim.job_id)
            self._state = WorkerStatus.IDLE
            return engine.Claim()

    def _wait_for_claim(self, burst: bool, max_idle_time: int | None) -> engine.Claim | None:
        """Claim a job, blocking while the queues are empty (not in burst mode). None: time to stop."""
        idle_since = time.monotonic()
        backoff = Backoff()
        moved: tuple[str, str] | None = None
        while not self._stop_requested:
            try:
                claim = engine.claim_job(self._engine_connection(), self._ref(), moved)
                moved = None
                backoff.reset()
                self._log_dropped(claim)
                if claim:
                    self._after_claim(claim.queue or '')
                    return claim
                if claim.dropped and not claim.suspended:
                    continue  # a claim looks at 100 dropped ids at most: there may be more behind them
                if claim.suspended:
                    if burst:
                        self.log.info('Worker %s: suspended in burst mode, exiting', self.name)
                        return None
                    self._wait_while_suspended()
                    continue
                if burst:
                    self.log.info('Worker %s: done, quitting', self.name)
                    return None
                wait = IDLE_WAKEUP
                if max_idle_time is not None:
                    left = max_idle_time - (time.monotonic() - idle_since)
                    if left <= 0:
                        self.log.info('Worker %s: idle for %d seconds, quitting', self.name, max_idle_time)
                        return None
                    wait = max(1, min(wait, int(left + 0.999)))
                moved = self._interruptibly(self._waiter_for().wait, wait)
            except redis.ConnectionError as exc:
                delay = backoff.next()
                self.log.error('Worker %s: could not connect to Redis: %s; retrying in %.0f s', self.name, exc, delay)
                time.sleep(delay)
        return None

    def _waiter_for(self) -> Waiter:
        if self._waiter is None or self._waiter.queues != self._ordered_queues:
            if self._waiter is not None:
                self._waiter.close()
            self._waiter = Waiter(self.connection, list(self._ordered_queues))
        return self._waiter

    def _interruptibly(self, wait: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking wait that a stop request ends at once (StopRequested), as RQ's idle worker does."""
        self._interruptible = True
        try:
            if self._stop_requested:
                raise StopRequested()
            return wait(*args)
        finally:
            self._interruptible = False

    def _wait_while_suspended(self) -> None:
        self.log.info('Worker %s: suspended, run `rq resume` to resume', self.name)
        self.set_state(WorkerStatus.SUSPENDED)
        while not self._stop_requested and self.connection.exists(keys.SUSPENDED):
            self._interruptibly(time.sleep, 1)

    def _log_dropped(self, claim: engine.Claim) -> None:
        for job_id in claim.dropped:
            self.log.warning('Worker %s: dropped job id %s: it has no job hash', self.name, job_id)

    def process_claim(self, claim: engine.Claim, claim_next: bool = True) -> engine.Claim:
        """Execute a claimed job and finish it; the answer is the next claim (empty when none)."""
        job_id, queue = claim.job_id or '', claim.queue or ''
        self._in_flight[job_id] = claim
        self._state = WorkerStatus.BUSY
        self._job_started_monotonic = time.monotonic()
        job: Job | None = None
        try:
            job, outcome = self._load_job(claim)
            if outcome is None:
                self._log_start(job, queue)
                outcome = self.execute(job, claim)
        except Exception:  # a job must never take the worker down: it fails with what went wrong
            outcome = Outcome('failure', exc_string=traceback.format_exc())
            job = job or self._placeholder_job(job_id, queue)
        except (SystemExit, KeyboardInterrupt):
            outcome = Outcome('failure', exc_string=traceback.format_exc())
            job = job or self._placeholder_job(job_id, queue)
            self._finish(job, claim, outcome, claim_next=False)
            raise
        finally:
            self._job_started_monotonic = None
        # a warm shutdown requested while the job ran takes no next job
        next_claim = self._finish(job, claim, outcome, claim_next and not self._stop_requested)
        if next_claim:
            self._after_claim(next_claim.queue or '')
        self._log_dropped(next_claim)
        return next_claim

    def _finish(self, job: Job, claim: engine.Claim, outcome: Outcome, claim_next: bool) -> engine.Claim:
        job_id, queue = claim.job_id or '', claim.queue or ''
        stopped = self._stopped_job_id == job_id
        if stopped:
            self._stopped_job_id = None
        try:
            plan = self._plan(job, claim, outcome, stopped)
        except Exception as exc:  # a field that loaded but cannot be used, e.g. retry_intervals "abc"
            plan = engine.plan_failure(
                job,
                outcome.exc_string + self._unplannable(job, exc),
                self.name,
                claim.execution_id,
                claim.started_at,
                retry=False,
            )
        working = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
        try:
            next_claim = self._record(job_id, queue, claim.execution_id, plan, working, claim_next)
        finally:
            self._in_flight.pop(job_id, None)
        if outcome.kind == 'success':
            self.successful_job_count += 1
            self.log.info('%s: Job OK (%s)', queue, job_id)
        else:
            self.failed_job_count += 1
            if outcome.kind == 'failure':
                self.log.info('%s: Job failed (%s)', queue, job_id)
        self.total_working_time += working
        self._state = WorkerStatus.BUSY if next_claim else WorkerStatus.IDLE
        return next_claim

    def _record(
        self, job_id: str, queue: str, execution_id: str, plan: engine.Plan, working: float, claim_next: bool
    ) -> engine.Claim:
        """finish_job, retried with capped backoff while Redis is unreachable: an outcome is never dropped."""
        backoff = Backoff()
        while True:
            try:
                return engine.finish_job(
                    self._engine_connection(),
                    job_id,
                    queue,
                    execution_id,
                    plan,
                    working,
                    self._ref(),
                    claim_next=claim_next,
                )
            except redis.ConnectionError as exc:
                delay = backoff.next()
                self.log.error(
                    'Worker %s: could not record job %s: %s; retrying in %.0f s', self.name, job_id, exc, delay
                )
                time.sleep(delay)
                claim_next = False  # the next job is claimed by the loop once Redis is back

    def _plan(self, job: Job, claim: engine.Claim, outcome: Outcome, stopped: bool) -> engine.Plan:
        if outcome.kind == 'success':
            return engine.plan_success(
                job, outcome.value, self.name, claim.execution_id, claim.started_at, self.default_result_ttl
            )
        if outcome.kind == 'retry':
            return engine.plan_retry_result(job, outcome.value, self.name, claim.execution_id, claim.started_at)
        plan = engine.plan_failure(
            job,
            outcome.exc_string,
            self.name,
            claim.execution_id,
            claim.started_at,
            stopped=stopped,
            retry=outcome.kind != 'poison',
        )
        if outcome.kind == 'poison':
            plan.fields = {**outcome.value, **plan.fields}  # unreadable fields reset, so RQ's readers load it
        if self.disable_default_exception_handler and plan.registry == 'failed':
            plan.registry, plan.stream, plan.job_ttl = '', {}, ''
            plan.fields = {'status': plan.fields['status']}  # RQ only sets the status then
        return plan

    def _load_job(self, claim: engine.Claim) -> tuple[Job, Outcome | None]:
        """The claimed job, ready to run; or a stand-in and a 'poison' outcome naming the unreadable fields."""
        job = self.job_class(claim.job_id, connection=self.connection, serializer=self.serializer)
        try:
            job.restore(claim.raw)
        except Exception as exc:
            bad = unreadable_fields(job, claim.raw)
            named = ', '.join(f'{name}={value!r}' for name, (value, _) in bad.items())
            reason = (
                f'rqfast: job {claim.job_id} could not be loaded from its hash, so it was not run: '
                f'unreadable field(s) {named or "?"}: {type(exc).__name__}: {exc}\n'
            )
            resets = {name: reset for name, (_, reset) in bad.items()}
            return self._placeholder_job(claim.job_id or '', claim.queue or '', {**claim.raw, **resets}), Outcome(
                'poison', exc_string=reason, value=resets
            )
        job.set_local_status(JobStatus.STARTED)
        job.worker_name = self.name
        job.started_at = job.last_heartbeat = claim.started_at
        return job, None

    def _placeholder_job(self, job_id: str, queue: str, raw: dict[Any, Any] | None = None) -> Job:
        """A stand-in for a job that cannot be loaded (its TTLs are kept when the repaired hash loads)."""
        job = self.job_class(job_id, connection=self.connection, serializer=self.serializer)
        try:
            job.restore(raw or {})
        except Exception:
            pass
        job.origin = queue
        job.worker_name = self.name
        job.started_at = job.ended_at = job.last_heartbeat = now()
        job.retries_left = job.repeats_left = None
        return job

    def _unplannable(self, job: Job, exc: Exception) -> str:
        fields = ', '.join(
            f'{name}={getattr(job, name)!r}'
            for name in (
                'retries_left',
                'retry_intervals',
                'repeats_left',
                'repeat_intervals',
                'result_ttl',
                'failure_ttl',
            )
        )
        return (
            f'rqfast: the outcome of job {job.id} could not be recorded as its hash asks ({fields}), '
            f'so it failed: {type(exc).__name__}: {exc}\n'
        )

    def _log_start(self, job: Job, queue: str) -> None:
        if self.log_job_description:
            self.log.info('%s: %s (%s)', queue, job.description, job.id)
        else:
            self.log.info('%s: %s', queue, job.id)

    def execute(self, job: Job, claim: engine.Claim) -> Outcome:
        raise NotImplementedError

    def teardown(self) -> None:
        self._heartbeat_stop.set()
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

    # --- maintenance (a separate step; see rqfast/maintenance.py)

    def clean_registries(self) -> None:
        """Abandoned jobs, expired entries, stranded ids and dead workers of this worker's queues: one call."""
        from ..maintenance import clean_registries

        clean_registries(
            self.connection,
            self.queue_names(),
            serializer=self.serializer,
            exception_handlers=self._exc_handlers,
            job_class=self.job_class,
        )
        self.last_cleaned_at = now()

    def run_maintenance_tasks(self) -> None:
        try:
            self.clean_registries()
        except Exception as exc:  # maintenance must never take the worker down
            self.log.warning('Worker %s: maintenance failed: %s', self.name, exc)

    def _maintenance_loop(self) -> None:
        self.run_maintenance_tasks()  # at start, as RQ does, without delaying the worker's start
        while not self._heartbeat_stop.wait(max(1, self.maintenance_interval)):
            self.run_maintenance_tasks()

    # --- the scheduler (a separate step; see rqfast/scheduler.py)

    def start_scheduler(self, burst: bool = False) -> None:
        try:
            from ..scheduler import RQScheduler
        except ImportError:
            self.log.warning('Worker %s: the scheduler is not available yet', self.name)
            return
        self.scheduler = RQScheduler(self.queues, connection=self.connection)
        self.scheduler.start(burst=burst)

    def stop_scheduler(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None

    # --- reading workers back (RQ's Worker.all / find_by_key)

    @classmethod
    def all_keys(cls, connection: Redis, queue: Queue | None = None) -> list[str]:
        key = keys.workers_by_queue_key(queue.name) if queue else keys.WORKERS
        return [as_text(m) for m in connection.smembers(key)]

    @classmethod
    def count(cls, connection: Redis, queue: Queue | None = None) -> int:
        return len(cls.all_keys(connection, queue))

    @classmethod
    def all(
        cls,
        connection: Redis,
        job_class: Any = None,
        queue_class: Any = None,
        queue: Queue | None = None,
        serializer: Any = None,
    ) -> list[BaseWorker]:
        found = [cls.find_by_key(key, connection) for key in cls.all_keys(connection, queue)]
        return [worker for worker in found if worker is not None]

    @classmethod
    def find_by_key(cls, worker_key: str, connection: Redis, **kwargs: Any) -> BaseWorker | None:
        raw = connection.hgetall(worker_key)
        if not raw:
            connection.srem(keys.WORKERS, worker_key)
            return None
        fields = {as_text(k): as_text(v) for k, v in raw.items()}
        queues = [q for q in fields.get('queues', '').split(',') if q]
        worker = cls(queues or ['default'], name=worker_key[len(keys.WORKER_PREFIX) :], connection=connection)
        worker._state = WorkerStatus(fields.get('state', 'started'))
        worker.birth_date = utcparse(fields['birth']) if fields.get('birth') else None
        worker.last_heartbeat = utcparse(fields['last_heartbeat']) if fields.get('last_heartbeat') else None
        worker.pid = int(fields.get('pid') or 0)
        worker.hostname = fields.get('hostname', '')
        worker.successful_job_count = int(fields.get('successful_job_count') or 0)
        worker.failed_job_count = int(fields.get('failed_job_count') or 0)
        worker.total_working_time = float(fields.get('total_working_time') or 0)
        return worker

    def get_current_job_id(self) -> str | None:
        value = self.connection.hget(self.key, 'current_job')
        return as_text(value) if value else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BaseWorker) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.name!r})'
