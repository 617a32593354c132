"""The worker classes, under RQ's module path (`from rq.worker import SimpleWorker` swaps over)."""

from __future__ import annotations

from ..defaults import DEFAULT_RESULT_TTL
from ..status import WorkerStatus
from .base import BaseWorker, logger
from .forking import ForkingWorker, Worker
from .order import DequeueStrategy
from .simple import SimpleWorker
from .spawn import SpawnWorker
from .stopping import SHUTDOWN_SIGNAL, _signames, signal_name
from .worker_classes import HerokuWorker, RandomWorker, RoundRobinWorker

__all__ = [
    'DEFAULT_RESULT_TTL',
    'SHUTDOWN_SIGNAL',
    'BaseWorker',
    'DequeueStrategy',
    'ForkingWorker',
    'HerokuWorker',
    'RandomWorker',
    'RoundRobinWorker',
    'SimpleWorker',
    'SpawnWorker',
    'Worker',
    'WorkerStatus',
    '_signames',
    'logger',
    'signal_name',
]
