"""The worker classes, under RQ's module path (`from rq.worker import SimpleWorker` swaps over)."""

from __future__ import annotations

from .base import BaseWorker, DequeueStrategy, WorkerStatus
from .simple import SimpleWorker

__all__ = ['BaseWorker', 'DequeueStrategy', 'SimpleWorker', 'WorkerStatus']
