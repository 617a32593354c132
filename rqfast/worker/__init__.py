"""The worker classes, under RQ's module path (`from rq.worker import SimpleWorker` swaps over)."""

from __future__ import annotations

from ..status import WorkerStatus
from .base import BaseWorker, logger
from .forking import ForkingWorker, Worker
from .order import DequeueStrategy
from .simple import SimpleWorker
from .spawn import SpawnWorker

__all__ = [
    'BaseWorker',
    'DequeueStrategy',
    'ForkingWorker',
    'SimpleWorker',
    'SpawnWorker',
    'Worker',
    'WorkerStatus',
    'logger',
]
