"""The work horse's side: wait for one job, run it in this process, and tell the worker how it ended.
A horse (forked by the Worker's breeder, or a SpawnWorker child, see spawn_main) gets ready before its job
exists, reads the job from a pipe (serve_one_job), runs it and writes back a Report. The worker does all
the Redis bookkeeping, so a horse makes no round trip unless the job itself uses Redis; only a horse whose
worker died while it ran (its report pipe is broken) records its own outcome, with one finish_job call
fenced on the execution it was given (record_orphaned). Imports: only what running a job needs, so a
spawned child stays small. Pipe messages: length-prefixed pickles.
"""

from __future__ import annotations

import _thread  # (not threading: a spawned child whose job starts no thread never imports it)
import functools
import importlib
import os
import pickle
import signal
import sys
from collections.abc import Sequence
from datetime import datetime
from types import FrameType
from typing import TYPE_CHECKING, Any

from . import jobrun, keys, tracing
from .as_rq import lazy_logger
from .dates import now
from .exceptions import ShutDownImminentException
from .execution import ExceptionHandler, fail_job, flush_run_observers, run_job, unobserved
from .jobhash import UNSERIALIZABLE_RETURN_VALUE_PAYLOAD
from .orphaned import record_orphaned, worker_recorded
from .outcome import Outcome, OutcomeKind
from .pipes import read_message, write_message
from .status import JobStatus
from .text import traceback_module

if TYPE_CHECKING:
    from redis import Redis


def _logger() -> Any:
    return lazy_logger('worker')


_BUILD_LOCK = _thread.allocate_lock()


class Report:
    """What a horse sends back: the Outcome, with the return value already serialized, and its times.
    A plain class (a dataclass's generated methods would cost every spawned child's import)."""

    def __init__(
        self,
        kind: str,  # 'success', 'retry' or 'failure'
        value: Any = None,  # success: the serializer's bytes (None for None); retry: the Retry
        exc_string: str = '',
        started_at: datetime | None = None,
        ended_at: datetime | None = None,
        last_heartbeat: datetime | None = None,
        module: str = '',  # where the job's function lives: the next horse may import it while it waits
        func_name: str = '',  # the job's function, for the worker's log (the worker never deserializes the call)
        output: str | None = None,  # what the job printed (capture_output=True), else None
    ) -> None:
        self.kind, self.value, self.exc_string = kind, value, exc_string
        self.started_at, self.ended_at, self.last_heartbeat = started_at, ended_at, last_heartbeat
        self.module, self.func_name, self.output = module, func_name, output


# --- reports (the pipes' framing is in pipes.py)


def encode_report(report: Report) -> bytes:
    fields = (
        report.kind,
        report.value,
        report.exc_string,
        report.started_at,
        report.ended_at,
        report.last_heartbeat,
        report.module,
        report.func_name,
        report.output,
    )
    try:
        return pickle.dumps(fields, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a Retry subclass that does not pickle
        failure = ('failure', None, report.exc_string or traceback_module().format_exc(), *fields[3:])
        return pickle.dumps(failure, protocol=pickle.HIGHEST_PROTOCOL)


def decode_report(data: bytes) -> Report:
    return Report(*pickle.loads(data))


# --- the job's connection in the horse: a client of its own, built from the worker's connection
# settings when the job first uses it. Not the worker's client: in a forked horse, that pool would
# reset itself on the pid change, but under a lock one of the worker's threads may have held at the
# fork. Most jobs never touch Redis: their horse builds no pool, and a spawned child never imports
# redis-py at all.


class LazyClient:
    """The job's connection until first used; then it turns into the real client, class and all.

    Any attribute it lacks (a command, `connection_pool`...) or an isinstance() check builds it.
    """

    def __init__(self, recipe: tuple[Any, ...] | bytes) -> None:
        self.__dict__['_recipe'] = recipe

    def _become_client(self) -> None:
        with _BUILD_LOCK:  # two threads of a job may reach for it at once
            recipe = self.__dict__.pop('_recipe', None)
            if recipe is not None:
                from .connections import build_client  # here: a child whose job never uses Redis does not import it

                build_client(recipe, self)

    def __getattr__(self, name: str) -> Any:  # only for attributes the instance lacks
        self._become_client()
        if type(self) is LazyClient:  # building it failed
            raise AttributeError(name)
        return getattr(self, name)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(connection, Redis) is true: it becomes one
        self._become_client()
        return type(self)


# --- running the job


def serialize_return_value(serializer: Any, value: Any) -> bytes:
    try:
        data: bytes = serializer.dumps(value)
    except Exception:
        data = serializer.dumps(UNSERIALIZABLE_RETURN_VALUE_PAYLOAD)
    return data


def run_in_horse(
    job: Any, death_penalty_class: Any, handlers: Sequence[ExceptionHandler], default_timeout: int
) -> Report:
    """Run the job (its timeout, callbacks and exception handlers included) and say how it ended."""
    try:
        outcome = run_job(job, death_penalty_class, handlers, default_timeout=default_timeout)
    except BaseException:  # SystemExit or KeyboardInterrupt from the job: a failure, as in RQ's horse
        outcome = fail_job(job, sys.exc_info(), death_penalty_class, handlers)
    return report_of(job, outcome)


def report_of(job: Any, outcome: Outcome) -> Report:
    """The report of how the job ran, its return value serialized with the job's serializer."""
    value = outcome.value
    if outcome.kind is OutcomeKind.SUCCESS and value is not None:
        value = serialize_return_value(job.serializer, value)
    module, func_name = _function_of(job)
    times = (job.started_at, job.ended_at, job.last_heartbeat)
    return Report(outcome.kind.value, value, outcome.exc_string, *times, module, func_name, outcome.output)


def _function_of(job: Any) -> tuple[str, str]:
    """The module the job's function comes from, and its name (without importing anything again)."""
    try:
        func_name = str(job.func_name or '')
        if job.instance is not None:
            return type(job.instance).__module__, func_name
        return func_name.rpartition('.')[0], func_name
    except Exception:
        return '', ''


def preload(module: str) -> None:
    """Import the modules (comma-separated) named for this horse before it knows its job: the previous job's,
    a spawn worker's own class (SpawnWorker._preload); failures are the job's."""
    for name in module.split(','):
        if name:
            try:
                importlib.import_module(name)
            except BaseException:
                pass


def become_horse(worker_name: str) -> None:
    """Signals and environment of a horse, as RQ sets them: Ctrl+C is the worker's to handle.

    A horse forked by the breeder has them already (each change costs it copy-on-write faults).
    """
    for signum, handler in ((signal.SIGINT, signal.SIG_IGN), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(signum) != handler:
            signal.signal(signum, handler)
    if os.environ.get('RQ_WORKER_ID') != worker_name:
        os.environ['RQ_WORKER_ID'] = worker_name


class ImminentShutdown:
    """Heroku's warning (RQ's HerokuWorker): SIGTERM and SIGINT are ignored, and the first SIGRTMIN
    raises ShutDownImminentException in the job `delay` seconds later (a second SIGRTMIN: at once)."""

    frame_properties = ('f_code', 'f_lasti', 'f_lineno', 'f_locals', 'f_trace')

    def __init__(self, delay: int) -> None:
        self.delay = delay

    def install(self) -> None:
        signal.signal(signal.SIGRTMIN, self.warn)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def warn(self, signum: int, frame: FrameType | None) -> None:
        if self.delay == 0:
            _logger().warning('Imminent shutdown, raising ShutDownImminentException immediately')
            self.shut_down(signum, frame)
        _logger().warning('Imminent shutdown, raising ShutDownImminentException in %d seconds', self.delay)
        signal.signal(signal.SIGRTMIN, self.shut_down)
        signal.signal(signal.SIGALRM, self.shut_down)
        signal.alarm(self.delay)

    def shut_down(self, signum: int, frame: FrameType | None) -> None:
        info = {name: getattr(frame, name, None) for name in self.frame_properties}
        _logger().warning('raising ShutDownImminentException to cancel job...')
        raise ShutDownImminentException(f'shut down imminent (signal: {signal.Signals(signum).name})', info)


def flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


# --- a horse waiting for its job


class HorseSettings:
    """What a horse needs from its worker; a spawned child gets it pickled when it starts.

    A plain class, not a dataclass: the dataclasses module (and the inspect it imports) would cost
    every spawned child's import.
    """

    def __init__(
        self,
        worker_name: str,
        client: tuple[Any, ...] | bytes | None,  # connections.client_recipe(); None: the job uses the worker's client
        job_class: Any,
        serializer: Any,
        death_penalty_class: Any,
        exception_handlers: list[Any],
        default_timeout: int,
        stand_in: dict[bytes, bytes] | None = None,  # a forked horse's warm-up job (stand_in_job())
        imminent_shutdown_delay: int | None = None,  # HerokuWorker: SIGRTMIN ends the job this many seconds later
        perform: Any = None,  # perform(job, execution_id) runs the job instead: a worker subclass's perform_job
        worker_pid: int = 0,  # the worker's (0: a horse does not stand by after its report, see _worker_recorded)
        default_result_ttl: int | None = None,  # the worker's, for an orphaned horse's own record (None: RQ's default)
        disable_default_exception_handler: bool = False,  # likewise
        policy: Any = None,  # the worker's rqfast.security.JobPolicy, if it has one
    ) -> None:
        self.worker_name, self.client, self.job_class, self.serializer = worker_name, client, job_class, serializer
        self.death_penalty_class, self.exception_handlers = death_penalty_class, exception_handlers
        self.default_timeout, self.stand_in, self.imminent_shutdown_delay = (
            default_timeout,
            stand_in,
            imminent_shutdown_delay,
        )
        self.perform, self.worker_pid, self.default_result_ttl = perform, worker_pid, default_result_ttl
        self.disable_default_exception_handler, self.policy = disable_default_exception_handler, policy

    def replace(self, **changes: Any) -> HorseSettings:
        """A copy with `changes` (dataclasses.replace's)."""
        copy = object.__new__(HorseSettings)
        vars(copy).update(vars(self), **changes)
        return copy


def serve_one_job(
    job_fd: int, report_fd: int, settings: HorseSettings, module: str = '', fallback: Redis | None = None
) -> None:
    """Get ready (signals, a client that connects on first use, `module` imported), wait for a job, run it, report.

    Returns when the report is written, or at once if the job pipe closes first (the worker stopped).
    `fallback`: the client when the worker's cannot be rebuilt (a forked horse has the worker's own).
    """
    become_horse(settings.worker_name)
    if settings.imminent_shutdown_delay is not None:
        ImminentShutdown(settings.imminent_shutdown_delay).install()
    preload(module)
    connection: Any = LazyClient(settings.client) if settings.client is not None else fallback
    if connection is None:
        raise RuntimeError("rqfast: the worker's Redis connection cannot be rebuilt in a spawned child")
    if settings.stand_in is not None:
        warm_up(settings, connection)
    payload = read_message(job_fd)
    if payload is None:
        return
    job_id, raw, started_at, *claimed = pickle.loads(payload)
    queue, execution_id = claimed if claimed else ('', '')
    os.environ['RQ_JOB_ID'] = job_id
    keys.settle(queue)  # (sharded by queue: the job's keyspace is the horse's, whichever its worker's first is)
    job = _vetted_job(settings, connection, job_id, raw, started_at, report_fd)
    if job is None:  # refused, or it failed as it loaded: reported
        return
    if settings.perform is not None:
        outcome = settings.perform(job, execution_id)
    else:
        outcome = _run_outcome(job, settings)
    report = report_of(job, outcome)
    flush_stdio()
    try:
        write_message(report_fd, encode_report(report))
        orphaned = bool(settings.worker_pid) and not worker_recorded(job_fd)
    except BrokenPipeError:  # the worker is gone (killed, out of memory): the outcome is not thrown away
        orphaned = True
    if orphaned and execution_id:
        run = (settings.worker_name, settings.default_result_ttl, settings.disable_default_exception_handler)
        record_orphaned(connection, job, outcome, queue, execution_id, started_at, *run)
    if tracing.active():  # the horse ends with os._exit: its job's span is exported now
        tracing.flush()
    flush_run_observers()  # and what the run observers hold (rqfast.contrib.sentry's events)


def _vetted_job(
    settings: HorseSettings, connection: Any, job_id: str, raw: Any, started_at: Any, report_fd: int
) -> Any | None:
    """The job, loaded; None when the policy refused it or it failed to load (its report is then written)."""
    if not raw:  # a job handed to the worker rather than claimed (execute_job(job, queue) by hand): read here
        raw = connection.hgetall(settings.job_class.key_for(job_id))
    refused = settings.policy.vet(job_id, raw, settings.serializer) if settings.policy is not None else None
    if refused:  # judged before anything in the job is deserialized or imported
        _report_at_once(report_fd, OutcomeKind.POISON.value, refused, started_at)
        return None
    try:
        return _load_job(settings, connection, job_id, raw, started_at, settings.policy)
    except Exception:  # (a job class that raises as it loads): it fails, and is logged, as a job that raised
        _report_at_once(report_fd, OutcomeKind.FAILURE.value, traceback_module().format_exc(), started_at)
        return None


def _report_at_once(report_fd: int, kind: str, text: str, started_at: datetime) -> None:
    write_message(report_fd, encode_report(Report(kind, None, text, started_at, (moment := now()), moment)))


def _run_outcome(job: Any, settings: HorseSettings) -> Outcome:
    try:
        return run_job(job, settings.death_penalty_class, settings.exception_handlers, settings.default_timeout)
    except BaseException:  # SystemExit or KeyboardInterrupt from the job: a failure, as in RQ's horse
        return fail_job(job, sys.exc_info(), settings.death_penalty_class, settings.exception_handlers)


def _load_job(
    settings: HorseSettings,
    connection: Any,
    job_id: str,
    raw: dict[bytes, bytes],
    started_at: datetime,
    policy: Any = None,
) -> Any:
    job = settings.job_class(job_id, connection=connection, serializer=settings.serializer)
    if policy is not None:
        policy.arm(job, raw)  # before restore: meta is unpickled there
    job.restore(raw)
    job.set_local_status(JobStatus.STARTED)
    job.worker_name = settings.worker_name
    job.started_at = job.last_heartbeat = started_at
    return job


def warm_up(settings: HorseSettings, connection: Any) -> None:
    """Run the job machinery once on the stand-in job before the real one comes.

    A forked horse copies each page of the breeder's memory the first time it writes to it; that is
    most of what a short job costs in a horse. Paid here, while the horse waits (on another core if
    there is one), it is not paid between the job's claim and its result. Never fails the horse.
    """
    try:
        job = _load_job(settings, connection, 'rqfast-warm-up', settings.stand_in or {}, now())
        # not a job anyone enqueued: no span, nothing for run observers (Sentry) nor for a patch of Job.perform
        # (opentelemetry-instrumentation-rq's): the job class's own perform, unpatched, for this one object
        job.perform = functools.partial(jobrun.perform, job)
        with tracing.paused(), unobserved():
            encode_report(run_in_horse(job, settings.death_penalty_class, (), settings.default_timeout))
    except Exception:
        pass


def spawn_main(job_fd: int, report_fd: int, module: str = '') -> None:
    """A SpawnWorker child: read the worker's settings (importing what they name), then serve one job."""
    code = 1
    try:
        payload = read_message(job_fd)
        if payload is not None:
            settings = pickle.loads(payload)
            serve_one_job(job_fd, report_fd, settings, module)
        code = 0
    except BaseException:
        traceback_module().print_exc()
    finally:
        flush_stdio()
        os._exit(code)
