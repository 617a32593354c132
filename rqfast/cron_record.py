"""The Redis side of a CronScheduler, as RQ 2.12 keeps it: its hash `rq:cron_scheduler:<name>` (TTL
DEFAULT_CRON_SCHEDULER_TTL, refreshed by each heartbeat; its cron jobs in RQ's monitoring form) and its
entry in `rq:cron_schedulers`."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from . import cron_scheduler_registry, keys
from .dates import str_to_date, utcformat
from .defaults import DEFAULT_CRON_SCHEDULER_TTL, DEFAULT_RESULT_TTL
from .exceptions import SchedulerNotFound
from .text import NOT_JSON_SERIALIZABLE, decode_redis_hash, safe_json_dumps
from .webhook import Webhook

if TYPE_CHECKING:
    import logging

    from redis import Redis
    from redis.client import Pipeline
    from typing_extensions import Self


def cron_job_fields(job: Any) -> dict[str, Any]:
    """A CronJob in RQ's monitoring form (CronJob.to_dict): JSON text for args, kwargs, meta and webhooks."""
    data: dict[str, Any] = {
        'func_name': job.func_name,
        'name': job.name,
        'queue_name': job.queue_name,
        'args': safe_json_dumps(job.args) if job.args else None,
        'kwargs': safe_json_dumps(job.kwargs) if job.kwargs else None,
        'interval': job.interval,
        'cron': job.cron,
        'latest_enqueue_time': utcformat(job.latest_enqueue_time) if job.latest_enqueue_time else None,
        'next_enqueue_time': utcformat(job.next_enqueue_time) if job.next_enqueue_time else None,
    }
    for option, value in job.job_options.items():
        if option == 'meta':
            value = safe_json_dumps(value)
        elif option == 'webhooks':
            value = json.dumps([webhook.to_dict() for webhook in value])
        data[option] = value
    return data


def cron_job_arguments(data: dict[str, Any]) -> dict[str, Any]:
    """CronJob's arguments from cron_job_fields' form (no func; a value that was not JSON stays RQ's
    placeholder text)."""

    def parsed(field: str) -> Any:
        value = data.get(field)
        return json.loads(value) if value and value != NOT_JSON_SERIALIZABLE else value

    args, webhooks = parsed('args'), parsed('webhooks')
    return {
        'queue_name': data['queue_name'],
        'func_name': data['func_name'],
        'name': data.get('name', ''),
        'args': tuple(args) if isinstance(args, list) else args,
        'kwargs': parsed('kwargs'),
        'interval': data.get('interval'),
        'cron': data.get('cron'),
        'job_timeout': data.get('job_timeout'),
        'result_ttl': data.get('result_ttl', DEFAULT_RESULT_TTL),
        'ttl': data.get('ttl'),
        'failure_ttl': data.get('failure_ttl'),
        'meta': parsed('meta'),
        'webhooks': [Webhook.from_dict(w) for w in webhooks] if isinstance(webhooks, list) else None,
    }


class SchedulerRecord:
    """CronScheduler's persistence, registration and heartbeat (a mixin: the scheduler holds the state)."""

    connection: Redis
    name: str
    hostname: str
    pid: int
    config_file: str
    created_at: datetime
    log: logging.Logger
    _cron_jobs: list[Any]
    schedulers_alive: int = 1  # rqfast's: schedulers (this one included) that sent a heartbeat lately

    def _job_from_dict(self, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    @property
    def key(self) -> str:
        return keys.cron_scheduler_key(self.name)

    def to_dict(self) -> dict[str, str]:
        return {
            'hostname': self.hostname,
            'pid': str(self.pid),
            'name': self.name,
            'created_at': utcformat(self.created_at),
            'config_file': self.config_file or '',
            'cron_jobs': json.dumps([job.to_dict() for job in self._cron_jobs]),
        }

    def save(self, pipeline: Pipeline | None = None) -> None:
        """Write the scheduler's hash, with its TTL (into `pipeline` when given)."""
        client: Any = pipeline if pipeline is not None else self.connection.pipeline()
        client.hset(self.key, mapping=self.to_dict())
        client.expire(self.key, DEFAULT_CRON_SCHEDULER_TTL)
        if pipeline is None:
            client.execute()

    def restore(self, raw_data: dict[Any, Any]) -> None:
        data = decode_redis_hash(raw_data, decode_values=True)
        self.hostname = data.get('hostname', '')
        self.pid = int(data.get('pid', 0))
        self.name = data.get('name', self.name)
        if data.get('created_at'):
            self.created_at = str_to_date(data['created_at'])
        self.config_file = data.get('config_file', '')
        self._cron_jobs = []
        if data.get('cron_jobs'):
            try:
                self._cron_jobs = [self._job_from_dict(job) for job in json.loads(data['cron_jobs'])]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                self.log.warning(f'Failed to restore cron jobs: {exc}')

    @classmethod
    def fetch(cls, name: str, connection: Redis) -> Self:
        raw = connection.hgetall(keys.cron_scheduler_key(name))
        if not raw:
            raise SchedulerNotFound(f"CronScheduler with name '{name}' not found")
        scheduler = cls(connection=connection, name=name)  # type: ignore[call-arg]
        scheduler.restore(raw)
        return scheduler

    @classmethod
    def all(cls, connection: Redis, cleanup: bool = True) -> list[Self]:
        """Every registered scheduler whose hash still exists (stale registrations dropped first)."""
        if cleanup:
            cron_scheduler_registry.cleanup(connection)
        found = []
        for name in cron_scheduler_registry.get_keys(connection):
            try:
                found.append(cls.fetch(name, connection))
            except SchedulerNotFound:
                continue
        return found

    def register_birth(self) -> None:
        self.log.info(f'CronScheduler {self.name}: registering birth...')
        with self.connection.pipeline() as pipeline:
            cron_scheduler_registry.register(self, pipeline)
            self.save(pipeline)
            pipeline.execute()

    def register_death(self, pipeline: Pipeline | None = None) -> None:
        self.log.info(f'CronScheduler {self.name}: registering death...')
        cron_scheduler_registry.unregister(self, pipeline)

    def heartbeat(self) -> None:
        """Refresh the registry score and the hash's TTL; re-create either when it is gone. Counts the
        live schedulers on the way (the same round trip)."""
        with self.connection.pipeline() as pipeline:
            pipeline.zadd(keys.CRON_SCHEDULERS, {self.name: time.time()})
            pipeline.expire(self.key, DEFAULT_CRON_SCHEDULER_TTL)
            pipeline.zcount(keys.CRON_SCHEDULERS, time.time() - DEFAULT_CRON_SCHEDULER_TTL, '+inf')
            added, refreshed, self.schedulers_alive = pipeline.execute()
        if not refreshed:
            self.save()
        if added:
            self.log.info('CronScheduler %s: re-registered in scheduler registry', self.name)
        else:
            self.log.debug('CronScheduler %s: heartbeat sent successfully', self.name)

    @property
    def last_heartbeat(self) -> datetime | None:
        score = self.connection.zscore(keys.CRON_SCHEDULERS, self.name)
        return None if score is None else datetime.fromtimestamp(score, tz=timezone.utc)
