"""What an RQ app's tools hand an rqfast worker: RQ's own queue objects, Worker.all(queue=q), plain fakeredis.

django-rq's default queues are subclasses of rq.Queue (DjangoRQ): an app switches only WORKER_CLASS, so
an rqfast worker takes any queue object RQ's would, by its name and connection.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redis
import rq

from rqfast import Queue, SimpleWorker, Worker
from rqfast.job import Job
from rqfast.status import JobStatus

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]


class DjangoRQ(rq.Queue):
    """django-rq's queue class, as far as a worker sees it: an rq.Queue subclass."""

    def __init__(self, *args: object, autocommit: bool = True, **kwargs: object) -> None:
        self._autocommit = autocommit
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize('worker_class', [SimpleWorker, Worker])
def test_an_rq_queue_subclass_is_worked_end_to_end(redis_conn: redis.Redis, worker_class: type[SimpleWorker]) -> None:
    rq_queue = DjangoRQ('mail', connection=redis_conn)
    job = rq_queue.enqueue(jobs.add, 2, 3)
    worker = worker_class([rq_queue, DjangoRQ('low', connection=redis_conn)])  # no connection=: the queue's
    assert worker.queue_names() == ['mail', 'low'] and worker.connection is redis_conn

    assert worker.work(burst=True)

    assert rq.job.Job.fetch(job.id, connection=redis_conn).get_status() == 'finished'
    assert Job.fetch(job.id, connection=redis_conn).return_value() == 5


def test_a_single_rq_queue_and_a_mix(fake_conn: redis.Redis) -> None:
    one = SimpleWorker(rq.Queue('solo', connection=fake_conn))
    assert one.queue_names() == ['solo']
    mixed = SimpleWorker(['a', rq.Queue('b', connection=fake_conn), Queue('c', connection=fake_conn)])
    assert mixed.queue_names() == ['a', 'b', 'c'] and all(isinstance(q, Queue) for q in mixed.queues)
    with pytest.raises(TypeError, match='queue names or queue objects'):
        SimpleWorker([object()], connection=fake_conn)


def test_worker_all_takes_rq_queue_objects(connection: redis.Redis) -> None:
    queue = Queue('tools', connection=connection)
    worker = SimpleWorker([queue])
    worker.register_birth()
    try:
        rq_queue = rq.Queue('tools', connection=connection)
        assert [w.name for w in SimpleWorker.all(connection, queue=rq_queue)] == [worker.name]
        assert SimpleWorker.all_keys(connection, queue=rq_queue) == [worker.key]
    finally:
        worker.register_death()


def test_plain_fakeredis_without_lua_says_what_to_install(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules['lupa'] = None  # fakeredis as installed without its lua extra
        import fakeredis
        from rqfast import Queue
        from rqfast.scripts import LuaUnavailableError
        try:
            Queue(connection=fakeredis.FakeRedis()).enqueue('builtins.len', ())
        except LuaUnavailableError as exc:
            print(exc)
        """
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True, timeout=60, cwd=root, check=True
    ).stdout
    assert 'pip install "fakeredis[lua]"' in out


def test_a_job_status_after_rq_enqueue_and_rqfast_work(fake_conn: redis.Redis) -> None:
    rq_queue = DjangoRQ(connection=fake_conn)
    job = rq_queue.enqueue(jobs.div_by_zero)
    SimpleWorker([rq_queue]).work(burst=True)
    assert Job.fetch(job.id, connection=fake_conn).get_status() == JobStatus.FAILED
