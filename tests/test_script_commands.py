"""The commands a worker's scripts run inside Redis per job, counted (INFO commandstats), not timed.

A finish-and-claim call runs RQ's layout's writes and the reads its decisions need; a command whose
effect is known to be nil for the job at hand (an EXPIRE of a key that cannot exist, a look for earlier
executions of a job never started) is left out, and kept where the job needs it.
"""

from __future__ import annotations

import pytest
import redis

from rqfast import Queue
from rqfast.scriptrecords import Plan
from rqfast.worker import SimpleWorker
from rqfast.workerscripts import outcome_shape

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

N, K = 5, 20


def _inner_commands(connection: redis.Redis, count: int) -> dict[str, int]:
    """The commands the scripts ran while a SimpleWorker drained `count` plain jobs (enqueued before)."""
    queue = Queue('inner', connection=connection)
    queue.enqueue_many([Queue.prepare_data(jobs.say_hello) for _ in range(count)])
    connection.config_resetstat()
    SimpleWorker([queue], connection=connection).work(burst=True, logging_level='WARNING')
    stats = connection.info('commandstats')
    return {name.removeprefix('cmdstat_'): int(s['calls']) for name, s in stats.items()}


def _per_job(redis_conn: redis.Redis) -> dict[str, int]:
    _inner_commands(redis_conn, 1)  # (functions loaded: FUNCTION LOAD is a cost per server, not per job)
    small, large = _inner_commands(redis_conn, N), _inner_commands(redis_conn, N + K)
    per_job = {name: round((large.get(name, 0) - small.get(name, 0)) / K) for name in set(small) | set(large)}
    return {name: n for name, n in per_job.items() if n}


# A plain job's finish of the one before and its own claim, in one call: RQ's layout's writes
LAYOUT = {
    'hmget': 1,  # the ended job's status and options
    'del': 1,  # its execution hash
    'zrem': 2,  # its started-registry member, its executions entry
    'hincrby': 1,  # the worker's successful_job_count
    'hincrbyfloat': 1,  # and total_working_time
    'hset': 4,  # the ended job's fields; the claimed job's, its execution hash, the worker's state
    'xadd': 1,  # the result
    # the result stream, the ended job's hash; the new execution hash and executions set. Not the ended
    # job's dependencies set (it has none) nor its dependents set (SMEMBERS found none)
    'expire': 4,
    'zadd': 3,  # the finished registry; the claimed job's executions set and started registry
    'smembers': 1,  # the ended job's dependents
    'exists': 1,  # suspension, paused queues, priority lanes (none)
    'lpop': 1,
    'hgetall': 1,  # the claimed job (a job never started: no ZRANGE of its earlier executions)
    'persist': 1,
    'sadd': 1,  # the worker's RQ 3.0 executions index: the new execution in
    'srem': 1,  # and the ended one out
}


def test_a_plain_job_costs_the_layout_writes_and_no_lookup_of_what_cannot_exist(redis_conn: redis.Redis) -> None:
    per_job = _per_job(redis_conn)
    per_job.pop('fcall', None)
    per_job.pop('evalsha', None)
    assert per_job == LAYOUT
    assert sum(LAYOUT.values()) == 25


@pytest.mark.parametrize('concurrency', [1, 10])  # finish_job.lua's path, finish_jobs.lua's
def test_a_job_with_dependencies_expires_its_dependencies_set_with_its_hash(
    redis_conn: redis.Redis, concurrency: int
) -> None:
    queue = Queue('inner', connection=redis_conn)
    parent = queue.enqueue(jobs.say_hello)
    child = queue.enqueue(jobs.say_hello, depends_on=parent, result_ttl=300)
    SimpleWorker([queue], connection=redis_conn, concurrency=concurrency).work(burst=True, logging_level='WARNING')

    assert child.get_status(refresh=True) == 'finished'
    assert redis_conn.exists(child.dependencies_key)
    assert 0 < redis_conn.ttl(child.dependencies_key) <= 300
    assert 0 < redis_conn.ttl(child.key) <= 300


@pytest.mark.parametrize('concurrency', [1, 10])  # finish_job.lua's path, finish_jobs.lua's
def test_a_job_started_before_has_its_earlier_execution_fenced_off_when_claimed_again(
    redis_conn: redis.Redis, concurrency: int
) -> None:
    """A job back on its queue with an execution still on record (its worker lost it): the claim ends
    that execution, so the old worker's late finish writes nothing."""
    queue = Queue('inner', connection=redis_conn)
    job = queue.enqueue(jobs.say_hello)
    stale = f'rq:execution:{job.id}:old'
    redis_conn.hset(stale, mapping={'id': 'old', 'worker_name': 'gone'})
    redis_conn.zadd(f'rq:executions:{job.id}', {'old': 9e9})
    redis_conn.hset(job.key, 'started_at', '2026-01-01T00:00:00.000000Z')

    SimpleWorker([queue], connection=redis_conn, concurrency=concurrency).work(burst=True, logging_level='WARNING')

    assert job.get_status(refresh=True) == 'finished'
    assert not redis_conn.exists(stale)
    assert redis_conn.zscore(f'rq:executions:{job.id}', 'old') is None


def test_jobs_finished_with_the_same_shape_each_get_their_own_values(redis_conn: redis.Redis) -> None:
    """An outcome's names and constants are read once per server (its shape); its values are each call's."""
    queue = Queue('inner', connection=redis_conn)
    jobs_enqueued = [queue.enqueue(jobs.say_hello, str(n)) for n in range(3)]
    SimpleWorker([queue], connection=redis_conn).work(burst=True, logging_level='WARNING')

    ended = set()
    executions = set()
    for job in jobs_enqueued:
        job.refresh()
        assert job.get_status() == 'finished' and job.return_value() == f'Hi there, {job.args[0]}!'
        ended.add(redis_conn.hget(job.key, 'ended_at'))
        result = job.latest_result()
        assert result is not None
        executions.add(redis_conn.xrange(f'rq:results:{job.id}')[0][1][b'execution_id'])
    assert len(ended) == 3 and len(executions) == 3


def test_an_outcome_name_with_a_newline_is_refused_before_redis_is_touched() -> None:
    plan = Plan(registry='finished', fields={'status': 'finished'})
    assert outcome_shape(plan, True, 30, 10, 480).startswith('finished\n')
    with pytest.raises(ValueError, match='newline'):
        outcome_shape(Plan(fields={'sta\ntus': 'finished'}), True, 30, 10, 480)
