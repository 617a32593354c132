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
from .admin import show_queues, show_workers
from .arguments import ParsingMode, parse_function_arg, parse_function_args, parse_schedule
from .settings import redis_from_settings

__all__ = [
    'DEFAULT_CONNECTION_CLASS',
    'DEFAULT_DEATH_PENALTY_CLASS',
    'DEFAULT_JOB_CLASS',
    'DEFAULT_QUEUE_CLASS',
    'DEFAULT_SERIALIZER_CLASS',
    'DEFAULT_WORKER_CLASS',
    'ParsingMode',
    'get_redis_from_config',
    'parse_function_arg',
    'parse_function_args',
    'parse_schedule',
    'read_config_file',
    'show_queues',
    'show_workers',
]


def read_config_file(module: str) -> dict[str, Any]:
    """The UPPERCASE names of a settings module (ImportError as it comes)."""
    settings = importlib.import_module(module)
    return {name: value for name, value in vars(settings).items() if name.upper() == name}


def get_redis_from_config(settings: Mapping[str, Any], connection_class: type[Redis] = Redis) -> Redis:
    """A client from RQ's settings names: REDIS_URL, else SENTINEL, else REDIS_HOST and friends."""
    return redis_from_settings(settings, connection_class, sentinel_class=Sentinel)
