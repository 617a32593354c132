"""The peers rows' measurements, the same for every library: jobs/s, and Redis CPU per job.

Redis CPU is the private redis-server's own (INFO cpu: used_cpu_sys + used_cpu_user) from just before
the jobs are enqueued to the moment the last one ended: enqueueing is included, the worker's startup
and its polling too, its shutdown not. For the enqueue rows, over the enqueueing alone.

Every run checks its outcome: a peer's jobs add to the run's tally (tally.py) and it must hold exactly
the number enqueued once the worker stopped; RQ and rqfast are checked in their finished registry,
BullMQ by its completed count; a job with a Redis call must have left exactly that many INCRs; an
enqueue row reads back how many jobs the library holds.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from bench import bull_side, jobs, rq_side
from bench.child import MeasurementError
from bench.floors import command_seconds
from bench.libs import Lib
from bench.peers import Peer, side, tally
from bench.redis_server import Target

QUIET = ('dramatiq', 'celery', 'kombu', 'huey', 'arq', 'saq', 'taskiq', 'taskiq_redis', 'bullmq')


def quiet(target: Target) -> None:
    """In the run's process: the jobs' Redis URL, and quiet libraries."""
    os.environ[jobs.REDIS_URL_VARIABLE] = target.url
    for name in QUIET:  # per-job INFO lines and shutdown notices; a job's failure shows in the count
        logging.getLogger(name).setLevel(logging.ERROR)


def _prepare(target: Target) -> Any:
    """In the run's process: the jobs' Redis URL, quiet libraries, and a client of our own."""
    quiet(target)
    client = target.connect()
    client.ping()
    return client


def _per_job_us(before: float, after: float, count: int) -> float:
    return (after - before) / count * 1e6


class Marks:
    """The server's CPU and its commands' and script calls' time (INFO commandstats), read at a run's
    start and end: per job, [CPU, commands, script calls], µs."""

    def __init__(self, target: Target, client: Any) -> None:
        self.target = target
        self.start = self._read(client)
        self.end: tuple[float, float, float] | None = None

    def _read(self, client: Any) -> tuple[float, float, float]:
        return (self.target.cpu_seconds(client), *command_seconds(client))

    def stop(self, client: Any) -> None:
        self.end = self._read(client)

    def per_job(self, count: int) -> list[float]:
        if self.end is None:
            raise MeasurementError('no CPU reading at the end of the run')
        return [_per_job_us(a, b, count) for a, b in zip(self.start, self.end, strict=True)]


def check_incr(client: Any, job: str, count: int) -> None:
    if not job.endswith('_redis'):
        return
    done = int(client.get(jobs.INCR_KEY) or 0)
    if done != count:
        raise MeasurementError(f'{done} of {count} jobs made their Redis call')


def peer_work(peer: Peer, target: Target, job: str, count: int, concurrency: int, timeout: float) -> list[float]:
    """[jobs/s, Redis CPU µs per job] of one worker of `peer` at `concurrency` on `count` queued jobs."""
    module = side(peer)
    client = _prepare(target)
    watcher_client = target.connect()
    watcher_client.ping()
    run_tally = tally.start(count)
    marks = Marks(target, client)
    module.enqueue(target.url, job, count)  # not timed; its Redis CPU counts
    waiting = module.queued(target.url)
    if waiting != count:
        raise MeasurementError(f'{waiting} of {count} jobs are queued before the worker starts')

    def watch() -> None:  # reads Redis' CPU the moment the last job ended, before the worker stops
        if run_tally.done.wait(timeout):
            marks.stop(watcher_client)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    # A shorter limit than the run's own, so that a run that stalls says how far it got.
    start = module.work(target.url, job, count, concurrency, timeout * 0.75)
    watcher.join(10)
    total = run_tally.total()
    if total != count:
        raise MeasurementError(f'{total} jobs ran, {count} were enqueued')
    check_incr(client, job, count)
    return [count / (run_tally.finished_at - start), *marks.per_job(count)]


def peer_insert(peer: Peer, target: Target, job: str, count: int, bulk: bool) -> list[float]:
    """[jobs/s, Redis CPU µs per job] of enqueueing `count` jobs one by one, or in bulk."""
    module = side(peer)
    client = _prepare(target)
    marks = Marks(target, client)
    elapsed = module.insert(target.url, job, count, bulk)
    marks.stop(client)
    waiting = module.queued(target.url)
    if waiting != count:
        raise MeasurementError(f'{waiting} of {count} jobs are queued')
    return [count / elapsed, *marks.per_job(count)]


def rq_work(lib: Lib, target: Target, job: str, count: int, concurrency: int, timeout: float) -> list[float]:
    """The same for RQ and rqfast: one SimpleWorker process (at `concurrency`; RQ: 1 only)."""
    client = _prepare(target)
    marks = Marks(target, client)
    rate, _ = rq_side.fleet_rate(
        lib, target, job, count, 1, concurrency, timeout, after_work=lambda: marks.stop(client)
    )
    check_incr(client, job, count)
    return [rate, *marks.per_job(count)]


def rq_insert(lib: Lib, target: Target, count: int, bulk: bool) -> list[float]:
    client = _prepare(target)
    marks = Marks(target, client)
    rate = (rq_side.bulk_insert if bulk else rq_side.single_insert)(lib, target, count)
    marks.stop(client)  # one LLEN check included
    return [rate, *marks.per_job(count)]


def bull_work(target: Target, job: str, count: int, concurrency: int, timeout: float) -> list[float]:
    client = _prepare(target)
    marks = Marks(target, client)
    rate = bull_side.worker_rate(target, job, count, concurrency, timeout, at_done=lambda: marks.stop(client))
    check_incr(client, job, count)
    return [rate, *marks.per_job(count)]


def bull_insert(target: Target, count: int, bulk: bool) -> list[float]:
    client = _prepare(target)
    marks = Marks(target, client)
    rate = (bull_side.bulk_insert if bulk else bull_side.single_insert)(target, count)
    marks.stop(client)  # one count check included
    return [rate, *marks.per_job(count)]
