"""`rqfast enqueue`: `rq enqueue`'s options and argument syntax, one job enqueued (or scheduled) by rqfast."""

from __future__ import annotations

from typing import Any

import click

from ..defaults import rq2_compat
from ..joboptions import Retry
from ..jobspec import call_string as get_call_string
from ..status import JobStatus
from .arguments import parse_function_args, parse_schedule
from .config import CliConfig, pass_cli_config


@click.command()
@click.option('--queue', '-q', help='The name of the queue.', default='default')
@click.option(
    '--timeout', help='Specifies the maximum runtime of the job before it is interrupted and marked as failed.'
)
@click.option('--result-ttl', help='Specifies how long successful jobs and their results are kept.')
@click.option('--ttl', help='Specifies the maximum queued time of the job before it is discarded.')
@click.option('--failure-ttl', help='Specifies how long failed jobs are kept.')
@click.option('--description', help='Additional description of the job')
@click.option(
    '--depends-on', help='Specifies another job id that must complete before this job will be queued.', multiple=True
)
@click.option('--job-id', help='The id of this job')
@click.option('--at-front', is_flag=True, help='Will place the job at the front of the queue, instead of the end')
@click.option('--retry-max', help='Maximum amount of retries', default=0, type=int)
@click.option('--retry-interval', help='Interval between retries in seconds', multiple=True, type=int, default=[0])
@click.option('--schedule-in', help='Delay until the function is enqueued (e.g. 10s, 5m, 2d).')
@click.option(
    '--schedule-at',
    help='Schedule job to be enqueued at a certain time formatted in ISO 8601 without '
    'timezone (e.g. 2021-05-27T21:45:00).',
)
@click.option(
    '--priority',
    type=click.IntRange(0, 9),
    help="rqfast's own: the job's priority lane in its queue, 0 (runs first) to 9 (docs/features.md).",
)
@click.option('--quiet', is_flag=True, help='Only logs errors.')
@click.argument('function')
@click.argument('arguments', nargs=-1)
@pass_cli_config
def enqueue(
    cli_config: CliConfig,
    queue: str,
    timeout: str | None,
    result_ttl: str | None,
    ttl: str | None,
    failure_ttl: str | None,
    description: str | None,
    depends_on: tuple[str, ...],
    job_id: str | None,
    at_front: bool,
    retry_max: int,
    retry_interval: tuple[int, ...],
    schedule_in: str | None,
    schedule_at: str | None,
    priority: int | None,
    quiet: bool,
    function: str,
    arguments: tuple[str, ...],
) -> None:
    """Enqueues a job from the command line

    FUNCTION is a dotted path (it is imported by the worker, not here); each of ARGUMENTS is text, `:json`,
    `%python-literal`, `key=text`, `key:=json`, `key%=literal`, and any value may be `@file` to read it.
    """
    args, kwargs = parse_function_args(arguments)
    call = get_call_string(function, args, kwargs)
    schedule = parse_schedule(schedule_in, schedule_at)
    target = cli_config.queue_class(
        queue, serializer=cli_config.serializer, connection=cli_config.connection, job_class=cli_config.job_class
    )
    job_options: dict[str, Any] = {
        'timeout': timeout,
        'result_ttl': result_ttl,
        'ttl': ttl,
        'failure_ttl': failure_ttl,
        'description': description or call,
        'depends_on': list(depends_on) or None,
        'job_id': job_id,
        'retry': Retry(retry_max, list(retry_interval)) if retry_max > 0 else None,
    }
    if priority is not None:  # (only then: a queue class of RQ's own takes no such option)
        job_options['priority'] = priority
    if schedule is None:
        job = target.enqueue_call(function, args, kwargs, at_front=at_front, **job_options)
    else:
        job = target.create_job(function, args, kwargs, status=JobStatus.SCHEDULED, **job_options)
        if at_front and not rq2_compat():  # RQ 3.0: at the front of the queue when it is due (2.12 ignored it)
            job.enqueue_at_front = True
        target.schedule_job(job, schedule)
    if not quiet:
        click.echo(f"Enqueued {click.style(call, fg='blue')} with job-id '{job.id}'.")
