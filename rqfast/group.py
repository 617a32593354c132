"""RQ 2.12's Group: many jobs tracked under one name, in RQ's keys (rq:group:<name>, a set of job
ids; rq:groups, the set of names).

Group.enqueue_many is one enqueue script call per 1,000 jobs that also adds them to the group, so
a job is never queued outside its group. The upkeep (ids of jobs that are gone, groups left empty)
is one script call; workers run it in their maintenance pass, as RQ's do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from uuid import uuid4

from . import keys, scripts
from .cluster import KeyspaceError, check_connection
from .exceptions import NoSuchGroupError
from .job import Job
from .maintenance import group_lock_ttl
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline

    from .queue import EnqueueData, Queue

__all__ = ['Group']


class Group:
    """A container for tracking many jobs with one identifier."""

    REDIS_GROUP_NAME_PREFIX = keys.GROUP_PREFIX
    REDIS_GROUP_KEY = keys.GROUPS
    REDIS_GROUP_CLEANING_KEY = keys.GROUP_CLEANING_LOCK  # RQ 3.0's

    def __init__(self, connection: Redis, name: str | None = None) -> None:
        self.name = name if name else uuid4().hex
        check_connection(connection)
        if keys.SHARDED:
            raise KeyspaceError(
                'RQFAST_SHARDING=queue: groups are not supported (a group may span queues, and each queue is a '
                'keyspace of its own)'
            )
        self.connection = connection
        self.key = self.get_key(self.name)

    def __repr__(self) -> str:
        return f'Group(id={self.name})'

    def cleanup(self) -> None:
        """Forget the ids of this group's jobs that were deleted or expired."""
        scripts.clean_groups(self.connection, [self.name], prune=True, drop=False)

    def enqueue_many(
        self, queue: Queue, job_datas: Iterable[EnqueueData], pipeline: Pipeline | None = None
    ) -> list[Job]:
        """Queue.enqueue_many, with every job tagged with this group and added to it in the same
        script call; queued into `pipeline` when one is given (RQ executes a caller's pipeline here;
        rqfast leaves that to the caller)."""
        return queue.enqueue_batch(job_datas, pipeline, self.name, join_group=True)

    def get_jobs(self) -> list[Job]:
        """The group's jobs that still exist (cleaning up the others first, as RQ does)."""
        self.cleanup()
        job_ids = [as_text(job_id) for job_id in self.connection.smembers(self.key)]
        return [job for job in Job.fetch_many(job_ids, self.connection) if job is not None]

    def delete_job(self, job_id: str, pipeline: Pipeline | None = None) -> None:
        """Take a job id out of the group (the job itself stays)."""
        (pipeline if pipeline is not None else self.connection).srem(self.key, job_id)

    @classmethod
    def create(cls, connection: Redis, name: str | None = None) -> Group:
        """A group object; nothing is written until jobs are enqueued into it."""
        return cls(name=name, connection=connection)

    @classmethod
    def fetch(cls, name: str, connection: Redis) -> Group:
        """An existing group; NoSuchGroupError when it has no jobs left (its set is gone)."""
        if not connection.exists(cls.get_key(name)):
            raise NoSuchGroupError
        return cls(name=name, connection=connection)

    @classmethod
    def all(cls, connection: Redis) -> list[Group]:
        """Every group that has jobs; names whose set is gone leave rq:groups, as in RQ."""
        alive, _, _ = scripts.clean_groups(connection, [], prune=False, drop=True)
        return [cls(name=name, connection=connection) for name in alive]

    @classmethod
    def get_key(cls, name: str) -> str:
        """The Redis key of the set of a group's job ids."""
        return cls.REDIS_GROUP_NAME_PREFIX + name

    @classmethod
    def acquire_maintenance_lock(cls, connection: Redis, timeout: int) -> bool:
        """RQ 3.0's lock shared by every worker, never released: it expires after `timeout` seconds, so
        the groups are cleaned at most once per window."""
        return bool(connection.set(cls.REDIS_GROUP_CLEANING_KEY, 1, nx=True, ex=timeout))

    @classmethod
    def clean_registries(cls, connection: Redis) -> None:
        """Every group forgets its jobs that are gone; groups left empty leave rq:groups (one call)."""
        scripts.clean_groups(connection, [], prune=True, drop=True)


def clean_groups_once(connection: Redis, maintenance_interval: float) -> bool:
    """RQ 3.0's Worker.clean_group_registries: clean the groups unless another worker did in this
    maintenance window (the lock expires just before the next pass); whether this call cleaned them."""
    if not Group.acquire_maintenance_lock(connection, group_lock_ttl(maintenance_interval)):
        return False
    Group.clean_registries(connection=connection)
    return True
