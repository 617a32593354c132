"""RQ's WorkerPool: N worker processes on the same queues, restarted when they die, stopped together.

The pool forks one process per worker (any worker class: each builds its own Redis connection
from the pool's settings, then works with its scheduler on, as RQ's pool workers do), checks them
every second and starts a new one for each that died (not in burst mode: a burst pool ends when
its workers have). SIGINT or SIGTERM stops the pool: each worker gets SIGINT, a warm shutdown
(it finishes its job), and the pool exits once all are gone. A second signal a second or more
later is passed on the same way: the workers' cold shutdown, as with RQ. `rqfast worker-pool` is
the command (cli/pool.py).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections.abc import Iterable
from enum import Enum
from multiprocessing.process import BaseProcess
from typing import Any, NamedTuple
from uuid import uuid4

from redis import ConnectionPool, Redis

from .as_rq import logger_name
from .connections import build_client, parse_connection
from .defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from .job import Job
from .logutils import setup_loghandlers
from .queue import Queue
from .serializers import DefaultSerializer
from .worker import BaseWorker, Worker

CHECK_INTERVAL = 1.0  # seconds between the pool's looks at its workers (RQ's)
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}

try:
    ForkProcess: Any = multiprocessing.get_context('fork').Process
except ValueError:  # no fork on this platform
    ForkProcess = multiprocessing.Process


class WorkerData(NamedTuple):
    name: str
    pid: int
    process: BaseProcess


def _queue_name(queue: Any) -> str:
    return queue if isinstance(queue, str) else str(queue.name)


class WorkerPool:
    class Status(Enum):
        IDLE = 1
        STARTED = 2
        STOPPED = 3

    def __init__(
        self,
        queues: Iterable[str | Queue],
        connection: Redis,
        num_workers: int = 1,
        worker_class: type[BaseWorker] = Worker,
        serializer: Any = DefaultSerializer,
        job_class: type[Job] = Job,
        queue_class: type[Queue] = Queue,
        exception_handlers: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
            raise ValueError(f'num_workers must be a positive integer, got {num_workers!r}')
        self.num_workers = num_workers
        self._workers: list[BaseWorker] = []  # RQ's attribute (unused there too): the workers live in processes
        self.log = logging.getLogger(logger_name('worker_pool'))
        setup_loghandlers('INFO', DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT, name=self.log.name)
        self._queue_names = [_queue_name(queue) for queue in queues]
        self.connection = connection
        self.name = uuid4().hex
        self._burst = True
        self._sleep: float = 0
        self.status = self.Status.IDLE
        self.worker_class = worker_class
        self.serializer = serializer
        self.job_class = job_class
        self.queue_class = queue_class
        self.exception_handlers = exception_handlers
        self._logging_level = 'INFO'
        self.worker_dict: dict[str, WorkerData] = {}  # by worker name
        self._connection_class, self._pool_class, self._pool_kwargs = parse_connection(connection)

    @property
    def queues(self) -> list[Queue]:
        return [self.queue_class(name, connection=self.connection) for name in self._queue_names]

    @property
    def number_of_active_workers(self) -> int:
        return len(self.worker_dict)

    # --- stopping

    def _install_signal_handlers(self) -> None:
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGTERM, self.request_stop)

    def request_stop(self, signum: Any = None, frame: Any = None) -> None:
        """Stop the pool: every worker gets SIGINT (a warm shutdown), and no worker is started again."""
        self.log.info('Received SIGINT/SIGTERM, shutting down...')
        self.status = self.Status.STOPPED
        self.stop_workers()

    def stop_worker(self, worker_data: WorkerData, sig: int = signal.SIGINT) -> None:
        """Signal one worker; one that is gone already is no error."""
        try:
            os.kill(worker_data.pid, sig)
            self.log.info('Sent shutdown command to worker with %s', worker_data.pid)
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                raise
            self.log.debug('Worker %s already dead', worker_data.pid)

    def stop_workers(self) -> None:
        self.log.info('Sending stop signal to %s workers', len(self.worker_dict))
        for worker_data in list(self.worker_dict.values()):
            self.stop_worker(worker_data)

    def all_workers_have_stopped(self) -> bool:
        self.reap_workers()
        return self.number_of_active_workers == 0

    # --- watching

    def reap_workers(self) -> None:
        """Forget the workers whose process has ended (reaping it)."""
        self.log.debug('Reaping dead workers')
        for data in list(self.worker_dict.values()):
            if data.process.is_alive():  # (waitpid WNOHANG: an ended process is reaped here)
                self.log.debug('Worker %s with pid %d is alive', data.name, data.pid)
            else:
                self.handle_dead_worker(data)

    def handle_dead_worker(self, worker_data: WorkerData) -> None:
        self.log.info('Worker %s with pid %d is dead', worker_data.name, worker_data.pid)
        with contextlib.suppress(KeyError):
            self.worker_dict.pop(worker_data.name)

    def check_workers(self, respawn: bool = True) -> None:
        """Reap the dead workers and, unless told not to or stopping, start one for each."""
        self.log.debug('Checking worker processes')
        self.reap_workers()
        if respawn and self.status != self.Status.STOPPED:
            for _ in range(self.num_workers - len(self.worker_dict)):
                self.start_worker(burst=self._burst, _sleep=self._sleep, logging_level=self._logging_level)

    # --- starting

    def get_worker_process(self, name: str, burst: bool, _sleep: float = 0, logging_level: str = 'INFO') -> BaseProcess:
        process: BaseProcess = ForkProcess(
            target=run_worker,
            args=(name, self._queue_names, self._connection_class, self._pool_class, self._pool_kwargs),
            kwargs={
                '_sleep': _sleep,
                'burst': burst,
                'logging_level': logging_level,
                'worker_class': self.worker_class,
                'job_class': self.job_class,
                'queue_class': self.queue_class,
                'serializer': self.serializer,
                'exception_handlers': self.exception_handlers,
            },
            name=f'Worker {name} (WorkerPool {self.name})',
        )
        return process

    def start_worker(
        self, count: int | None = None, burst: bool = True, _sleep: float = 0, logging_level: str = 'INFO'
    ) -> None:
        """Start one worker process (`_sleep`: it waits that long before working, for tests)."""
        name = uuid4().hex
        process = self.get_worker_process(name, burst=burst, _sleep=_sleep, logging_level=logging_level)
        # forked with the stop signals blocked (the child unblocks them once the pool's handlers are off
        # it), and known to the pool before a stop signal is handled here, so the stop reaches it too
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            process.start()
            assert process.pid is not None
            self.worker_dict[name] = WorkerData(name=name, pid=process.pid, process=process)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        self.log.debug('Spawned worker: %s with PID %d', name, process.pid)

    def start_workers(self, burst: bool = True, _sleep: float = 0, logging_level: str = 'INFO') -> None:
        self.log.debug('Spawning %d workers', self.num_workers)
        for count in range(self.num_workers):
            if self.status == self.Status.STOPPED:  # stopped while they were starting
                break
            self.start_worker(count + 1, burst=burst, _sleep=_sleep, logging_level=logging_level)

    def start(self, burst: bool = False, logging_level: str = 'INFO') -> None:
        """Run the pool until it is stopped (a signal), or in burst mode until its workers have ended."""
        self._burst, self._logging_level = burst, logging_level
        setup_loghandlers(logging_level, DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT, name=self.log.name)
        self.log.info('Starting worker pool %s with pid %d...', self.name, os.getpid())
        self.status = self.Status.STARTED
        self._install_signal_handlers()  # first: a signal while the workers start stops them too
        self.start_workers(burst=burst, logging_level=logging_level)
        while True:
            if self.status == self.Status.STOPPED:
                if self.all_workers_have_stopped():
                    self.log.info('All workers stopped, exiting...')
                    break
                self.log.info('Waiting for workers to shutdown...')
            else:
                self.check_workers(respawn=not burst)
                if burst and self.number_of_active_workers == 0:
                    self.log.info('All workers stopped, exiting...')
                    break
            self._wait(CHECK_INTERVAL)

    def _wait(self, seconds: float) -> None:
        """Sleep, waking early when a worker process ends (its sentinel becomes ready)."""
        sentinels = [data.process.sentinel for data in self.worker_dict.values()]
        if sentinels:
            multiprocessing.connection.wait(sentinels, timeout=seconds)
        else:
            time.sleep(seconds)


def run_worker(
    worker_name: str,
    queue_names: Iterable[str],
    connection_class: Any,
    connection_pool_class: Any,
    connection_pool_kwargs: dict[str, Any],
    worker_class: type[BaseWorker] = Worker,
    serializer: Any = DefaultSerializer,
    job_class: type[Job] = Job,
    queue_class: type[Queue] = Queue,
    exception_handlers: Any = None,
    burst: bool = True,
    logging_level: str = 'INFO',
    _sleep: float = 0,
) -> None:
    """One pool worker, in its own process: a connection of its own, then work() with the scheduler on."""
    # a forked worker must not run the pool's handlers (they would signal its siblings): until work()
    # installs its own, a stop signal ends it (one that came while it was forked, blocked, arrives now)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if connection_pool_class is None:  # a RedisCluster (connections.parse_connection)
            connection = build_client(connection_pool_kwargs['cluster'])
        else:
            connection = connection_class(
                connection_pool=ConnectionPool(connection_class=connection_pool_class, **connection_pool_kwargs)
            )
        queues = [queue_class(name, connection=connection, serializer=serializer) for name in queue_names]
        worker = worker_class(
            queues,
            name=worker_name,
            connection=connection,
            serializer=serializer,
            job_class=job_class,
            queue_class=queue_class,
            exception_handlers=exception_handlers,
        )
        worker.log.info('Starting worker started with PID %s', os.getpid())
        time.sleep(_sleep)
        worker.work(burst=burst, with_scheduler=True, logging_level=logging_level)
    except KeyboardInterrupt:  # a SIGINT before work() installed the worker's handlers: it had not started
        pass
