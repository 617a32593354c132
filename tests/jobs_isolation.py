"""Job functions for the isolating workers' tests (forked horses, spawned children): jobs that crash,
hang, kill themselves or look at the process they run in."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any


def _current_job() -> Any:
    from rqfast import get_current_job

    return get_current_job()


def kill_self(sig: int = signal.SIGKILL) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(10)


def kill_parent() -> str:
    """Kills the process that started this horse (the forking worker's breeder): the worker must carry on."""
    os.kill(os.getppid(), signal.SIGKILL)
    return 'done'


def exit_hard(code: int = 3) -> None:
    os._exit(code)


def raise_system_exit() -> None:
    sys.exit(5)


def sleep_ignoring_alarm(seconds: float) -> float:
    """A job the timeout signal cannot reach (as if stuck in C code): only a kill ends it early."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(seconds)
    return seconds


def announce_and_sleep(seconds: float) -> float:
    """Sets `running:<job id>` through the job's own connection, then sleeps: tests wait for the key."""
    job = _current_job()
    job.connection.set(f'running:{job.id}', os.getpid())
    time.sleep(seconds)
    return seconds


def enqueue_from_inside() -> dict[str, Any]:
    """Enqueues a job with the running job's connection: the horse needs a working connection of its own."""
    from rqfast import Queue

    job = _current_job()
    child = Queue(job.origin, connection=job.connection).enqueue('jobs.say_hello', 'from inside')
    return {'me': job.id, 'child': child.id}


def where_am_i() -> dict[str, Any]:
    """The process a job runs in: its pid, its parent, and whether the worker's modules are loaded."""
    return {
        'pid': os.getpid(),
        'ppid': os.getppid(),
        'worker_loaded': 'rqfast.worker.base' in sys.modules,
        'redis_loaded': 'redis' in sys.modules,
        'opentelemetry_loaded': 'opentelemetry.trace' in sys.modules,
        'loaded_for_nothing': sorted(set(sys.modules) & {'json', 'logging', 'traceback', 'inspect', 'random'}),
        'worker_id': os.environ.get('RQ_WORKER_ID'),
        'job_id': os.environ.get('RQ_JOB_ID'),
    }


def print_and_return(text: str) -> str:
    print(text)
    return text


def record_stopped(job: Any, connection: Any) -> None:
    """on_stopped callback: it runs in the worker, with the worker's connection."""
    connection.set(f'stopped:{job.id}', os.getpid())


def record_failure(job: Any, connection: Any, exc_type: Any, exc: Any, tb: Any) -> None:
    connection.set(f'failure:{job.id}', exc_type.__name__)
