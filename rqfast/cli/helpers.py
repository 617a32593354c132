"""RQ's rq.cli.helpers names, re-exported from where the rqfast CLI keeps them."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from redis import Redis
from redis.sentinel import Sentinel

from ..defaults import (
    DEFAULT_CONNECTION_CLASS,
    DEFAULT_DEATH_PENALTY_CLASS,
    DEFAULT_JOB_CLASS,
    DEFAULT_QUEUE_CLASS,
    DEFAULT_SERIALIZER_CLASS,
    DEFAULT_WORKER_CLASS,
)
from ..imports import import_attribute
from ..logutils import setup_loghandlers
from .arguments import ParsingMode, parse_function_arg, parse_function_args, parse_schedule
from .config import CliConfig, pass_cli_config, shared_options
from .monitor import get_scale, pad, refresh, show_both, show_queues, show_workers, state_symbol
from .settings import redis_from_settings

__all__ = [
    'DEFAULT_CONNECTION_CLASS',
    'DEFAULT_DEATH_PENALTY_CLASS',
    'DEFAULT_JOB_CLASS',
    'DEFAULT_QUEUE_CLASS',
    'DEFAULT_SERIALIZER_CLASS',
    'DEFAULT_WORKER_CLASS',
    'CliConfig',
    'ParsingMode',
    'get_redis_from_config',
    'get_scale',
    'import_attribute',
    'pad',
    'parse_function_arg',
    'parse_function_args',
    'parse_schedule',
    'pass_cli_config',
    'read_config_file',
    'refresh',
    'setup_loghandlers_from_args',
    'shared_options',
    'show_both',
    'show_queues',
    'show_workers',
    'state_symbol',
]


def read_config_file(module: str) -> dict[str, Any]:
    """The UPPERCASE names of a settings module (ImportError as it comes)."""
    settings = importlib.import_module(module)
    return {name: value for name, value in vars(settings).items() if name.upper() == name}


def get_redis_from_config(settings: Mapping[str, Any], connection_class: type[Redis] = Redis) -> Redis:
    """A client from RQ's settings names: REDIS_URL, else SENTINEL, else REDIS_HOST and friends."""
    return redis_from_settings(settings, connection_class, sentinel_class=Sentinel)


def setup_loghandlers_from_args(verbose: bool, quiet: bool, date_format: str, log_format: str) -> None:
    """The worker's log handlers at DEBUG (--verbose), WARNING (--quiet) or the level they have."""
    if verbose and quiet:
        raise RuntimeError('Flags --verbose and --quiet are mutually exclusive.')
    level = 'DEBUG' if verbose else 'WARNING' if quiet else None
    setup_loghandlers(level, date_format=date_format, log_format=log_format)
