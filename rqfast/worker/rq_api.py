"""The rest of RQ's public Worker API (2.12's and 3.0's), for code that calls or overrides it.

rqfast's loop does most of this in its scripts (suspension is seen by the claim script, counters and
working time are written by finish_job, the executions index by the claim and finish scripts), so
it calls few of these; they do what RQ's do when called, and read what rqfast's scripts write.
RQ's commands (handle_payload, kill_horse, stop_job) and maintenance (run_maintenance_tasks,
clean_registries) are here as the worker's own methods, so a subclass overrides them as in RQ; the
command listener (commands.py) and the upkeep threads and scheduler (upkeep.Duties) do the work.
tests/test_worker_api.py compares the worker classes' public names with RQ's; the few left out
are listed there with the reason.
"""

from __future__ import annotations

import signal
import threading
import time
from datetime import datetime, timedelta
from typing import Any

import redis

from .. import keys
from ..command import handle_command, parse_payload
from ..dates import now, utcformat
from ..exceptions import StopRequested
from ..executions import Execution
from ..job import Job
from ..status import WorkerStatus
from ..suspension import is_suspended
from ..text import as_text
from .commands import CommandListener
from .declared import WorkerAttributes
from .order import QueueOrder
from .upkeep import Duties

try:  # as RQ: the process title shows what the worker does when setproctitle is installed
    from setproctitle import setproctitle as _set_title  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment

    def _set_title(title: str) -> None:
        pass


class RQWorkerAPI(WorkerAttributes):
    """RQ's worker methods and attributes beside the loop's (a BaseWorker mixin with no state of its own:
    the commands and maintenance methods hand their work to the listener and the Duties the worker holds)."""

    _queue_order: QueueOrder
    _listener: CommandListener | None  # while the worker works: subscribe(), unsubscribe()
    _duties: Duties

    exponential_backoff_factor = 2.0  # RQ's reconnect backoff (rqfast's: backoff.Backoff)
    max_connection_wait_time = 60.0
    log_job_description = True
    redis_server_version: tuple[int, ...] | None = None
    _executions_cache: list[Execution] | None = None

    # --- RQ's commands (the listener, a collaborator: commands.py)

    @property
    def pubsub_channel_name(self) -> str:
        return keys.pubsub_channel(self.name)

    @property
    def pubsub(self) -> Any:
        """The PubSub the command thread reads (None before subscribe(), and with fakeredis)."""
        return self._listener.pubsub if self._listener is not None else None

    @property
    def pubsub_thread(self) -> threading.Thread | None:
        """The thread that listens for commands."""
        return self._listener.thread if self._listener is not None else None

    def subscribe(self) -> None:
        """Listen for RQ's pub/sub commands on a connection of its own, in a thread blocked in a read."""
        channels = keys.pubsub_channels(self.name, self.pubsub_channel_name)
        self._listener = CommandListener(self.connection, channels, self.handle_payload, self.name)
        self._listener.start()

    def unsubscribe(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()

    def handle_payload(self, message: dict[str, Any]) -> None:
        """RQ's pub/sub commands: shutdown, kill-horse, stop-job (rqfast.command.handle_command)."""
        try:
            payload = parse_payload(message)
        except (ValueError, KeyError):
            return
        self.log.info('Worker %s: received command %s', self.name, payload.get('command'))
        handle_command(self, payload)  # type: ignore[arg-type]

    def is_working_on(self, job_id: str) -> bool:
        """Whether the job is one this worker runs now (a stop-job for another one is ignored): one it holds,
        or one its last call claimed whose reply the loop has not taken in yet (the job reads `started`
        already; the claim put it in RQ 3.0's index of the worker's executions)."""
        if job_id in self._recorder.in_flight:
            return True
        pattern = ''.join('\\' + c if c in '*?[]\\' else c for c in job_id) + ':*'
        try:
            return any(True for _ in self.connection.sscan_iter(self.executions_key, match=pattern, count=1000))
        except redis.RedisError:
            return False

    def kill_horse(self, sig: int = signal.SIGKILL) -> None:
        """Kill the running horses' process groups (the jobs' own children too): a forking or spawn
        worker's; a SimpleWorker has none."""
        self._runner.kill_all(sig)

    def stop_job(self, job_id: str) -> None:
        """Stop the job: its horse killed (a forking or spawn worker), or at concurrency > 1 ended by the
        loop, its thread left to run on; a SimpleWorker's one job at a time cannot be (as in RQ)."""
        loop = self._loop
        if loop is not None and not loop.closed:
            loop.stop_job(job_id)
        else:
            self._runner.stop(job_id)

    # --- RQ's maintenance and scheduler (their state and threads, a collaborator: upkeep.py's Duties)

    @property
    def scheduler(self) -> Any:
        return self._duties.scheduler

    @scheduler.setter
    def scheduler(self, scheduler: Any) -> None:
        self._duties.scheduler = scheduler

    @property
    def last_cleaned_at(self) -> datetime | None:
        return self._duties.last_cleaned_at

    @last_cleaned_at.setter
    def last_cleaned_at(self, moment: datetime | None) -> None:
        self._duties.last_cleaned_at = moment

    @property
    def should_run_maintenance_tasks(self) -> bool:
        """Not yet run, or last run more than maintenance_interval seconds ago (the thread's schedule)."""
        return self._duties.should_run(self.maintenance_interval)

    def run_maintenance_tasks(self) -> None:
        self._duties.restart_scheduler()
        try:
            self.clean_registries()
        except Exception as exc:  # maintenance must never take the worker down
            self.log.warning('Worker %s: maintenance failed: %s', self.name, exc)

    def clean_registries(self) -> None:
        """Abandoned jobs, expired entries, stranded ids, dead workers (this worker's queues) and groups: one call."""
        options = {'serializer': self.serializer, 'exception_handlers': self._exc_handlers, 'job_class': self.job_class}
        self._duties.clean(self.queue_names(), self.maintenance_interval, policy=self.job_policy, **options)

    def recover_abandoned_jobs(self) -> None:
        """The cheap pass between two maintenance passes: the abandoned jobs of this worker's queues."""
        options = {'serializer': self.serializer, 'exception_handlers': self._exc_handlers, 'job_class': self.job_class}
        self._duties.recover(self.queue_names(), **options)

    def clean_group_registries(self) -> None:
        """RQ 3.0's: clean the groups unless another worker did in this maintenance window."""
        self._duties.clean_groups(self.maintenance_interval)

    def start_scheduler(self, burst: bool = False) -> None:
        self._duties.start_scheduler(self.queues, burst)

    def stop_scheduler(self) -> None:
        self._duties.stop_scheduler()

    # --- RQ 3.0's executions

    @property
    def executions_key(self) -> str:
        """The set of this worker's running executions (`<job id>:<execution id>`), as the claim script keeps it."""
        return keys.worker_executions_key(self.name)

    @property
    def executions(self) -> dict[str, Execution]:
        """The executions this worker runs now, by id (RQ 3.0's `worker.executions`): those made by
        hand (prepare_execution, or assigned to `worker.execution`) and those of the jobs in flight.
        With no job in flight, the dict itself, which a caller may change as RQ's."""
        held = self._recorder.held
        running = [claim for claim in list(self._recorder.in_flight.values()) if claim.execution_id]
        if not running:
            return held
        merged = {
            claim.execution_id: Execution(claim.execution_id, claim.job_id or '', self.connection, self.name)
            for claim in running
        }
        merged.update(held)
        return merged

    @property
    def execution(self) -> Execution | None:
        """One of the worker's running executions, None when idle; a worker read back from Redis
        (Worker.all(), find_by_key) finds it in its executions index (RQ 3.0's)."""
        local = self._recorder.local_execution()
        if local is not None:
            return local
        current = self.get_current_executions()
        return current[0] if current else None

    @execution.setter
    def execution(self, execution: Execution | None) -> None:
        """An execution is added to `executions`; None clears the one there is (ValueError if several)."""
        held = self._recorder.held
        if execution is None:
            if len(held) > 1:
                raise ValueError(
                    'Cannot clear worker.execution when multiple executions are active, '
                    'remove the entry from worker.executions instead'
                )
            held.clear()
        else:
            held[execution.id] = execution

    @property
    def current_execution_count(self) -> int:
        """How many executions this worker's executions index holds."""
        return int(self.connection.scard(self.executions_key))

    def get_current_executions(self, refresh: bool = False) -> list[Execution]:
        """The worker's running executions, read from its executions index (members whose hash is
        gone are dropped from it); cached on the worker unless `refresh`."""
        if not refresh and self._executions_cache:
            return self._executions_cache
        members = sorted(as_text(member) for member in self.connection.smembers(self.executions_key))
        found = [Execution.from_composite_key(member, connection=self.connection) for member in members]
        with self.connection.pipeline() as pipeline:
            for execution in found:
                pipeline.hgetall(execution.key)
            hashes = pipeline.execute() if found else []
        active = []
        for execution, data in zip(found, hashes, strict=True):
            if not data:
                self.connection.srem(self.executions_key, execution.composite_key)
                continue
            execution.restore(data)
            active.append(execution)
        self._executions_cache = active
        return active

    def request_stop_execution(self, execution_id: str) -> None:
        """Stop one running execution (RQ 3.0's stop command, by execution)."""
        for claim in list(self._recorder.in_flight.values()):
            if claim.execution_id == execution_id and claim.job_id:
                self.stop_job(claim.job_id)
                return
        self.log.warning('Not running execution %s, command ignored.', execution_id)

    # --- the worker hash

    def serialize(self) -> dict[str, Any]:
        """The worker hash's fields that describe the worker (RQ 3.0's)."""
        return {
            'birth': utcformat(self.birth_date or now()),
            'last_heartbeat': utcformat(self.last_heartbeat or now()),
            'queues': ','.join(queue.name for queue in self.queues),
            'pid': self.pid,
            'hostname': self.hostname,
            'ip_address': self.ip_address,
            'version': self.version,
            'python_version': self.python_version,
        }

    def increment_failed_job_count(self, pipeline: Any = None) -> None:
        (pipeline if pipeline is not None else self.connection).hincrby(keys.worker_key(self.name), 'failed_job_count')

    def increment_successful_job_count(self, pipeline: Any = None) -> None:
        target = pipeline if pipeline is not None else self.connection
        target.hincrby(keys.worker_key(self.name), 'successful_job_count')

    def increment_total_working_time(self, job_execution_time: timedelta, pipeline: Any = None) -> None:
        target = pipeline if pipeline is not None else self.connection
        target.hincrbyfloat(keys.worker_key(self.name), 'total_working_time', job_execution_time.total_seconds())

    def set_current_job_working_time(self, current_job_working_time: float, pipeline: Any = None) -> None:
        target = pipeline if pipeline is not None else self.connection
        target.hset(keys.worker_key(self.name), 'current_job_working_time', current_job_working_time)

    def set_shutdown_requested_date(self) -> None:
        """Write when the worker was asked to stop (RQ's; rqfast's signal handler writes it itself)."""
        moment = self._shutdown_requested_date or now()
        self.connection.hset(keys.worker_key(self.name), 'shutdown_requested_date', utcformat(moment))

    # --- the loop's steps, by hand

    def check_for_suspension(self, burst: bool) -> None:
        """Wait while workers are suspended (`rqfast suspend`); in burst mode, stop (StopRequested)."""
        before: str | None = None
        while not self._stop_requested and is_suspended(self.connection, self):  # type: ignore[arg-type]
            if burst:
                self.log.info('Worker %s: suspended in burst mode, exiting', self.name)
                self.log.info('Worker %s: note: there could still be unfinished jobs on the queue', self.name)
                raise StopRequested()
            if before is None:
                self.log.info('Worker %s: suspended, run `rqfast resume` to resume', self.name)
                before = str(getattr(self._recorder.state, 'value', self._recorder.state))
                self.set_state(WorkerStatus.SUSPENDED)
            time.sleep(1)
        if before is not None and before in WorkerStatus._value2member_map_:
            self.set_state(before)

    def reorder_queues(self, reference_queue: Any) -> None:
        """After a job came from `reference_queue`: the next claim's queue order, by the dequeue strategy."""
        self._queue_order.claimed_from(getattr(reference_queue, 'name', reference_queue))

    def validate_queues(self) -> None:
        for queue in self.queues:
            if not isinstance(queue, self.queue_class):
                raise TypeError(f'{queue} is not of type {self.queue_class} or string types')

    def handle_execution_ended(self, job: Job, queue: Any, heartbeat_ttl: int) -> None:
        """The job's run ended: its end time, and a heartbeat that keeps it while it is recorded."""
        job.ended_at = now()
        job.heartbeat(now(), heartbeat_ttl)

    def get_redis_server_version(self) -> tuple[int, ...]:
        if not self.redis_server_version:
            version = str(self.connection.info('server')['redis_version'])
            self.redis_server_version = tuple(int(part) for part in version.split('.')[:3])
        return self.redis_server_version

    def procline(self, message: str) -> None:
        """The process title, as RQ sets it (with setproctitle installed)."""
        _set_title(f'{keys.worker_key(self.name)}: {message}')

    # --- horses

    @property
    def horse_pid(self) -> int:
        """A running horse's pid (a forking or spawn worker's; at concurrency 1 its only one), else 0."""
        return self._runner.horse_pid

    def setup_work_horse_signals(self) -> None:
        """RQ's horse signals: Ctrl+C ignored (the worker handles it), SIGTERM ends the horse.
        rqfast's horses set these up themselves (rqfast.horse.become_horse)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def wait_for_horse(self) -> tuple[int | None, int | None, Any]:
        """RQ's (pid, status, rusage) of the horse waited for: rqfast's worker never waits on a horse
        (its horses are the breeder's children, watched through their report pipe: watching.py)."""
        return None, None, None

    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
        """A horse died without reporting: the worker's work_horse_killed_handler, if it has one."""
        if self.work_horse_killed_handler is not None:
            try:
                self.work_horse_killed_handler(job, retpid, ret_val, rusage)
            except Exception:
                self.log.exception('Worker %s: work_horse_killed_handler failed', self.name)
