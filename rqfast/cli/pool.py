"""`rqfast worker-pool`: `rq worker-pool`'s options, running N rqfast workers (rqfast.worker_pool)."""

from __future__ import annotations

import logging
import logging.config
from typing import Any

import click

from ..as_rq import logger_name
from ..defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from ..logutils import setup_loghandlers
from ..worker_pool import WorkerPool
from . import classes
from .errors import CliError
from .settings import class_options, connect, prepend_paths, read_settings, redis_options


@click.command('worker-pool')
@click.argument('queues', nargs=-1)
@redis_options
@click.option('--num-workers', '-n', type=int, default=1, show_default=True, help='Number of workers to start.')
@class_options
@click.option('--burst', '-b', is_flag=True, help='Quit when the queues are empty (no worker is restarted).')
@click.option('--logging-level', '-l', default='INFO', show_default=True, help='Log level.')
@click.option('--exception-handler', multiple=True, help='Dotted path of an exception handler (repeatable).')
@click.option('--verbose', '-v', is_flag=True, help='Log at DEBUG level.')
@click.option('--quiet', '-q', is_flag=True, help='Log at WARNING level.')
@click.option('--log-format', default=DEFAULT_LOGGING_FORMAT, show_default=True, help='Log line format.')
@click.option('--date-format', default=DEFAULT_LOGGING_DATE_FORMAT, show_default=True, help='Log date format.')
def worker_pool(**options: Any) -> None:
    """Start N workers on the given queues (default: settings QUEUES, else `default`), restarting dead ones."""
    prepend_paths(options['path'])
    settings = read_settings(options['config'])
    if options['verbose'] and options['quiet']:
        raise CliError('--verbose and --quiet are mutually exclusive')
    level = 'DEBUG' if options['verbose'] else 'WARNING' if options['quiet'] else options['logging_level'].upper()
    if not isinstance(logging.getLevelName(level), int):
        raise CliError(f'--logging-level: unknown level {options["logging_level"]!r}')
    if options['num_workers'] < 1:
        raise CliError(f'--num-workers must be at least 1, not {options["num_workers"]}')
    worker_class = classes.worker_class(options['worker_class'])
    job_class = classes.job_class(options['job_class'])
    queue_class = classes.queue_class(options['queue_class'])
    serializer = classes.serializer(options['serializer'])
    handlers = classes.exception_handlers(options['exception_handler'])
    connection = connect(
        options['url'], options['config'], settings, classes.connection_class(options['connection_class'])
    )
    queue_names = options['queues'] or settings.get('QUEUES') or ['default']
    if isinstance(queue_names, str):  # QUEUES = 'default' in a settings module
        queue_names = [queue_names]
    if settings.get('DICT_CONFIG'):
        logging.config.dictConfig(settings['DICT_CONFIG'])
    # the workers are forked from this process: they log through these handlers
    setup_loghandlers(level, date_format=options['date_format'], log_format=options['log_format'], name=logger_name())
    pool = WorkerPool(
        queue_names,
        connection=connection,
        num_workers=options['num_workers'],
        worker_class=worker_class,
        job_class=job_class,
        queue_class=queue_class,
        serializer=serializer,
        exception_handlers=handlers or None,
    )
    pool.start(burst=options['burst'], logging_level=level)
