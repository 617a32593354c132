"""The latency rows: pickup latency (a job's start minus its enqueue) at an offered rate, for every library.

One worker at concurrency 1 runs in the run's own process (RQ, rqfast: its class's work(max_jobs=...);
a peer: its `work`, as in the throughput rows), while a producer process of its own sends `pickup`
jobs (bench.jobs) with the library's enqueue API on this plan:

1. a warm-up job, one second after the start (the worker is up; its first job's imports are done);
2. `idle` seconds later (60 in a full run), one job: the first job after an idle period;
3. half a second later, `count` jobs at `rate` jobs/s, evenly spaced (each sent at its own time: a
   slow send does not make the next ones wait, it sends them late).

Each job records its own latency (its start minus the producer's time.time() as it sent it) in a file;
the row's figures are the p50 and p99 of the paced jobs (ms), and the idle job's latency (ms). Times are
the same host's clock: producer, worker and Redis run on this machine.

The rate is 200 jobs/s, or half of the library's maximum measured first in the same run (its no-op
rate at concurrency 1 on queued jobs: the `max` row).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench import jobs
from bench.child import _FORK, MeasurementError, NotAvailable
from bench.libs import Lib
from bench.peers import Peer, side, tally
from bench.redis_server import Target

WARM_AT = 1.0  # seconds after the producer's start: the warm-up job
AFTER_IDLE = 0.5  # seconds between the idle job and the paced ones


def plan(rate: float, count: int, idle: float) -> list[tuple[float, str]]:
    """(seconds after the start, tag) per job: 'w' warm-up, 'i' after the idle period, 'p' paced."""
    first = WARM_AT + idle + AFTER_IDLE
    return [(WARM_AT, 'w'), (WARM_AT + idle, 'i')] + [(first + i / rate, 'p') for i in range(count)]


def _drive_sync(send: Callable[..., Any], steps: list[tuple[float, str]], t0: float) -> None:
    for at, tag in steps:
        delay = t0 + at - time.time()
        if delay > 0:
            time.sleep(delay)
        send(time.time(), tag)


async def _drive_async(send: Callable[..., Any], steps: list[tuple[float, str]], t0: float) -> None:
    for at, tag in steps:
        delay = t0 + at - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
        await send(time.time(), tag)


def _producer(make: Callable[[], Any], is_async: bool, steps: list[tuple[float, str]], t0: float) -> None:
    """The producer process' body: `make()` gives (send, close) (awaitable ones when is_async)."""
    if is_async:

        async def main() -> None:
            send, close = await make()
            try:
                await _drive_async(send, steps, t0)
            finally:
                await close()

        asyncio.run(main())
    else:
        send, close = make()
        try:
            _drive_sync(send, steps, t0)
        finally:
            close()


def _start_producer(make: Callable[[], Any], is_async: bool, steps: list[tuple[float, str]]) -> tuple[Any, float]:
    t0 = time.time() + 0.2
    proc = _FORK.Process(target=_producer, args=(make, is_async, steps, t0), daemon=True)
    proc.start()
    return proc, t0


def _new_file() -> str:
    fd, path = tempfile.mkstemp(prefix='bench-pickup-')
    os.close(fd)
    os.environ[jobs.PICKUP_FILE_VARIABLE] = path
    return path


def _figures(path: str, count: int) -> dict[str, float]:
    """p50, p99 (ms) of the paced jobs and the idle job's latency (ms), from the jobs' lines."""
    found: dict[str, list[float]] = {'w': [], 'i': [], 'p': []}
    with open(path) as lines:
        for line in lines:
            tag, seconds = line.split()
            found[tag].append(float(seconds) * 1000)
    os.unlink(path)
    if len(found['p']) != count or len(found['i']) != 1:
        raise MeasurementError(f'{len(found["p"])} of {count} paced jobs and {len(found["i"])} of 1 idle job ran')
    paced = sorted(found['p'])
    return {
        'p50': statistics.median(paced),
        'p99': paced[min(len(paced) - 1, round(0.99 * (len(paced) - 1)))],
        'idle': found['i'][0],
    }


def _finish(proc: Any, timeout: float) -> None:
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        raise MeasurementError('the producer did not finish')
    if proc.exitcode != 0:
        raise MeasurementError(f'the producer failed (exit code {proc.exitcode})')


def duration(rate: float, count: int, idle: float) -> float:
    return WARM_AT + idle + AFTER_IDLE + count / rate


# --- RQ and rqfast ----------------------------------------------------------------------------


def rq_latency(
    lib: Lib, target: Target, worker_class: str, rate: float, count: int, idle: float, timeout: float
) -> dict[str, float]:
    """One `worker_class` worker of RQ or rqfast in this process, jobs enqueued one by one (Queue.enqueue)."""
    from bench import rq_side

    path = _new_file()
    steps = plan(rate, count, idle)

    def make() -> Any:
        queue = rq_side.make_queue(lib, target)
        return (lambda *args: queue.enqueue(jobs.pickup, *args)), queue.connection.close

    queue = rq_side.make_queue(lib, target)
    worker = lib.cls(worker_class)([queue], connection=queue.connection)
    kwargs = rq_side.work_kwargs(worker, max_jobs=len(steps))
    kwargs['burst'] = False
    proc, _ = _start_producer(make, False, steps)
    worker.work(**kwargs)
    _finish(proc, timeout)
    return _figures(path, count)


def rq_max(lib: Lib, target: Target, worker_class: str, count: int) -> float:
    from bench import rq_side

    return rq_side.worker_rate(lib, target, worker_class, 'noop', count)


# --- the peers (bench.peers) ------------------------------------------------------------------


def peer_latency(peer: Peer, target: Target, rate: float, count: int, idle: float, timeout: float) -> dict[str, float]:
    module = side(peer)
    is_async = peer.model == 'async'
    job = 'pickup_async' if is_async else 'pickup'
    make_sender = getattr(module, 'async_sender' if is_async else 'sender', None)
    if make_sender is None:
        raise NotAvailable(f'bench.peers.{peer.name}_side has no sender')
    os.environ[jobs.REDIS_URL_VARIABLE] = target.url
    path = _new_file()
    steps = plan(rate, count, idle)
    tally.start(len(steps))
    proc, _ = _start_producer(lambda: make_sender(target.url, job), is_async, steps)
    module.work(target.url, job, len(steps), 1, timeout)
    _finish(proc, timeout)
    return _figures(path, count)


def peer_max(peer: Peer, target: Target, count: int, timeout: float) -> float:
    from bench.peers import harness

    job = 'noop_async' if peer.model == 'async' else 'noop'
    return harness.peer_work(peer, target, job, count, 1, timeout)[0]


# --- BullMQ -----------------------------------------------------------------------------------


def bull_latency(target: Target, rate: float, count: int, idle: float, timeout: float) -> dict[str, float]:
    from bench import bull_side

    path = _new_file()
    steps = plan(rate, count, idle)

    async def make() -> Any:
        queue = bull_side.make_queue(target)
        await queue.getJobCounts('waiting')

        async def send(enqueued: float, tag: str) -> None:
            await queue.add('pickup', {'enqueued': enqueued, 'tag': tag})

        return send, queue.close

    proc, _ = _start_producer(make, True, steps)
    asyncio.run(bull_side.drain(target, len(steps), 1, timeout))
    _finish(proc, timeout)
    return _figures(path, count)


def bull_max(target: Target, count: int, timeout: float) -> float:
    from bench import bull_side

    return bull_side.worker_rate(target, 'noop', count, 1, timeout)
