"""What the worker's collaborators read of it: WorkerContext, a small read-only view.

The loop, its runners, the recorder and the loader are handed this view (base.py makes it), not the
worker: its name and log, its connection, the classes and serializer a job is loaded with, the
settings a job's record depends on, its exception handlers as they stand. Each is read when used, so
a setting changed on the worker (a test, an RQ tool) is seen at once. The view writes nothing but the
worker's RQ counters (tally); what else a collaborator changes, it owns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from redis import Redis

    from ..job import Job
    from ..outcome import Outcome
    from ..security import JobPolicy


class WorkerContext(Protocol):
    """The worker as its collaborators see it (read only, but the counters)."""

    @property
    def name(self) -> str: ...
    @property
    def log(self) -> logging.Logger: ...
    @property
    def connection(self) -> Redis: ...
    @property
    def job_class(self) -> type[Job]: ...
    @property
    def queue_class(self) -> Any: ...
    @property
    def serializer(self) -> Any: ...
    @property
    def job_policy(self) -> JobPolicy | None: ...
    @property
    def exception_handlers(self) -> list[Callable[..., Any]]: ...
    @property
    def death_penalty_class(self) -> Any: ...
    @property
    def default_result_ttl(self) -> int: ...
    @property
    def disable_default_exception_handler(self) -> bool: ...
    @property
    def job_monitoring_interval(self) -> int: ...
    @property
    def worker_ttl(self) -> int: ...
    @property
    def heartbeat_grace(self) -> int: ...
    @property
    def dequeue_timeout(self) -> int: ...
    @property
    def log_job_description(self) -> bool: ...
    @property
    def log_result_lifespan(self) -> bool: ...
    @property
    def job_observer(self) -> Callable[[Job, Outcome], None] | None: ...
    def queue_names(self) -> list[str]: ...
    def queue_named(self, name: str) -> Any:
        """The worker's queue of that name (one made on its connection if it has none)."""
        ...

    def tally(self, outcome: Outcome, working_time: float) -> None:
        """Count a recorded end in the worker's RQ counters (successful_job_count...)."""
        ...
