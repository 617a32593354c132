"""RQ's CliConfig and shared options: what every `rq` command but `worker` takes, read as `rq` reads it.

`rqfast info -w rq.Worker -j rq.job.Job -S rq.serializers.JSONSerializer` runs with rqfast's classes: RQ's
dotted names map to rqfast's (classes.rqfast_name), so a script written for `rq` changes only its command name.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import click
import redis

from ..defaults import (
    DEFAULT_CONNECTION_CLASS,
    DEFAULT_DEATH_PENALTY_CLASS,
    DEFAULT_JOB_CLASS,
    DEFAULT_QUEUE_CLASS,
    DEFAULT_SERIALIZER_CLASS,
    DEFAULT_WORKER_CLASS,
)
from ..exceptions import TimeoutFormatError
from ..job import Job
from ..queue import Queue
from ..serializers import Serializer, resolve_serializer
from ..worker import BaseWorker
from .classes import load, load_class, rqfast_name
from .errors import CliError
from .settings import client_from_url, cluster_option, describe, read_settings, redis_from_settings

F = TypeVar('F', bound=Callable[..., Any])


class CliConfig:
    """The shared options of one command: the classes it names, resolved, and a lazy Redis client."""

    def __init__(
        self,
        url: str | None = None,
        config: str | None = None,
        worker_class: str = DEFAULT_WORKER_CLASS,
        job_class: str = DEFAULT_JOB_CLASS,
        death_penalty_class: str = DEFAULT_DEATH_PENALTY_CLASS,
        queue_class: str = DEFAULT_QUEUE_CLASS,
        connection_class: str = DEFAULT_CONNECTION_CLASS,
        path: tuple[str, ...] | list[str] | None = None,
        serializer: str | None = DEFAULT_SERIALIZER_CLASS,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        self._connection: redis.Redis | None = None
        self.url = url
        self.config = config
        self.serializer_path = serializer
        for directory in reversed(path or ()):
            if directory not in sys.path:
                sys.path.insert(0, directory)
        # RQ's commands: the errors RQ's CLI gives (classes.load_class, rq_errors)
        self.worker_class = load_class(worker_class, '--worker-class', BaseWorker, rq_errors=True)
        self.job_class = load_class(job_class, '--job-class', Job, rq_errors=True)
        self.death_penalty_class = load(death_penalty_class, '--death-penalty-class', rq_errors=True)
        self.queue_class = load_class(queue_class, '--queue-class', Queue, rq_errors=True)
        self.connection_class = load_class(connection_class, '--connection-class', redis.Redis, rq_errors=True)

    @property
    def connection(self) -> redis.Redis:
        """A client for --url, else the --config module's settings, else the environment's (not yet connected)."""
        if self._connection is None:
            if self.url:
                self._connection = client_from_url(self.url, self.connection_class)
            else:
                settings = read_settings(self.config) if self.config else os.environ
                self._connection = redis_from_settings(settings, self.connection_class)
        return self._connection

    @property
    def serializer(self) -> Serializer:
        """The --serializer (json, pickle or a dotted path; RQ's paths map to rqfast's)."""
        return resolve_serializer(rqfast_name(self.serializer_path) if self.serializer_path else None)


shared_options = [
    cluster_option,
    click.option(
        '--url', '-u', envvar=['RQFAST_REDIS_URL', 'RQ_REDIS_URL'], help='URL describing Redis connection details.'
    ),
    click.option('--config', '-c', envvar=['RQFAST_CONFIG', 'RQ_CONFIG'], help='Module containing RQ settings.'),
    click.option(
        '--worker-class',
        '-w',
        envvar=['RQFAST_WORKER_CLASS', 'RQ_WORKER_CLASS'],
        default=DEFAULT_WORKER_CLASS,
        help='Worker class to use (rq.X names map to rqfast.X).',
    ),
    click.option(
        '--job-class',
        '-j',
        envvar=['RQFAST_JOB_CLASS', 'RQ_JOB_CLASS'],
        default=DEFAULT_JOB_CLASS,
        help='Job class to use.',
    ),
    click.option(
        '--queue-class',
        envvar=['RQFAST_QUEUE_CLASS', 'RQ_QUEUE_CLASS'],
        default=DEFAULT_QUEUE_CLASS,
        help='Queue class to use.',
    ),
    click.option(
        '--connection-class',
        envvar=['RQFAST_CONNECTION_CLASS', 'RQ_CONNECTION_CLASS'],
        default=DEFAULT_CONNECTION_CLASS,
        help='Redis client class to use.',
    ),
    click.option('--path', '-P', default=['.'], help='Specify the import path.', multiple=True),
    click.option(
        '--serializer',
        '-S',
        default=DEFAULT_SERIALIZER_CLASS,
        help='Serializer to use. Accepts json, pickle, or a dotted import path.',
    ),
]
SHARED_NAMES = ('url', 'config', 'worker_class', 'job_class', 'queue_class', 'connection_class', 'path', 'serializer')


def pass_cli_config(func: F) -> F:
    """Give a command the shared options and call it with a CliConfig first; what goes wrong is one line."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        shared = {name: kwargs.pop(name) for name in SHARED_NAMES}
        with one_line_errors() as config:
            config.append(CliConfig(**shared))
            return func(config[0], *args, **kwargs)

    for option in reversed(shared_options):
        wrapper = option(wrapper)
    return cast(F, wrapper)


@contextmanager
def one_line_errors() -> Iterator[list[CliConfig]]:
    """Bad input and an unreachable Redis end the command with exit status 1, as `rq`'s do, but as one
    `Error: ...` line rather than a traceback."""
    holder: list[CliConfig] = []
    try:
        yield holder
    except redis.ConnectionError as exc:
        where = describe(holder[0].connection) if holder else 'the configured server'
        raise CliError(f'cannot connect to Redis at {where}: {exc}') from exc
    except redis.RedisError as exc:
        raise CliError(f'Redis error: {exc}') from exc
    except (ValueError, ImportError, TimeoutFormatError, NotImplementedError) as exc:
        raise CliError(str(exc) or type(exc).__name__) from exc
