"""RQScheduler: moves due jobs from rq:scheduled:<q> onto their queues, as they come due.

RQ 2.12's API and lock protocol (rq:scheduler-lock:<q> holding the scheduler's name, 61 s; the
rq:scheduler:<name> hash), so an RQ scheduler and an rqfast scheduler on the same queues split them
and never enqueue a job twice. Each of RQ's steps (acquire_locks, heartbeat, enqueue_scheduled_jobs,
release_locks, save) is one call of lua/schedule_jobs.lua, and tick() does a whole round (locks,
heartbeat, move) in one. In a worker the loop runs on a thread rather than a forked process: the
worker's main thread may sit in a job under SIGALRM, and a thread needs no second connection setup.
Between heartbeats (every `interval`) it sleeps until the earliest job it saw scheduled is due, and a
claim that plans a job sooner (a window rate limit) wakes it over pub/sub (rqfast/listener.py).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from enum import Enum
from typing import Any, ClassVar
from uuid import uuid4

import redis
from redis import Redis

from . import keys, scripts
from .as_rq import logger_name
from .backoff import Backoff
from .dates import now, utcformat, utcparse
from .defaults import (
    DEFAULT_SCHEDULER_FALLBACK_PERIOD,
    SCHEDULER_CHUNK,
    SCHEDULER_DUE_MARGIN,
    SCHEDULER_INTERVAL,
    SCHEDULER_LOCK_MARGIN,
    SCHEDULER_MAX_BACKOFF,
    SCHEDULER_SLEEP_STEP,
)
from .exceptions import SchedulerNotFound
from .listener import ChannelListener
from .registry import ScheduledJobRegistry
from .serializers import resolve_serializer
from .text import as_text

logger = logging.getLogger(logger_name('scheduler'))

NO_RELEASE, RELEASE_LOCKS, RELEASE_ALL = 0, 1, 2  # schedule_jobs.lua's ARGV[9]


class SchedulerStatus(str, Enum):
    STARTED = 'started'
    WORKING = 'working'
    STOPPED = 'stopped'


def _names(queues: Any) -> list[str]:
    items = [queues] if isinstance(queues, str) else list(queues or [])
    return [item if isinstance(item, str) else item.name for item in items]


class RQScheduler:
    Status = SchedulerStatus
    registry_class: ClassVar[type[ScheduledJobRegistry]] = ScheduledJobRegistry  # what prepare_registries() makes

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
        self._queue_names: set[str] = set(_names(queues))
        self._acquired_locks: set[str] = set()
        self._scheduled_job_registries: list[Any] = []
        self.lock_acquisition_time: datetime | None = None  # naive local time, as RQ's
        self.connection = connection
        self.interval = interval
        self.serializer = resolve_serializer(serializer)
        self.name: str = name or uuid4().hex
        self.hostname = socket.gethostname()
        self.pid = os.getpid()
        self.created_at: datetime = now()
        self.last_heartbeat: datetime | None = None
        self._status = SchedulerStatus.STOPPED
        self._stop = threading.Event()
        self._process: threading.Thread | None = None  # RQ's name: here the thread work() runs on
        self._ended = False  # stopped, or a burst run done: nothing to restart
        self._next_due: float | None = None  # the earliest score left scheduled, as the last move saw it
        self._woken = threading.Event()  # a claim planned a job sooner than _next_due (_heard)
        self._planned: Any = None  # while work() runs: the listener on the queues' scheduler-planned channels
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

    @property
    def _stop_requested(self) -> bool:
        return self._stop.is_set()

    @_stop_requested.setter
    def _stop_requested(self, value: bool) -> None:
        if value:
            self._stop.set()
        else:
            self._stop.clear()

    @property
    def should_reacquire_locks(self) -> bool:
        """RQ's: some lock is not held and the last acquire_locks() is over the fallback period old."""
        if self._queue_names == self._acquired_locks:
            return False
        if not self.lock_acquisition_time:
            return True
        return (datetime.now() - self.lock_acquisition_time).total_seconds() > DEFAULT_SCHEDULER_FALLBACK_PERIOD

    def needs_restart(self) -> bool:
        """Whether the loop should run and does not (its thread died): a worker's maintenance restarts it."""
        return not self._ended and not (self._process and self._process.is_alive())

    @classmethod
    def get_locking_key(cls, name: str) -> str:
        return keys.scheduler_lock_key(name)

    # --- the hash

    def to_dict(self) -> dict[str, str]:
        return {
            'name': self.name,
            'hostname': self.hostname,
            'pid': str(self.pid),
            'queues': ','.join(sorted(self._queue_names)),
            'created_at': utcformat(self.created_at),
            'last_heartbeat': utcformat(self.last_heartbeat or now()),
        }

    def restore(self, raw_data: dict[Any, Any]) -> None:
        fields = {as_text(k): as_text(v) for k, v in raw_data.items()}
        self.name = fields.get('name', self.name)
        self.hostname = fields.get('hostname', '')
        self.pid = int(fields.get('pid') or 0)
        self._queue_names = {q for q in fields.get('queues', '').split(',') if q}
        if fields.get('created_at'):
            self.created_at = utcparse(fields['created_at'])
        self.last_heartbeat = utcparse(fields['last_heartbeat']) if fields.get('last_heartbeat') else None

    @classmethod
    def fetch(cls, name: str, connection: Redis) -> RQScheduler:
        raw = connection.hgetall(keys.scheduler_key(name))
        if not raw:
            raise SchedulerNotFound(f"Scheduler with name '{name}' not found")
        scheduler = cls([], connection=connection, name=name)
        scheduler.restore(raw)
        return scheduler

    def save(self, pipeline: Any = None) -> None:
        """The hash, with its TTL: one script call, or two commands queued on the caller's `pipeline`."""
        if pipeline is not None:
            pipeline.hset(self.key, mapping=self.to_dict())
            pipeline.expire(self.key, self.lock_ttl)
            return
        self._call([], fields=self.to_dict())

    def register_birth(self) -> None:
        self.pid = os.getpid()
        self.last_heartbeat = now()
        self.save()

    def register_death(self) -> bool:
        return bool(self.connection.delete(self.key))

    # --- RQ's steps, one script call each

    def _call(
        self,
        queues: Iterable[str],
        acquire: bool = False,
        move: bool = False,
        release: int = NO_RELEASE,
        fields: dict[str, str] | None = None,
    ) -> dict[str, tuple[int, int]]:
        """schedule_jobs.lua for `queues`: per queue, (lock state: 1 acquired, 2 held, 0 not ours; moved).
        Sharded by queue, one call per queue's keyspace."""
        names = sorted(queues)
        if keys.spans(names):
            states, due = {}, []
            for group in keys.by_keyspace(names):
                states.update(self._call(group, acquire, move, release, fields))
                due += [] if self._next_due is None else [self._next_due]
            self._next_due = min(due, default=None)
            return states
        moment = now()
        reply, self._next_due = scripts.schedule_jobs(
            self.connection,
            self.name,
            self.lock_ttl,
            utcformat(moment),
            moment.timestamp(),  # (a job a window rate limit planned is due at a fraction of a second)
            SCHEDULER_CHUNK,
            acquire,
            move,
            release,
            fields or {},
            names,
        )
        return dict(zip(names, reply, strict=True))

    def _note_locks(self, states: dict[str, tuple[int, int]]) -> set[str]:
        held = {q for q, (state, _) in states.items() if state > 0}
        for queue in sorted(q for q, (state, _) in states.items() if state == 1):
            self.log.info('Scheduler %s: acquired the scheduler lock for %s', self.name, queue)
        lost = self._acquired_locks & (set(states) - held)
        if lost:
            self.log.warning('Scheduler %s: locks for %s taken by another scheduler', self.name, sorted(lost))
        return held

    def acquire_locks(self, auto_start: bool = False) -> set[str]:
        """Take the free locks and refresh our own (the hash is not written); the queues held now."""
        self._acquired_locks = self._note_locks(self._call(self._queue_names, acquire=True))
        self._scheduled_job_registries = []
        self.lock_acquisition_time = datetime.now()
        if self._acquired_locks and auto_start and not (self._process and self._process.is_alive()):
            self.start()
        return set(self._acquired_locks)

    def heartbeat(self) -> None:
        """Refresh the hash and our locks (an expired one is taken again, as is a free one); a lock another
        scheduler holds now is dropped."""
        self.last_heartbeat = now()
        held = self._note_locks(self._call(self._queue_names, acquire=True, fields=self.to_dict()))
        if held != self._acquired_locks:
            self._scheduled_job_registries = []
        self._acquired_locks = held

    def prepare_registries(self, queue_names: Iterable[str] | None = None) -> None:
        """RQ's: the scheduled registries enqueue_scheduled_jobs() works on (default: the locks held)."""
        names = list(queue_names) if queue_names else sorted(self._acquired_locks)
        registry_class = self.registry_class
        self._scheduled_job_registries = [
            registry_class(name, connection=self.connection, serializer=self.serializer) for name in names
        ]

    def enqueue_scheduled_jobs(self) -> dict[str, int]:
        """Move the due jobs of the queues whose locks are held (checked again in the same call); moved per queue."""
        self._status = SchedulerStatus.WORKING
        try:
            if not self._scheduled_job_registries and self._acquired_locks:
                self.prepare_registries()
            names = [r.name for r in self._scheduled_job_registries] or sorted(self._acquired_locks)
            states = self._call(names, move=True) if names else {}
        finally:
            self._status = SchedulerStatus.STARTED
        return self._moved(states)

    def release_locks(self) -> None:
        """Compare-and-DEL of the locks we hold (a lock another scheduler took is left alone)."""
        self._call(self._queue_names | self._acquired_locks, release=RELEASE_LOCKS)
        self._acquired_locks = set()

    def tick(self, acquire: bool = True, move: bool = True) -> dict[str, int]:
        """A whole round in one call: take or refresh the locks, write the hash, move the due jobs."""
        self.last_heartbeat = now()
        self._status = SchedulerStatus.WORKING
        try:
            states = self._call(self._queue_names, acquire=acquire, move=move, fields=self.to_dict())
        finally:
            self._status = SchedulerStatus.STARTED
        self._acquired_locks = self._note_locks(states)
        return self._moved(states)

    def _moved(self, states: dict[str, tuple[int, int]]) -> dict[str, int]:
        moved = {q: n for q, (_, n) in states.items() if n}
        for queue, count in moved.items():
            self.log.debug('Scheduler %s: moved %d due job(s) onto %s', self.name, count, queue)
        return moved

    # --- running

    def start(self, burst: bool = False) -> threading.Thread | None:
        """Burst: the locks, one move, then the locks and hash are released (as RQ's burst worker does).
        Else work() on a daemon thread until stop()."""
        if burst:
            self._ended = True
            if self.acquire_locks():
                self.register_birth()
                try:
                    self.enqueue_scheduled_jobs()
                finally:
                    self._release_all()
            return None
        self._stop.clear()
        self._ended = False
        self._status = SchedulerStatus.STARTED
        self._process = threading.Thread(target=self.work, name='rqfast-scheduler', daemon=True)
        self._process.start()
        self.log.info('Scheduler %s for %s started', self.name, ', '.join(sorted(self._queue_names)))
        return self._process

    def work(self) -> None:
        """RQ's loop: birth, then heartbeat every `interval` s and move the due jobs, until a stop is
        requested; then the locks and hash are released. Between heartbeats it wakes when the earliest
        scheduled job comes due (a job a window rate limit planned at a fraction of a second starts on
        time), else after `interval`. Connection errors back off, up to 30 s."""
        backoff = Backoff(first=float(self.interval), cap=SCHEDULER_MAX_BACKOFF)
        self._status = SchedulerStatus.STARTED
        self._listen_for_plans()
        started = False
        beat_at = 0.0
        while not self._stop_requested:
            try:
                if not started:
                    self.register_birth()
                    started = True
                if time.monotonic() >= beat_at:
                    self.heartbeat()
                    beat_at = time.monotonic() + self.interval
                self.enqueue_scheduled_jobs()
                backoff.reset()
            except redis.RedisError as exc:
                delay = backoff.next()
                self.log.warning('Scheduler %s: step failed: %s; retrying in %.0f s', self.name, exc, delay)
                self._sleep(delay)
                continue
            except Exception:
                self.log.exception('Scheduler %s: step failed', self.name)
            self._sleep(self._until_next(beat_at))
        self._stop_listening()
        self._release_quietly()

    def _until_next(self, beat_at: float) -> float:
        """Seconds until the next heartbeat, or until the earliest scheduled job is due if sooner."""
        wait = beat_at - time.monotonic()
        if self._next_due is not None:
            wait = min(wait, self._next_due - time.time() + SCHEDULER_DUE_MARGIN)
        return max(wait, SCHEDULER_DUE_MARGIN)

    def _sleep(self, seconds: float) -> None:
        """time.sleep in short steps (as RQ's loop sleeps: a test that patches it to end the loop still
        does), so that a stop request ends the wait, and so does a job planned sooner (_heard)."""
        deadline = time.monotonic() + seconds
        while not self._stop_requested:
            if self._woken.is_set():
                self._woken.clear()
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, SCHEDULER_SLEEP_STEP))

    def _listen_for_plans(self) -> None:
        """A claim that plans a job under its window rate limit publishes `<at> <queue>` (lua/_window.lua),
        and this scheduler, which may be asleep until a later job or its next heartbeat, wakes in time for
        it. Not on fakeredis (no sockets): there a job planned sooner than the next wake-up waits for it."""
        channels = keys.scheduler_planned_channels(self._queue_names)
        listener = ChannelListener(
            self.connection, channels, self._heard, self.name, 'Scheduler', 'rqfast-scheduler-plans', self.log
        )
        try:
            listener.start()
        except redis.RedisError as exc:  # (the loop's own calls report and retry a server that is away)
            self.log.warning('Scheduler %s: not listening for planned jobs: %s', self.name, exc)
            return
        self._planned = listener

    def _stop_listening(self) -> None:
        listener, self._planned = self._planned, None
        if listener is not None:
            listener.stop()

    def _heard(self, message: dict[str, Any]) -> None:
        """`<at> <queue>`: a job of `queue` is due at `at` (epoch seconds); wake if that is sooner."""
        at_text, _, queue = as_text(message['data']).partition(' ')
        at = float(at_text)
        if queue in self._acquired_locks and (self._next_due is None or at < self._next_due):
            self._next_due = at
            self._woken.set()

    def request_stop(self, signum: Any = None, frame: Any = None) -> None:
        self._stop_requested = True

    def stop(self) -> None:
        """Stop the loop, release the locks still held and delete the scheduler hash (one call)."""
        self._stop_requested = True
        self._ended = True
        thread, self._process = self._process, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)
        self._release_quietly()

    def _release_all(self) -> None:
        self._call(self._queue_names | self._acquired_locks, release=RELEASE_ALL)
        self._acquired_locks = set()
        self._status = SchedulerStatus.STOPPED

    def _release_quietly(self) -> None:
        try:
            self._release_all()
        except redis.RedisError as exc:
            self.log.warning('Scheduler %s: could not release its locks: %s', self.name, exc)
