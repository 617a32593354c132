"""What tests/test_cluster.py runs in subprocesses (RQ_KEY_PREFIX is read at import): producers, burst
workers of each class, and the jobs, all on a RedisCluster client of the local cluster.

`python -m tests.cluster_run <what> <port> [args]`; the jobs record each run in `<prefix>:test:ran`
(a hash: job index -> runs), through the job's own connection (a horse's and a spawned child's
client rebuilt from the worker's recipe).
"""

from __future__ import annotations

import sys
import threading
from datetime import timedelta
from typing import Any

import redis.connection
from redis.cluster import RedisCluster

from rqfast import Queue, Retry, SimpleWorker, SpawnWorker, Worker, get_current_job, keys
from tests.cluster_jobs import mark

# redis-py 6.1 added transactions to a cluster's pipeline (before, pipeline(transaction=True) raises
# RedisClusterException): the kinds of caller's ClusterPipeline this redis-py has
PIPELINE_TRANSACTIONS = (True, False) if tuple(map(int, redis.__version__.split('.')[:2])) >= (6, 1) else (False,)

WORKERS: dict[str, tuple[Any, int]] = {
    'simple': (SimpleWorker, 1),
    'simple10': (SimpleWorker, 10),
    'worker': (Worker, 1),
    'spawn': (SpawnWorker, 1),
    'worker4': (Worker, 4),
    'spawn2': (SpawnWorker, 2),
}


RECORD, FLAKY = 'tests.cluster_run.record', 'tests.cluster_run.flaky'  # (by name: this runs as __main__)
MARK = 'tests.cluster_jobs.mark'


def ran_key() -> str:
    return f'{keys.PREFIX}test:ran'


def record(index: int) -> int:
    job = get_current_job()
    assert job is not None
    job.connection.hincrby(ran_key(), str(index), 1)
    return index


def flaky(name: str) -> str:
    """Fails on its first run, succeeds on the next (a retry)."""
    job = get_current_job()
    assert job is not None
    if job.connection.incr(f'{keys.PREFIX}test:flaky:{name}') == 1:
        raise RuntimeError('the first run fails')
    return name


def connect(port: int) -> Any:
    return RedisCluster(host='127.0.0.1', port=port)


def enqueue(port: int, queues: list[str], per_queue: int, marks: str, first: int = 0) -> None:
    """`per_queue` jobs on each queue: one in 50 records its run in Redis through its own connection,
    the others append to the file `marks` (tests.cluster_jobs: a spawned child imports no redis-py).
    Job ids and indexes are `job-<n>` from `first` on."""
    conn = connect(port)
    for queue_index, name in enumerate(queues):
        queue = Queue(name, connection=conn)
        base = first + queue_index * per_queue
        for index in range(base, base + per_queue):
            if index % 50 == 0:
                queue.enqueue(RECORD, index, job_id=f'job-{index}')
            else:
                queue.enqueue(MARK, index, marks, job_id=f'job-{index}')


def burst(port: int, kind: str, queue: str) -> None:
    """A burst worker of class `kind` serving `queue` (several: comma-separated, in that order)."""
    worker_class, concurrency = WORKERS[kind]
    conn = connect(port)
    options = {'concurrency': concurrency} if concurrency > 1 else {}
    queues = [Queue(name, connection=conn) for name in queue.split(',')]
    worker = worker_class(queues, connection=conn, name=f'burst-{kind}', **options)
    worker.work(burst=True, logging_level='WARNING')


def features(port: int) -> None:
    """A retried job, a dependency, a scheduled job, jobs enqueued in pipelines and by enqueue_many."""
    conn = connect(port)
    queue = Queue('features', connection=conn)
    queue.enqueue(FLAKY, 'retried', job_id='retried', retry=Retry(max=1))
    parent = queue.enqueue(RECORD, 5001, job_id='parent')
    queue.enqueue(RECORD, 5002, job_id='child', depends_on=parent)
    queue.enqueue_in(timedelta(seconds=1), RECORD, 5003, job_id='later')
    for transaction in PIPELINE_TRANSACTIONS:  # a caller's ClusterPipeline, transactional or not
        with conn.pipeline(transaction=transaction) as pipe:
            queue.enqueue(RECORD, 5004 + transaction, job_id=f'piped-{transaction}', pipeline=pipe)
            pipe.execute()
    queue.enqueue_many([Queue.prepare_data(RECORD, (5006,), job_id='many')])


def show_workers(port: int) -> None:
    """The names Worker.all() lists, and a job fetched back by id."""
    conn = connect(port)
    print(sorted(worker.name for worker in Worker.all(connection=conn)))
    job = Queue('features', connection=conn).fetch_job('child')
    print(job.get_status().value if job is not None else None)


def maintenance(port: int) -> None:
    """A job kept one second, then a maintenance pass (its one script call): prints how many expired."""
    import time

    from rqfast.maintenance import clean_registries

    conn = connect(port)
    queue = Queue('maint', connection=conn)
    queue.enqueue(MARK, 1, '/dev/null', result_ttl=1)
    SimpleWorker([queue], connection=conn).work(burst=True, logging_level='WARNING')
    time.sleep(1.1)
    print(clean_registries(conn, ['maint']).finished_expired)


def sharded_rules(port: int) -> None:
    """RQFAST_SHARDING=queue: a dependency within a queue runs; one across queues and a group are refused
    (each prints its error's first words)."""
    from rqfast.group import Group

    conn = connect(port)
    queue, other = Queue('dq', connection=conn), Queue('dr', connection=conn)
    parent = queue.enqueue(RECORD, 7001, job_id='dparent')
    queue.enqueue(RECORD, 7002, job_id='dchild', depends_on=parent)
    SimpleWorker([queue], connection=conn).work(burst=True, logging_level='WARNING')
    print(queue.fetch_job('dchild').get_status().value)  # type: ignore[union-attr]
    for refused in (
        lambda: other.enqueue(RECORD, 7003, depends_on=parent),
        lambda: Group.create(conn),
    ):
        try:
            refused()
            print('not refused')
        except ValueError as exc:
            print(str(exc).split(':')[0], '|', str(exc)[:200])


def push(index: int, marks: str, queue: str, pushed: int) -> int:
    """mark(index), then a mark job `pushed` enqueued on `queue` (the job's own connection)."""
    job = get_current_job()
    assert job is not None
    Queue(queue, connection=job.connection).enqueue(MARK, pushed, marks, job_id=f'job-{pushed}')
    return mark(index, marks)


def queue_order(port: int, marks: str) -> None:
    """RQFAST_SHARDING=queue, one SimpleWorker of `hi` then `lo` (two masters): lo's first job enqueues a
    job on hi, which runs next (before lo's other three), as RQ's queue order says."""
    conn = connect(port)
    hi, lo = Queue('hi', connection=conn), Queue('lo', connection=conn)
    lo.enqueue('tests.cluster_run.push', 0, marks, 'hi', 100, job_id='job-0')
    for index in (1, 2, 3):
        lo.enqueue(MARK, index, marks, job_id=f'job-{index}')
    SimpleWorker([hi, lo], connection=conn).work(burst=True, logging_level='WARNING')


def round_trips(port: int) -> None:
    """RQFAST_SHARDING=queue, a SimpleWorker of three queues on three masters: the commands its main
    thread sends per job of a busy queue, the first of its queues and then the last: two burst runs of
    10 and 50 jobs, (cost(50) - cost(10)) / 40 (as tests/test_worker_roundtrips.py counts them), the lower
    of two tries."""
    original = redis.connection.Connection.send_packed_command
    sent = [0]

    def counting(self: Any, command: Any, check_health: bool = True) -> Any:
        if threading.current_thread() is threading.main_thread():
            sent[0] += 1
        return original(self, command, check_health)

    redis.connection.Connection.send_packed_command = counting  # type: ignore[method-assign]
    conn = connect(port)
    names = ['ma', 'mb', 'mc']
    for busy in (names[0], names[-1]):
        per_job = []
        for attempt in range(2):  # the lower of two: a beat or a pass of the worker's in a run is no per-job cost
            costs = []
            for count in (2, 10, 50):
                Queue(busy, connection=conn).enqueue_many(
                    [Queue.prepare_data(MARK, (index, '/dev/null')) for index in range(count)]
                )
                before = sent[0]
                name = f'rt-{busy}-{count}-{attempt}'
                SimpleWorker(names, connection=conn, name=name).work(burst=True, logging_level='WARNING')
                costs.append(sent[0] - before)
            per_job.append((costs[2] - costs[1]) / 40)
        print(busy, min(per_job))


def no_hash_tag(port: int) -> None:
    """Queue() refuses the cluster connection under a prefix without a hash tag."""
    Queue('q', connection=connect(port)).enqueue(RECORD, 1)


if __name__ == '__main__':
    what, port = sys.argv[1], int(sys.argv[2])
    if what == 'enqueue':
        enqueue(port, sys.argv[4].split(','), int(sys.argv[3]), sys.argv[5], *map(int, sys.argv[6:7]))
    elif what == 'burst':
        burst(port, sys.argv[3], sys.argv[4])
    else:
        scenarios = {'features': features, 'show_workers': show_workers, 'maintenance': maintenance}
        scenarios['sharded_rules'] = sharded_rules
        scenarios['round_trips'] = round_trips
        scenarios['queue_order'] = lambda port: queue_order(port, sys.argv[3])
        {**scenarios, 'no_hash_tag': no_hash_tag}[what](port)
