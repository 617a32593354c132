"""RQScheduler: moves due jobs from rq:scheduled:<q> onto their queues, once a second.

Each tick is one script call (lua/schedule_jobs.lua) for all queues: the scheduler hash
heartbeat, RQ's per-queue lock (rq:scheduler-lock:<q> holding the scheduler's name, 61 s) and the
move itself. The locks follow RQ 2.12's protocol, so an RQ scheduler and an rqfast scheduler on
the same queues split them and never enqueue a job twice. In a worker it runs on a thread rather
than a forked process: the worker's main thread may sit in a job under SIGALRM, and a thread
needs no second connection setup.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterable
from datetime import datetime
from enum import Enum
from typing import Any
from uuid import uuid4

import redis
from redis import Redis

from . import keys, scripts
from .backoff import Backoff
from .dates import epoch_seconds, now, utcformat, utcparse
from .defaults import SCHEDULER_CHUNK, SCHEDULER_INTERVAL, SCHEDULER_LOCK_MARGIN, SCHEDULER_MAX_BACKOFF
from .exceptions import SchedulerNotFound
from .serializers import resolve_serializer
from .text import as_text

logger = logging.getLogger('rqfast.scheduler')


class SchedulerStatus(str, Enum):
    STARTED = 'started'
    WORKING = 'working'
    STOPPED = 'stopped'


def _names(queues: Any) -> list[str]:
    items = [queues] if isinstance(queues, str) else list(queues or [])
    names: list[str] = []
    for item in items:
        name = item if isinstance(item, str) else item.name
        if name not in names:
            names.append(name)
    return names


class RQScheduler:
    Status = SchedulerStatus

    def __init__(
        self,
        queues: Any,
        connection: Redis,
        interval: float = SCHEDULER_INTERVAL,
        logging_level: Any = None,
        date_format: str | None = None,
        log_format: str | None = None,
        serializer: Any = None,
        name: str | None = None,
    ):
        self._queue_names = _names(queues)
        self.connection = connection
        self.interval = interval
        self.serializer = resolve_serializer(serializer)
        self.name: str = name or uuid4().hex
        self.hostname = socket.gethostname()
        self.pid = os.getpid()
        self.created_at: datetime = now()
        self.last_heartbeat: datetime | None = None
        self._acquired_locks: set[str] = set()
        self._status = SchedulerStatus.STOPPED
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.log = logger

    @property
    def key(self) -> str:
        return keys.scheduler_key(self.name)

    @property
    def acquired_locks(self) -> set[str]:
        return self._acquired_locks

    @property
    def status(self) -> SchedulerStatus:
        return self._status

    @property
    def lock_ttl(self) -> int:
        return int(self.interval) + SCHEDULER_LOCK_MARGIN

    @classmethod
    def get_locking_key(cls, name: str) -> str:
        return keys.scheduler_lock_key(name)

    def to_dict(self) -> dict[str, str]:
        return {
            'name': self.name,
            'hostname': self.hostname,
            'pid': str(self.pid),
            'queues': ','.join(self._queue_names),
            'created_at': utcformat(self.created_at),
            'last_heartbeat': utcformat(self.last_heartbeat or now()),
        }

    @classmethod
    def fetch(cls, name: str, connection: Redis) -> RQScheduler:
        raw = connection.hgetall(keys.scheduler_key(name))
        if not raw:
            raise SchedulerNotFound(f"Scheduler with name '{name}' not found")
        fields = {as_text(k): as_text(v) for k, v in raw.items()}
        scheduler = cls([q for q in fields.get('queues', '').split(',') if q], connection=connection, name=name)
        scheduler.hostname = fields.get('hostname', '')
        scheduler.pid = int(fields.get('pid') or 0)
        if fields.get('created_at'):
            scheduler.created_at = utcparse(fields['created_at'])
        if fields.get('last_heartbeat'):
            scheduler.last_heartbeat = utcparse(fields['last_heartbeat'])
        return scheduler

    # --- the tick

    def tick(self, acquire: bool = True, move: bool = True, release: bool = False) -> dict[str, int]:
        """One script call: locks, heartbeat (or, with release, death) and the move; jobs moved per queue."""
        moment = now()
        self.last_heartbeat = moment
        self._status = SchedulerStatus.WORKING
        try:
            reply = scripts.schedule_jobs(
                self.connection,
                self.name,
                self.lock_ttl,
                utcformat(moment),
                epoch_seconds(moment),
                SCHEDULER_CHUNK,
                acquire,
                move,
                release,
                {} if release else self.to_dict(),
                self._queue_names,
            )
        finally:
            self._status = SchedulerStatus.STARTED
        held = {q for q, (state, _) in zip(self._queue_names, reply, strict=True) if state > 0}
        for queue in sorted(held - self._acquired_locks):
            self.log.info('Scheduler %s: acquired the scheduler lock for %s', self.name, queue)
        self._acquired_locks = set() if release else held
        moved = {q: n for q, (_, n) in zip(self._queue_names, reply, strict=True) if n}
        for queue, count in moved.items():
            self.log.debug('Scheduler %s: moved %d due job(s) onto %s', self.name, count, queue)
        return moved

    def acquire_locks(self, auto_start: bool = False) -> set[str]:
        """RQ's acquire_locks: take or refresh the locks (and heartbeat) without moving jobs."""
        self.tick(move=False)
        if self._acquired_locks and auto_start and not (self._thread and self._thread.is_alive()):
            self.start()
        return set(self._acquired_locks)

    def enqueue_scheduled_jobs(self) -> dict[str, int]:
        """Move the due jobs of the queues whose locks are held now (no new lock is taken)."""
        return self.tick(acquire=False)

    def heartbeat(self) -> None:
        self.tick(move=False)

    def register_birth(self) -> None:
        self.tick(acquire=False, move=False)

    def release_locks(self) -> None:
        """Compare-and-DEL of the locks this scheduler still holds, and its hash."""
        self.tick(acquire=False, move=False, release=True)

    def register_death(self) -> bool:
        return bool(self.connection.delete(self.key))

    # --- running

    def start(self, burst: bool = False) -> threading.Thread | None:
        """Burst: one move now, then the locks are released. Else ticks on a daemon thread until stop()."""
        if burst:
            self.tick(release=True)
            self._status = SchedulerStatus.STOPPED
            return None
        self._stop.clear()
        self._status = SchedulerStatus.STARTED
        self._thread = threading.Thread(target=self.work, name='rqfast-scheduler', daemon=True)
        self._thread.start()
        self.log.info('Scheduler %s for %s started', self.name, ', '.join(self._queue_names))
        return self._thread

    def work(self) -> None:
        """Tick every `interval` seconds until stop(); connection errors back off, up to 30 s."""
        backoff = Backoff(first=float(self.interval), cap=SCHEDULER_MAX_BACKOFF)
        while not self._stop.is_set():
            try:
                self.tick()
                backoff.reset()
            except redis.RedisError as exc:
                delay = backoff.next()
                self.log.warning('Scheduler %s: tick failed: %s; retrying in %.0f s', self.name, exc, delay)
                if self._stop.wait(delay):
                    break
                continue
            except Exception:
                self.log.exception('Scheduler %s: tick failed', self.name)
            self._stop.wait(self.interval)
        self._release_quietly()

    def request_stop(self, signum: Any = None, frame: Any = None) -> None:
        self._stop.set()

    def stop(self) -> None:
        """Stop ticking, release the locks still held and delete the scheduler hash."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)
        self._release_quietly()
        self._status = SchedulerStatus.STOPPED

    def _release_quietly(self) -> None:
        try:
            self.release_locks()
        except redis.RedisError as exc:
            self.log.warning('Scheduler %s: could not release its locks: %s', self.name, exc)

    def prepare_registries(self, queue_names: Iterable[str] | None = None) -> None:
        """RQ prepares registry objects here; a tick needs none."""
