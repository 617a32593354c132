"""Measurements for RQ-compatible libraries, written once and run for both RQ and rqfast.

Each function runs inside a fresh fork (see child.py), returns one figure, and checks through
Redis itself that every job it timed was really stored or really finished.

A worker's time runs from the call to work() to the `ended_at` of the last job it finished, as
stored in the job hash: worker startup counts, shutdown does not (RQ's shutdown joins its pub/sub
thread with a 1 s timeout, which it sometimes waits out; a long-running worker never pays that).
"""

from __future__ import annotations

import inspect
import multiprocessing
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from bench import jobs
from bench.child import MeasurementError, NotAvailable, run_group
from bench.libs import Lib
from bench.redis_server import Target
from bench.run_worker import resident_mib

_SETUP_CHUNK = 10_000


# RQ's key layout, which rqfast keeps: used only to check the outcome, never to do the work.
def _queue_key(name: str) -> str:
    return f'rq:queue:{name}'


def _finished_key(name: str) -> str:
    return f'rq:finished:{name}'


def _failed_key(name: str) -> str:
    return f'rq:failed:{name}'


def _job_key(job_id: bytes) -> bytes:
    return b'rq:job:' + job_id


def _epoch(stamp: bytes) -> float:
    text = stamp.decode()
    layout = '%Y-%m-%dT%H:%M:%S.%fZ' if '.' in text else '%Y-%m-%dT%H:%M:%SZ'
    return datetime.strptime(text, layout).replace(tzinfo=timezone.utc).timestamp()


def last_ended_at(queue: Any) -> float:
    """Epoch seconds at which the last finished job of this queue ended (the job hash's ended_at)."""
    conn = queue.connection
    pipe = conn.pipeline(transaction=False)
    for job_id in conn.zrange(_finished_key(queue.name), 0, -1):
        pipe.hget(_job_key(job_id), 'ended_at')
    stamps = [stamp for stamp in pipe.execute() if stamp]
    if not stamps:
        raise MeasurementError('no finished job has an ended_at')
    return max(_epoch(stamp) for stamp in stamps)


def make_queue(lib: Lib, target: Target) -> Any:
    queue = lib.cls('Queue')(lib.queue_name(), connection=target.connect())
    queue.connection.ping()  # connect before any timing starts
    return queue


def enqueue_jobs(lib: Lib, queue: Any, job_name: str, count: int) -> None:
    """Setup, never timed: enqueue `count` jobs with enqueue_many."""
    prepare = lib.cls('Queue').prepare_data
    func = jobs.RQ_JOBS[job_name]
    for start in range(0, count, _SETUP_CHUNK):
        size = min(_SETUP_CHUNK, count - start)
        queue.enqueue_many([prepare(func) for _ in range(size)])


def work_kwargs(worker: Any, **required: Any) -> dict[str, Any]:
    """burst=True, quiet logging if the worker takes it, and any option the row needs."""
    params = inspect.signature(worker.work).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs: dict[str, Any] = {'burst': True}
    if 'logging_level' in params or takes_any:
        kwargs['logging_level'] = 'WARNING'
    for name, value in required.items():
        if name not in params and not takes_any:
            raise NotAvailable(f'{type(worker).__name__}.work() has no {name}=')
        kwargs[name] = value
    return kwargs


def check_finished(queue: Any, expected: int) -> None:
    conn = queue.connection
    finished = conn.zcard(_finished_key(queue.name))
    if finished != expected:
        failed = conn.zcard(_failed_key(queue.name))
        waiting = conn.llen(_queue_key(queue.name))
        raise MeasurementError(f'{finished} of {expected} jobs finished ({failed} failed, {waiting} still queued)')


def check_queued(queue: Any, expected: int) -> None:
    queued = queue.connection.llen(_queue_key(queue.name))
    if queued != expected:
        raise MeasurementError(f'{queued} of {expected} jobs are in the queue')


# --- insertion -------------------------------------------------------------------------------


def bulk_insert(lib: Lib, target: Target, count: int) -> float:
    queue = make_queue(lib, target)
    prepare = lib.cls('Queue').prepare_data
    start = time.monotonic()
    queue.enqueue_many([prepare(jobs.noop) for _ in range(count)])
    elapsed = time.monotonic() - start
    check_queued(queue, count)
    return count / elapsed


def single_insert(lib: Lib, target: Target, count: int) -> float:
    queue = make_queue(lib, target)
    start = time.monotonic()
    for _ in range(count):
        queue.enqueue(jobs.noop)
    elapsed = time.monotonic() - start
    check_queued(queue, count)
    return count / elapsed


def concurrent_insert(lib: Lib, target: Target, count: int, producers: int, timeout: float) -> float:
    per_producer = count // producers

    def setup() -> Any:
        queue = make_queue(lib, target)
        return lambda: [queue.enqueue(jobs.noop) for _ in range(per_producer)]

    _, elapsed = run_group(producers, setup, timeout)
    check_queued(make_queue(lib, target), per_producer * producers)
    return per_producer * producers / elapsed


# --- workers ---------------------------------------------------------------------------------


def worker_rate(lib: Lib, target: Target, worker_class: str, job_name: str, count: int, concurrency: int = 1) -> float:
    """Jobs/s of one worker (at `concurrency`, when above 1) draining `count` queued jobs in burst mode."""
    queue = make_queue(lib, target)
    enqueue_jobs(lib, queue, job_name, count)
    options = {'concurrency': concurrency} if concurrency > 1 else {}
    worker = lib.cls(worker_class)([queue], connection=queue.connection, **options)
    kwargs = work_kwargs(worker)
    start = time.time()
    worker.work(**kwargs)
    check_finished(queue, count)
    return count / (last_ended_at(queue) - start)


def concurrent_rate(lib: Lib, target: Target, job_name: str, count: int, processes: int, timeout: float) -> float:
    """Jobs/s of `processes` SimpleWorker processes draining one queue together."""
    queue = make_queue(lib, target)
    enqueue_jobs(lib, queue, job_name, count)

    def setup() -> Any:
        own_queue = make_queue(lib, target)
        worker = lib.cls('SimpleWorker')([own_queue], connection=own_queue.connection)
        kwargs = work_kwargs(worker)
        return lambda: worker.work(**kwargs)

    start, _ = run_group(processes, setup, timeout)
    check_finished(queue, count)
    return count / (last_ended_at(queue) - start)


def fleet_rate(
    lib: Lib,
    target: Target,
    job_name: str,
    count: int,
    processes: int,
    concurrency: int,
    timeout: float,
    after_work: Callable[[], None] | None = None,
) -> tuple[float, float]:
    """Jobs/s of `processes` SimpleWorker processes at `concurrency` each, and their resident memory
    summed (MiB, read in each once its work is done). `after_work` runs as soon as the workers have
    stopped, before the checks (the peers rows read Redis' CPU there)."""
    if concurrency > 1 and 'concurrency' not in inspect.signature(lib.cls('SimpleWorker').__init__).parameters:
        raise NotAvailable(f'{lib.label} runs one job at a time per process')
    queue = make_queue(lib, target)
    enqueue_jobs(lib, queue, job_name, count)
    memory = multiprocessing.get_context('fork').Queue()

    def setup() -> Any:
        own_queue = make_queue(lib, target)
        options = {'concurrency': concurrency} if concurrency > 1 else {}
        worker = lib.cls('SimpleWorker')([own_queue], connection=own_queue.connection, **options)
        kwargs = work_kwargs(worker)

        def action() -> None:
            worker.work(**kwargs)
            memory.put(resident_mib())

        return action

    start, _ = run_group(processes, setup, timeout)
    if after_work is not None:
        after_work()
    check_finished(queue, count)
    rss = sum(memory.get(timeout=10) for _ in range(processes))
    return count / (last_ended_at(queue) - start), rss


def fill_backlog(lib: Lib, target: Target, count: int) -> None:
    """Setup for the growth rows: `count` no-op jobs in this library's own queue."""
    enqueue_jobs(lib, make_queue(lib, target), 'noop', count)


def backlog_rate(lib: Lib, target: Target, window: int) -> float:
    """Jobs/s of a SimpleWorker taking the next `window` jobs off a long queue (max_jobs)."""
    queue = make_queue(lib, target)
    finished_before = queue.connection.zcard(_finished_key(queue.name))
    worker = lib.cls('SimpleWorker')([queue], connection=queue.connection)
    kwargs = work_kwargs(worker, max_jobs=window)
    start = time.time()
    worker.work(**kwargs)
    check_finished(queue, finished_before + window)
    return window / (last_ended_at(queue) - start)
