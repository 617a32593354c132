"""The worker classes, under RQ's module path (`from rq.worker import SimpleWorker` swaps over)."""

from __future__ import annotations

from .base import BaseWorker, DequeueStrategy, WorkerStatus
from .forking import ForkingWorker, Worker
from .simple import SimpleWorker
from .spawn import SpawnWorker

__all__ = ['BaseWorker', 'DequeueStrategy', 'ForkingWorker', 'SimpleWorker', 'SpawnWorker', 'Worker', 'WorkerStatus']
