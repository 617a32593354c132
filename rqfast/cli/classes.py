"""Dotted paths from the command line to rqfast's classes; RQ's own names map to rqfast's.

`rq worker -w rq.SimpleWorker` becomes `rqfast worker -w rq.SimpleWorker` and runs
rqfast.SimpleWorker: a Procfile changes only its command name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
import redis

from ..imports import import_attribute
from ..job import Job
from ..queue import Queue
from ..serializers import Serializer, resolve_serializer
from ..worker import BaseWorker, SimpleWorker
from .errors import CliError

T = TypeVar('T')

FORKING_WORKER = 'rqfast.Worker'

RQ_NAMES = {
    'rq.Worker': FORKING_WORKER,
    'rq.worker.Worker': FORKING_WORKER,
    'rq.SimpleWorker': 'rqfast.worker.SimpleWorker',
    'rq.worker.SimpleWorker': 'rqfast.worker.SimpleWorker',
    'rq.SpawnWorker': 'rqfast.SpawnWorker',
    'rq.worker.SpawnWorker': 'rqfast.SpawnWorker',
    'rq.Queue': 'rqfast.Queue',
    'rq.queue.Queue': 'rqfast.Queue',
    'rq.Job': 'rqfast.job.Job',
    'rq.job.Job': 'rqfast.job.Job',
    'rq.serializers.DefaultSerializer': 'rqfast.serializers.DefaultSerializer',
    'rq.serializers.PickleSerializer': 'rqfast.serializers.PickleSerializer',
    'rq.serializers.JSONSerializer': 'rqfast.serializers.JSONSerializer',
}

# Until the forking worker ships, the default (and RQ's `rq.Worker`) runs jobs in process.
_FORKING_NAMES = {FORKING_WORKER, 'rqfast.worker.Worker'}


def rqfast_name(path: str) -> str:
    """The rqfast path for one of RQ's class names; any other path unchanged."""
    return RQ_NAMES.get(path, path)


def load(path: str, option: str) -> Any:
    """Import a dotted path given to `option`, or fail with one line saying why."""
    try:
        return import_attribute(rqfast_name(path))
    except Exception as exc:  # importing user code can raise anything; all of it is a usage error here
        raise CliError(f'{option}: cannot import {path!r}: {exc}') from exc


def load_class(path: str, option: str, base: type[T]) -> type[T]:
    found = load(path, option)
    if not (isinstance(found, type) and issubclass(found, base)):
        raise CliError(f'{option}: {path!r} is not a subclass of {base.__module__}.{base.__qualname__}')
    return found


def worker_class(path: str | None) -> type[BaseWorker]:
    """The --worker-class (default rqfast.Worker, or SimpleWorker while there is no forking worker)."""
    target = rqfast_name(path or FORKING_WORKER)
    if target in _FORKING_NAMES and not _exists(target):
        if path is not None:
            click.echo(f'rqfast: {path} is not available in this version; using rqfast.SimpleWorker', err=True)
        return SimpleWorker
    return load_class(path or FORKING_WORKER, '--worker-class', BaseWorker)


def _exists(path: str) -> bool:
    try:
        import_attribute(path)
    except (AttributeError, ValueError):
        return False
    return True


def job_class(path: str | None) -> type[Job]:
    return load_class(path, '--job-class', Job) if path else Job


def queue_class(path: str | None) -> type[Queue]:
    return load_class(path, '--queue-class', Queue) if path else Queue


def connection_class(path: str) -> type[redis.Redis]:
    return load_class(path, '--connection-class', redis.Redis)


def serializer(path: str | None) -> Serializer:
    """json, pickle, or a dotted path (RQ's serializer paths map to rqfast's)."""
    try:
        return resolve_serializer(rqfast_name(path) if path else None)
    except Exception as exc:  # a user's serializer module can raise anything on import
        raise CliError(f'--serializer: cannot use {path!r}: {exc}') from exc


def exception_handlers(paths: tuple[str, ...]) -> list[Callable[..., Any]]:
    handlers = [load(path, '--exception-handler') for path in paths]
    for path, handler in zip(paths, handlers, strict=True):
        if not callable(handler):
            raise CliError(f'--exception-handler: {path!r} is not callable')
    return handlers
