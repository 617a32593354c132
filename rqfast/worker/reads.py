"""RQ's reading-back API, as the worker's own methods (WorkerReads, a BaseWorker mixin): Worker.all(),
find_by_key(), count(), refresh(), the current job. Reading the worker hash is workerhash.py's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from redis import Redis

from .. import keys
from ..cluster import keyspace_required
from ..job import Job
from .declared import WorkerAttributes
from .workerhash import WorkerHash, WorkerRecord, read, read_current_job_id, read_date, worker_keys, write_current_job


class WorkerReads(WorkerAttributes):
    """RQ's reading-back API, as the worker's own (Worker.all(), find_by_key(), count(), refresh(), the
    current job...): no state of its own; what it reads back lands in the worker's RQ attributes."""

    _job_id: str | None = None  # RQ's: the current job when the hash was last read
    _hash: WorkerHash  # BaseWorker's: what it writes about itself, and when

    @property
    def birth_date(self) -> datetime | None:
        return self._hash.birth_date

    @birth_date.setter
    def birth_date(self, moment: datetime | None) -> None:
        self._hash.birth_date = moment

    @property
    def last_heartbeat(self) -> datetime | None:
        return self._hash.last_heartbeat

    @last_heartbeat.setter
    def last_heartbeat(self, moment: datetime | None) -> None:
        self._hash.last_heartbeat = moment

    def get_current_job_id(self, pipeline: Any = None) -> str | None:
        """The job of one of the worker's executions (RQ 3.0's), else the hash's current_job (RQ 2.12's,
        which rqfast's claim script writes too), else the first of its executions index (cached)."""
        if pipeline is not None:
            return read_current_job_id(pipeline, self.name)
        local = self._recorder.local_execution()
        if local is not None:
            return local.job_id
        job_id = read_current_job_id(self.connection, self.name)
        if job_id:
            return job_id
        current = self.get_current_executions()
        return current[0].job_id if current else None

    def set_current_job_id(self, job_id: str | None = None, pipeline: Any = None) -> None:
        """RQ's: the claim script sets current_job in rqfast's loop; this is for code that drives a worker by hand."""
        write_current_job(pipeline if pipeline is not None else self.connection, self.name, job_id)

    def get_current_job(self) -> Job | None:
        """The job of get_current_job_id(): the execution's own instance when it has one (RQ 3.0's)."""
        local = self._recorder.local_execution()
        if local is not None and local._job is not None:
            return local._job
        job_id = self.get_current_job_id()
        if not job_id:
            return None
        job: Job = self.job_class.fetch(job_id, self.connection, self.serializer)
        if local is not None and local.job_id == job_id:
            local._job = job
        return job

    @property
    def death_date(self) -> datetime | None:
        """When the worker registered its death (the hash keeps it a minute), None while alive."""
        return read_date(self.connection, self.name, 'death')

    @property
    def shutdown_requested_date(self) -> datetime | None:
        return read_date(self.connection, self.name, 'shutdown_requested_date')

    def _apply(self, record: WorkerRecord) -> None:
        """A record read back (refresh(), find_by_key()), into the worker's RQ attributes."""
        self._recorder.set_state(record.state, write=False)
        self._job_id = record.current_job
        self.birth_date, self.last_heartbeat = record.birth, record.last_heartbeat
        self.pid, self.hostname = record.pid, record.hostname
        self.ip_address = record.ip_address or self.ip_address
        self.version = record.version or self.version
        self.python_version = record.python_version or self.python_version
        self.successful_job_count = record.successful_job_count
        self.failed_job_count = record.failed_job_count
        self.total_working_time = record.total_working_time
        self.current_job_working_time = record.current_job_working_time

    def refresh(self) -> None:
        """Read the worker hash back into this object (RQ's); nothing changes when the hash is gone."""
        record = read(self.connection, keys.worker_key(self.name), forget_if_gone=False)
        if record is not None:
            self._apply(record)
            if record.queues:
                self.queues = [
                    self.queue_class(
                        name, connection=self.connection, job_class=self.job_class, serializer=self.serializer
                    )
                    for name in record.queues
                ]

    @classmethod
    def all_keys(cls, connection: Redis | None = None, queue: Any = None) -> list[str]:
        """Keys of the live workers, of `queue` (on its connection) or of all."""
        if queue is not None:
            connection = queue.connection
        if connection is None:
            raise ValueError('"Queue" or "connection" argument is required')
        if queue is None:
            keyspace_required('Worker.all()', 'Worker.all(queue=queue), the workers of one queue')
            return worker_keys(connection, None)
        with keys.within(queue.name):
            return worker_keys(connection, queue.name)

    @classmethod
    def count(cls, connection: Redis | None = None, queue: Any = None) -> int:
        return len(cls.all_keys(connection, queue))

    @classmethod
    def all(
        cls,
        connection: Redis | None = None,
        job_class: Any = None,
        queue_class: Any = None,
        queue: Any = None,
        serializer: Any = None,
    ) -> list[Any]:
        """The live workers (of `queue`, on its connection), as instances of this class (not started)."""
        if queue is not None:
            connection = queue.connection
        if connection is None:
            raise ValueError('"Queue" or "connection" argument is required')
        with keys.within(queue.name if queue is not None else None):  # (sharded by queue: the queue's keyspace)
            found = [
                cls.find_by_key(key, connection, job_class=job_class, queue_class=queue_class, serializer=serializer)
                for key in cls.all_keys(connection, queue)
            ]
        return [worker for worker in found if worker is not None]

    @classmethod
    def find_by_key(
        cls,
        worker_key: str,
        connection: Redis,
        job_class: Any = None,
        queue_class: Any = None,
        serializer: Any = None,
    ) -> Any:
        """The worker stored at `worker_key`, as an instance of this class (not started); None if gone."""
        record = read(connection, worker_key)
        if record is None:
            return None
        worker = cls(  # type: ignore[call-arg]
            record.queues,
            name=record.name,
            connection=connection,
            job_class=job_class,
            queue_class=queue_class,
            serializer=serializer,
            prepare_for_work=False,
        )
        worker._apply(record)
        return worker
