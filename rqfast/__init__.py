"""rqfast: RQ 2.12's API and Redis layout, with a worker that makes one round trip per job."""

from __future__ import annotations

from . import executions  # noqa: F401  (job.get_executions() needs it loaded)
from .as_rq import install_as_rq
from .job import Callback, Job, Retry, cancel_job, get_current_job, requeue_job
from .queue import Queue
from .rate_limit import RateLimit
from .repeat import Repeat
from .version import VERSION
from .webhook import Webhook
from .worker import ForkingWorker, SimpleWorker, SpawnWorker, Worker

__version__ = VERSION

__all__ = [
    'VERSION',
    'Callback',
    'ForkingWorker',
    'Job',
    'Queue',
    'RateLimit',
    'Repeat',
    'Retry',
    'Webhook',
    'SimpleWorker',
    'SpawnWorker',
    'Worker',
    'cancel_job',
    'get_current_job',
    'install_as_rq',
    'requeue_job',
]
