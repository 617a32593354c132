"""Dotted paths from the command line to rqfast's classes, the CLI's one loader; RQ's own names map to rqfast's.

`rq worker -w rq.SimpleWorker` becomes `rqfast worker -w rq.SimpleWorker` and runs
rqfast.SimpleWorker: a Procfile changes only its command name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
import redis

from ..defaults import DEFAULT_WORKER_CLASS
from ..imports import import_attribute
from ..job import Job
from ..queue import Queue
from ..serializers import Serializer, resolve_serializer
from ..worker import BaseWorker
from .errors import CliError

T = TypeVar('T')

# RQ names whose rqfast home differs from `rqfast.` + the rest (every other `rq.X` path maps that way)
RQ_NAMES = {
    'rq.Job': 'rqfast.job.Job',
}


def rqfast_name(path: str) -> str:
    """The rqfast path for one of RQ's names (`rq.worker.HerokuWorker` -> `rqfast.worker.HerokuWorker`);
    any other path unchanged."""
    if path in RQ_NAMES:
        return RQ_NAMES[path]
    return 'rqfast.' + path[len('rq.') :] if path.startswith('rq.') else path


def load(path: str, option: str, rq_errors: bool = False) -> Any:
    """Import a dotted path given to `option`, or fail with one line saying why. With `rq_errors` (the
    commands RQ's CLI has, through CliConfig) the import's own error propagates, as RQ's does."""
    if rq_errors:
        return import_attribute(rqfast_name(path))
    try:
        return import_attribute(rqfast_name(path))
    except Exception as exc:  # importing user code can raise anything; all of it is a usage error here
        raise CliError(f'{option}: cannot import {path!r}: {exc}') from exc


def load_class(path: str, option: str, base: type[T], rq_errors: bool = False) -> type[T]:
    """The class at an RQ or rqfast dotted path, a subclass of `base`: the CLI's one class loader. A class
    of the wrong kind is a one-line error (CliError), or with `rq_errors` click's usage error (exit 2), as
    RQ's CLI answers it."""
    found = load(path, option, rq_errors)
    if not (isinstance(found, type) and issubclass(found, base)):
        if rq_errors:
            raise click.BadParameter(f'{path} is not a subclass of {base.__name__}', param_hint=option)
        raise CliError(f'{option}: {path!r} is not a subclass of {base.__module__}.{base.__qualname__}')
    return found


def worker_class(path: str | None) -> type[BaseWorker]:
    """The --worker-class (default rqfast.Worker, which forks a horse per job, as RQ's)."""
    return load_class(path or DEFAULT_WORKER_CLASS, '--worker-class', BaseWorker)


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
