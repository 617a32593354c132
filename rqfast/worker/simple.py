"""SimpleWorker: runs each job in the worker's own process, as RQ's SimpleWorker does (runner.py's Runner)."""

from __future__ import annotations

from .base import BaseWorker


class SimpleWorker(BaseWorker):
    runs_jobs_concurrently = True  # concurrency > 1: plain functions on threads, coroutines on one event loop
