"""`rqfast worker`: `rq worker`'s options and defaults, running an rqfast worker."""

from __future__ import annotations

import logging
import logging.config
import os
import sys
from dataclasses import dataclass
from typing import Any

import click
import redis

from ..defaults import DEFAULT_JOB_MONITORING_INTERVAL, DEFAULT_RESULT_TTL, DEFAULT_WORKER_TTL
from ..logutils import worker_console
from ..metrics import MetricsUnavailable, metrics_url, serve_worker
from ..suspension import is_suspended
from ..worker import BaseWorker, DequeueStrategy
from ..worker.base import DEFAULT_MAINTENANCE_TASK_INTERVAL
from . import classes
from .errors import CliError
from .settings import class_options, connect, prepend_paths, read_settings, redis_options

DEFAULT_LOG_FORMAT = '%(asctime)s %(message)s'
DEFAULT_DATE_FORMAT = '%H:%M:%S'
STRATEGIES = [strategy.value for strategy in DequeueStrategy]


@dataclass
class WorkerOptions:
    """The command line, by the names click gives the options."""

    queues: tuple[str, ...]
    url: str | None
    config: str | None
    path: tuple[str, ...]
    connection_class: str
    worker_class: str | None
    job_class: str | None
    queue_class: str | None
    serializer: str | None
    burst: bool
    name: str | None
    results_ttl: int
    worker_ttl: int
    job_monitoring_interval: int
    maintenance_interval: int
    max_jobs: int | None
    max_idle_time: int | None
    with_scheduler: bool
    dequeue_strategy: str
    logging_level: str | None
    log_format: str
    date_format: str
    verbose: bool
    quiet: bool
    pid: str | None
    exception_handler: tuple[str, ...]
    disable_default_exception_handler: bool
    disable_job_desc_logging: bool
    allow: tuple[str, ...]
    concurrency: int = 1
    metrics_port: int | None = None
    metrics_host: str = '127.0.0.1'


@click.command()
@click.argument('queues', nargs=-1)
@redis_options
@class_options
@click.option('--burst', '-b', is_flag=True, help='Quit when the queues are empty.')
@click.option('--name', '-n', help='Worker name (default: settings NAME, else a random one).')
@click.option('--results-ttl', type=int, default=DEFAULT_RESULT_TTL, show_default=True, help='Seconds to keep results.')
@click.option(
    '--worker-ttl', type=click.IntRange(min=1), default=DEFAULT_WORKER_TTL, show_default=True, help='Worker key TTL.'
)
@click.option(
    '--job-monitoring-interval',
    type=click.IntRange(min=1),
    default=DEFAULT_JOB_MONITORING_INTERVAL,
    show_default=True,
    help='Seconds between heartbeats of a running job.',
)
@click.option(
    '--maintenance-interval',
    type=click.IntRange(min=1),
    default=DEFAULT_MAINTENANCE_TASK_INTERVAL,
    show_default=True,
    help='Seconds between registry cleanups.',
)
@click.option('--max-jobs', type=click.IntRange(min=0), help='Quit after this many jobs.')
@click.option('--max-idle-time', type=click.IntRange(min=0), help='Quit after this many seconds without a job.')
@click.option('--with-scheduler', '-s', is_flag=True, help='Also run the scheduler.')
@click.option('--dequeue-strategy', '-ds', default='default', show_default=True, help=' | '.join(STRATEGIES))
@click.option('--logging-level', '--logging_level', '-l', 'logging_level', help='Log level (default INFO).')
@click.option('--log-format', default=DEFAULT_LOG_FORMAT, show_default=True, help='Log line format.')
@click.option('--date-format', default=DEFAULT_DATE_FORMAT, show_default=True, help='Log date format.')
@click.option('--verbose', '-v', is_flag=True, help='Log at DEBUG level.')
@click.option('--quiet', '-q', is_flag=True, help='Log at WARNING level.')
@click.option('--pid', help='Write the process id to this file.')
@click.option('--exception-handler', multiple=True, help='Dotted path of an exception handler (repeatable).')
@click.option(
    '--disable-default-exception-handler',
    '-d',
    is_flag=True,
    help='Do not move failed jobs to the failed job registry.',
)
@click.option('--disable-job-desc-logging', is_flag=True, help='Log job ids, not descriptions.')
@click.option(
    '--allow',
    multiple=True,
    help='Run only jobs whose function and callbacks are under this module prefix or exact name '
    '(repeatable; settings ALLOWED_FUNCTIONS). Jobs must be signed when SIGNING_KEY or $RQFAST_SIGNING_KEY is set.',
)
@click.option(
    '--concurrency',
    '-C',
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help='Jobs in flight at once in this worker (SimpleWorker: threads and one event loop; Worker: horses).',
)
@click.option(
    '--metrics-port',
    type=click.IntRange(min=0, max=65535),
    help='Serve Prometheus metrics at http://HOST:PORT/metrics (needs the metrics extra: prometheus_client).',
)
@click.option('--metrics-host', default='127.0.0.1', show_default=True, help='Address the metrics endpoint binds.')
def worker(**options: Any) -> None:
    """Start a worker on the given queues (default: settings QUEUES, else `default`)."""
    opts = WorkerOptions(**options)
    prepend_paths(opts.path)
    settings = read_settings(opts.config)
    instance, work_kwargs = build_worker(opts, settings)
    if opts.metrics_port is not None:
        url = serve_metrics(instance, opts.metrics_port, opts.metrics_host)
        worker_console(work_kwargs['logging_level'], opts.date_format, opts.log_format)
        instance.log.info('Worker %s: serving Prometheus metrics at %s', instance.name, url)
    if opts.pid:
        write_pid(opts.pid)
    run(instance, work_kwargs)


def build_worker(opts: WorkerOptions, settings: dict[str, Any]) -> tuple[BaseWorker, dict[str, Any]]:
    """Everything the command line names, checked before the worker starts: the worker and work()'s kwargs."""
    worker_class = classes.worker_class(opts.worker_class)
    try:
        worker_class.check_concurrency(opts.concurrency)
    except ValueError as exc:
        raise CliError(f'--concurrency: {exc}') from None
    job_class = classes.job_class(opts.job_class)
    queue_class = classes.queue_class(opts.queue_class)
    serializer = classes.serializer(opts.serializer)
    handlers = classes.exception_handlers(opts.exception_handler)
    work_kwargs = {
        'burst': opts.burst,
        'logging_level': logging_level(opts),
        'date_format': opts.date_format,
        'log_format': opts.log_format,
        'max_jobs': opts.max_jobs,
        'max_idle_time': opts.max_idle_time,
        'with_scheduler': opts.with_scheduler,
        'dequeue_strategy': dequeue_strategy(opts.dequeue_strategy),
    }
    connection = connect(opts.url, opts.config, settings, classes.connection_class(opts.connection_class))
    if is_suspended(connection):  # rq's words, naming the command this one was run as (rqfast, or rq's)
        program = 'rqfast' if 'rqfast' in (click.get_current_context().find_root().info_name or '') else 'rq'
        click.secho(f'RQ is currently suspended, to resume job execution run "{program} resume"', fg='red')
        sys.exit(1)
    if settings.get('DICT_CONFIG'):
        logging.config.dictConfig(settings['DICT_CONFIG'])
    queue_names = opts.queues or settings.get('QUEUES') or ['default']
    if isinstance(queue_names, str):  # QUEUES = 'default' in a settings module
        queue_names = [queue_names]
    queues = [
        queue_class(name, connection=connection, job_class=job_class, serializer=serializer) for name in queue_names
    ]
    extra: dict[str, Any] = {'concurrency': opts.concurrency} if opts.concurrency > 1 else {}
    instance = worker_class(
        queues,
        name=opts.name or settings.get('NAME'),
        connection=connection,
        serializer=serializer,
        job_class=job_class,
        queue_class=queue_class,
        exception_handlers=handlers or None,
        default_result_ttl=opts.results_ttl,
        worker_ttl=opts.worker_ttl,
        job_monitoring_interval=opts.job_monitoring_interval,
        maintenance_interval=opts.maintenance_interval,
        disable_default_exception_handler=opts.disable_default_exception_handler,
        log_job_description=not opts.disable_job_desc_logging,
        **job_security(opts, settings),
        **extra,
    )
    return instance, work_kwargs


def serve_metrics(instance: BaseWorker, port: int, host: str) -> str:
    """The worker's metrics endpoint, in a daemon thread (its URL); a missing extra or a port in use is one line."""
    try:
        server = serve_worker(instance, port, host)
        return metrics_url(host, server.server_address[1])
    except MetricsUnavailable as exc:
        raise CliError(f'--metrics-port: {exc}') from exc
    except OSError as exc:
        raise CliError(f'--metrics-port: cannot listen on {host}:{port}: {exc}') from exc


def job_security(opts: WorkerOptions, settings: dict[str, Any]) -> dict[str, Any]:
    """The worker's allow= and signing_key= from --allow, else settings ALLOWED_FUNCTIONS; settings SIGNING_KEY
    (else the worker reads $RQFAST_SIGNING_KEY itself)."""
    allow: Any = list(opts.allow) or settings.get('ALLOWED_FUNCTIONS')
    if isinstance(allow, str):
        allow = [allow]
    if allow is not None and not (isinstance(allow, list | tuple) and all(isinstance(a, str) and a for a in allow)):
        raise CliError(f'ALLOWED_FUNCTIONS: a list of dotted module prefixes or names, not {allow!r}')
    key = settings.get('SIGNING_KEY')
    if key is not None and not (isinstance(key, str | bytes) and key):
        raise CliError('SIGNING_KEY: a non-empty str or bytes')
    options = {'allow': allow, 'signing_key': key}
    return {name: value for name, value in options.items() if value is not None}  # a worker class may not take them


def logging_level(opts: WorkerOptions) -> str:
    """--verbose is DEBUG, --quiet WARNING, else --logging-level (INFO by default)."""
    if opts.verbose and opts.quiet:
        raise CliError('--verbose and --quiet are mutually exclusive')
    if opts.verbose:
        return 'DEBUG'
    if opts.quiet:
        return 'WARNING'
    level = (opts.logging_level or 'INFO').upper()
    if not isinstance(logging.getLevelName(level), int):
        raise CliError(f'--logging-level: unknown level {opts.logging_level!r}')
    return level


def dequeue_strategy(value: str) -> DequeueStrategy:
    if value not in STRATEGIES:
        raise CliError(f'--dequeue-strategy must be one of {", ".join(STRATEGIES)}, not {value!r}')
    return DequeueStrategy(value)


def write_pid(path: str) -> None:
    try:
        with open(os.path.expanduser(path), 'w') as file:
            file.write(str(os.getpid()))
    except OSError as exc:
        raise CliError(f'--pid: cannot write {path!r}: {exc}') from exc


def run(instance: BaseWorker, work_kwargs: dict[str, Any]) -> None:
    """Work until the worker stops; Redis going away, or a name already in use, is one line, not a traceback."""
    try:
        instance.work(**work_kwargs)
    except redis.RedisError as exc:
        raise CliError(f'Redis error: {exc}') from exc
    except ValueError as exc:  # register_birth: another live worker has this name
        raise CliError(str(exc)) from exc
    except KeyboardInterrupt:  # interrupted before the worker installed its signal handlers
        pass
