"""RQ 2.12's cron: CronJob (a function enqueued on an interval or a cron string), CronScheduler (the
process that enqueues them: `rqfast cron CONFIG`), the module-level `register` a config file calls,
and the job history. Same keys, fields and TTLs as RQ's (rqfast.keys).

Every enqueue of a due run is one call of lua/enqueue_cron_job.lua, which refuses a run another
scheduler (RQ's or rqfast's) already enqueued, judged from the cron job's history (see docs/scheduling.md, Cron):
several schedulers on one Redis then enqueue each run once, where RQ's would each enqueue it.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from . import keys
from .as_rq import logger_name
from .cron_enqueue import enqueue_cron_run
from .cron_record import SchedulerRecord, cron_job_arguments, cron_job_fields
from .cron_slots import next_run, previous_run
from .cronconfig import _job_data_registry, register_config
from .cronconfig import register as register  # rqfast.cron.register, what a config file calls
from .dates import now, utcparse
from .defaults import (
    CRON_FOLLOW_GRACE,
    CRON_OWN_RUNS_KEPT,
    CRON_RUN_TOLERANCE,
    DEFAULT_CRON_JOB_HISTORY_LIMIT,
    DEFAULT_CRON_JOB_HISTORY_TTL,
    DEFAULT_LOGGING_DATE_FORMAT,
    DEFAULT_LOGGING_FORMAT,
    DEFAULT_RESULT_TTL,
)
from .exceptions import StopRequested
from .logutils import setup_loghandlers
from .serializers import resolve_serializer
from .text import as_text
from .webhook import Webhook

if TYPE_CHECKING:
    from redis import Redis

    from .job import Job

logger = logging.getLogger(logger_name('cron'))


def get_cron_job_history_key(name: str) -> str:
    """The zset of the ids of the jobs the cron job(s) named `name` enqueued, scored by enqueued_at."""
    return keys.cron_job_history_key(name)


def get_cron_job_ids(name: str, connection: Redis, start: int = 0, end: int = -1) -> list[str]:
    """Ids of the jobs the cron job(s) named `name` enqueued, newest first (`start`/`end`: ZRANGE indexes)."""
    return [as_text(i) for i in connection.zrange(keys.cron_job_history_key(name), start, end, desc=True)]


class CronJob:
    """A function enqueued to `queue_name` every `interval` seconds or on a `cron` string. `name` (default:
    the function's dotted name) names its history; several cron jobs may share one."""

    def __init__(
        self,
        queue_name: str,
        func: Callable[..., Any] | None = None,
        func_name: str | None = None,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
        interval: int | None = None,
        cron: str | None = None,
        job_timeout: int | None = None,
        result_ttl: int = DEFAULT_RESULT_TTL,
        ttl: int | None = None,
        failure_ttl: int | None = None,
        meta: dict[str, Any] | None = None,
        webhooks: Sequence[Webhook] | None = None,
        name: str = '',
    ) -> None:
        if interval and cron:
            raise ValueError('Cannot specify both interval and cron parameters')
        if not interval and not cron:
            raise ValueError('Must specify either interval or cron parameter')
        if interval is not None and interval < 0:
            raise ValueError(f'interval must be a positive number of seconds, not {interval!r}')
        if webhooks and (not isinstance(webhooks, Sequence) or not all(isinstance(w, Webhook) for w in webhooks)):
            raise TypeError('webhooks must be a sequence of Webhook instances')
        if func:
            self.func: Callable[..., Any] | None = func
            self.func_name: str = f'{func.__module__}.{func.__name__}'
        elif func_name:
            self.func, self.func_name = None, func_name
        else:
            raise ValueError('Either func or func_name must be provided')
        self.name: str = name or self.func_name
        self.args: tuple[Any, ...] = args or ()
        self.kwargs: dict[str, Any] = kwargs or {}
        self.interval: int | None = interval
        self.cron: str | None = cron
        self.queue_name: str = queue_name
        self.latest_enqueue_time: datetime | None = None
        # A cron string's first run is its next slot (crontab's way); an interval job runs at once.
        self.next_enqueue_time: datetime | None = next_run(cron, now()) if cron else None
        options: dict[str, Any] = {
            'job_timeout': job_timeout,
            'result_ttl': result_ttl,
            'ttl': ttl,
            'failure_ttl': failure_ttl,
        }
        options.update(meta=meta, webhooks=list(webhooks) if webhooks else None)
        self.job_options: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
        # rqfast's own: how long past its due time to wait after following another scheduler's run
        self.follow_grace: float = 0.0

    @property
    def job_history_key(self) -> str:
        return keys.cron_job_history_key(self.name)

    def enqueue(self, connection: Redis) -> Job:
        """Enqueue a run now, whatever ran before, and record it in the history and the cron job registry
        (one script call)."""
        job, _ = self._enqueue(connection, None, ())
        assert job is not None  # without a window the script never refuses
        return job

    def enqueue_run(
        self, connection: Redis, due: datetime, own: Sequence[str] = ()
    ) -> tuple[Job | None, datetime | None]:
        """Enqueue the run due at `due` unless another scheduler enqueued it (`own`: the ids the caller
        enqueued itself, never taken for another's run): (the job, None), or (None, when the other
        scheduler enqueued it). One script call either way."""
        return self._enqueue(connection, self.run_window(due), own)

    def run_window(self, due: datetime) -> float:
        """The epoch from which a run of this cron job by another scheduler is the run due at `due`: for an
        interval, one interval before it (less a small tolerance once this job ran, so a run racing its
        previous one is not taken for this one); for a cron string, halfway from the previous slot."""
        due_at = due.timestamp()
        gap = self.slot_gap(due)
        if self.cron:
            return due_at - gap / 2
        tolerance = min(CRON_RUN_TOLERANCE, gap / 4) if self.latest_enqueue_time else 0.0
        return due_at - gap + tolerance

    def slot_gap(self, due: datetime) -> float:
        """Seconds between the run due at `due` and the one before it."""
        if self.cron:
            return due.timestamp() - previous_run(self.cron, due).timestamp()
        return float(self.interval or 0)

    def _enqueue(
        self, connection: Redis, window: float | None, own: Sequence[str]
    ) -> tuple[Job | None, datetime | None]:
        if not self.func:
            raise ValueError('CronJob has no function to enqueue. It may have been created for monitoring purposes.')
        job, refused_at = enqueue_cron_run(
            connection,
            self.queue_name,
            self.func,
            self.args,
            self.kwargs,
            self.job_options,
            name=self.name,
            window=window,
            own=own,
            history_limit=DEFAULT_CRON_JOB_HISTORY_LIMIT,
            history_ttl=DEFAULT_CRON_JOB_HISTORY_TTL,
        )
        if job is None:
            logger.debug(f'Cron job {self.name}: its run was enqueued by another scheduler already')
            return None, datetime.fromtimestamp(refused_at or 0, tz=timezone.utc)
        logger.info(f'Enqueued job {self.func.__name__} to queue {self.queue_name}')
        return job, None

    def get_job_ids(self, connection: Redis, start: int = 0, end: int = -1) -> list[str]:
        """Ids of the jobs this cron job's name enqueued, newest first."""
        return get_cron_job_ids(self.name, connection, start, end)

    def get_next_enqueue_time(self) -> datetime:
        if self.cron:
            return next_run(self.cron, self.latest_enqueue_time or now())
        if self.interval and self.latest_enqueue_time:
            return self.latest_enqueue_time + timedelta(seconds=self.interval)
        return datetime.max

    def should_run(self) -> bool:
        if not self.latest_enqueue_time and not self.cron:
            return True  # an interval job that never ran
        return bool(self.next_enqueue_time and now() >= self.next_enqueue_time)

    def set_enqueue_time(self, time: datetime) -> None:
        """Record a run at `time` and compute the next one."""
        self.latest_enqueue_time = time
        if self.interval is not None or self.cron is not None:
            self.next_enqueue_time = self.get_next_enqueue_time()

    def follow(self, other_run: datetime) -> None:
        """Another scheduler enqueued the run at `other_run`: take it as this job's latest, and wait a little
        past the next due time, so that scheduler (if still there) enqueues it first."""
        self.set_enqueue_time(other_run)
        if self.next_enqueue_time is not None:
            self.follow_grace = min(CRON_FOLLOW_GRACE, self.slot_gap(self.next_enqueue_time) / 4)

    def to_dict(self) -> dict[str, Any]:
        """RQ's monitoring form (what the scheduler hash's `cron_jobs` field holds)."""
        return cron_job_fields(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CronJob:
        """A CronJob for monitoring (no func: it cannot be enqueued) from to_dict's form."""
        job = cls(**cron_job_arguments(data))
        if data.get('latest_enqueue_time'):
            job.latest_enqueue_time = utcparse(data['latest_enqueue_time'])
        if data.get('next_enqueue_time'):
            job.next_enqueue_time = utcparse(data['next_enqueue_time'])
        return job


class CronScheduler(SchedulerRecord):
    """Enqueues its CronJobs when they are due; registered in `rq:cron_schedulers` with a heartbeat, its
    details in `rq:cron_scheduler:<name>`."""

    def __init__(self, connection: Redis, logging_level: str | int = logging.INFO, name: str = '') -> None:
        self.connection: Redis = connection
        self._cron_jobs: list[CronJob] = []
        self.hostname: str = socket.gethostname()
        self.pid: int = os.getpid()
        self.name: str = name or f'{self.hostname}:{self.pid}:{uuid.uuid4().hex[:6]}'
        self.config_file: str = ''
        self.created_at: datetime = now()
        self._stop_requested = self._sleeping = False  # see _request_stop
        self.serializer = resolve_serializer()
        # rqfast's own: per cron job name, the ids this scheduler enqueued lately (the others' runs are
        # the ones that are not)
        self._own_runs: dict[str, deque[str]] = {}
        self._followed = False  # whether the last enqueue_jobs() followed another scheduler's run
        self.log: logging.Logger = logger
        if not self.log.hasHandlers():
            setup_loghandlers(logging_level, DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT, name=logger.name)
            self.log.propagate = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def register(
        self,
        func: Callable[..., Any],
        queue_name: str,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
        interval: int | None = None,
        cron: str | None = None,
        job_timeout: int | None = None,
        result_ttl: int = DEFAULT_RESULT_TTL,
        ttl: int | None = None,
        failure_ttl: int | None = None,
        meta: dict[str, Any] | None = None,
        webhooks: Sequence[Webhook] | None = None,
        name: str = '',
    ) -> CronJob:
        """Add a cron job (every `interval` seconds, or on the `cron` string)."""
        cron_job = CronJob(
            queue_name, func, None, args, kwargs, interval, cron, job_timeout, result_ttl, ttl, failure_ttl, meta,
            webhooks, name,
        )  # fmt: skip
        self._cron_jobs.append(cron_job)
        path = f'{func.__module__}.{func.__name__}'
        if interval:
            self.log.info(f"Registered '{path}' to run on {queue_name} every {interval} seconds")
        else:
            self.log.info(f"Registered '{path}' to run on {queue_name} with cron schedule '{cron}'")
        return cron_job

    def get_jobs(self) -> list[CronJob]:
        return self._cron_jobs

    def enqueue_jobs(self) -> list[CronJob]:
        """Enqueue every cron job that is due (one script call each); the ones enqueued. A run another
        scheduler enqueued already is not enqueued again: the job takes that run as its latest."""
        enqueue_time = now()
        enqueued: list[CronJob] = []
        for job in self._cron_jobs:
            if not job.should_run() or not self._past_grace(job, enqueue_time):  # see _grace
                continue
            due = min(job.next_enqueue_time, enqueue_time) if job.next_enqueue_time else enqueue_time
            own = self._own_runs.setdefault(job.name, deque(maxlen=CRON_OWN_RUNS_KEPT))
            enqueued_job, other_run = job.enqueue_run(self.connection, due, own)
            if enqueued_job is not None:
                own.append(enqueued_job.id)
                job.follow_grace = 0.0
                job.set_enqueue_time(enqueue_time)
                enqueued.append(job)
            elif other_run is not None:
                job.follow(other_run)
                self._followed = True
        return enqueued

    def _grace(self, job: CronJob) -> float:
        """Seconds to wait past a job's due time: none while this scheduler is the only one; else (and
        after following another's run) a little, so that an rq scheduler with the same job, which checks
        nothing, enqueues the run first and this one then refuses it, rather than rq enqueueing it again."""
        if job.next_enqueue_time is None or not (job.follow_grace or self.schedulers_alive > 1):
            return 0.0
        return max(job.follow_grace, min(CRON_FOLLOW_GRACE, job.slot_gap(job.next_enqueue_time) / 4))

    def _past_grace(self, job: CronJob, moment: datetime) -> bool:
        grace = self._grace(job)
        return not grace or job.next_enqueue_time is None or moment >= job.next_enqueue_time + timedelta(seconds=grace)

    def calculate_sleep_interval(self) -> float:
        """Seconds until the next job is due: 0 when one is overdue, at most 60, 60 when none is timed."""
        current_time = now()
        due_times = [
            job.next_enqueue_time + timedelta(seconds=self._grace(job))
            for job in self._cron_jobs
            if job.next_enqueue_time
        ]
        if not due_times:
            return 60
        seconds = (min(due_times) - current_time).total_seconds()
        return 0 if seconds <= 0 else min(seconds, 60)

    def _install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self._request_stop)
        signal.signal(signal.SIGTERM, self._request_stop)

    def _request_stop(self, signum: int, frame: Any) -> None:
        """Stop after the step in hand. Raising only out of the sleep, never mid-step: an exception
        raised inside a Redis call or a lock's `with` could leave the connection pool locked, and the
        deregistration that follows would hang (RQ raises wherever the signal lands)."""
        self.log.info('CronScheduler %s: received shutdown signal %s', self.name, signum)
        self._stop_requested = True
        if self._sleeping:
            raise StopRequested()

    def start(self) -> None:
        """Run until SIGINT/SIGTERM (or Ctrl+C): enqueue what is due, save timings when they changed,
        heartbeat, sleep until the next due time; deregister on the way out, whatever ends the loop."""
        self.log.info('CronScheduler %s: starting...', self.name)
        self._install_signal_handlers()
        self.register_birth()
        self._stop_requested = self._sleeping = False
        try:
            while not self._stop_requested:
                self._followed = False
                if self.enqueue_jobs() or self._followed:
                    self.save()
                self.heartbeat()
                sleep_time = self.calculate_sleep_interval()
                if sleep_time > 0 and not self._stop_requested:
                    self.log.debug(f'Sleeping for {sleep_time} seconds...')
                    self._sleeping = True
                    try:
                        time.sleep(sleep_time)
                    finally:
                        self._sleeping = False
            self.log.info('CronScheduler %s: stop requested', self.name)
        except KeyboardInterrupt:
            self.log.info('CronScheduler %s: received KeyboardInterrupt', self.name)
        except StopRequested:
            self.log.info('CronScheduler %s: stop requested', self.name)
        finally:
            self.register_death()
            self.log.info('CronScheduler %s: shutdown complete', self.name)

    def load_config_from_file(self, config_path: str) -> None:
        """Import a cron config (a file path or a dotted module path) and register the jobs its
        `rqfast.cron.register(...)` (or `rq.cron.register`) calls declare; a job that fails to register is
        logged and skipped."""
        self.config_file = config_path
        self.log.info(f'Loading cron configuration from {config_path}')
        count = register_config(config_path, self.register, self.log)
        self.log.info(f"Successfully registered {count} cron jobs from '{config_path}'")

    def _job_from_dict(self, data: dict[str, Any]) -> CronJob:
        return CronJob.from_dict(data)


def create_cron(connection: Redis) -> CronScheduler:
    """A scheduler with every job declared so far (the declarations are taken: a second call gets none)."""
    scheduler = CronScheduler(connection=connection)
    declared = _job_data_registry[:]
    _job_data_registry.clear()
    for data in declared:
        scheduler.register(**data)
    return scheduler
