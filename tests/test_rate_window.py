"""rqfast's window rate limits, RateLimit(key, rate=N, per=s): the checks, the stored fields, the claim
that starts a job only while its window has room (else plans it into the scheduled registry), the window
bound and the round trips with the scheduler running, a window beside a concurrency limit, and an RQ
worker running such a job (it ignores the window). tests/test_rate_window_fleet.py: three worker processes.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import rq

import rqfast
from rqfast import RateLimit, engine, keys
from rqfast.rate_limit import RateLimitRegistry
from rqfast.registry import FinishedJobRegistry, ScheduledJobRegistry
from rqfast.scheduler import RQScheduler
from rqfast.text import as_text
from rqfast.worker import SimpleWorker
from tests import jobs
from tests.test_worker_roundtrips import count_round_trips  # noqa: F401  (a fixture)

pytestmark = pytest.mark.timeout(60)


def started_at(conn: redis.Redis, job_ids: list[str]) -> list[float]:
    """The jobs' started_at times, as epoch floats, sorted."""
    out = []
    for job_id in job_ids:
        job = rqfast.Job.fetch(job_id, connection=conn)
        assert job.started_at is not None, job_id
        out.append(job.started_at.timestamp())
    return sorted(out)


def most_in_a_window(times: list[float], per: float) -> int:
    """The most starts any half-open window of `per` seconds holds, at any offset."""
    return max((sum(1 for u in times if t <= u < t + per) for t in times), default=0)


@pytest.mark.parametrize(
    ('kwargs', 'message'),
    [
        ({}, 'RateLimit needs concurrency=, rate= (with per=), or both'),
        ({'rate': 10}, 'rate= needs per='),
        ({'per': 1}, 'per= is the window of rate=: give rate= too'),
        ({'rate': 0, 'per': 1}, 'rate must be an integer of at least 1'),
        ({'rate': 2.5, 'per': 1}, 'rate must be an integer of at least 1'),
        ({'rate': True, 'per': 1}, 'rate must be an integer of at least 1'),
        ({'rate': 10, 'per': 0}, 'per must be a number of seconds greater than 0'),
        ({'rate': 10, 'per': -1}, 'per must be a number of seconds greater than 0'),
        ({'rate': 10, 'per': '1'}, 'per must be a number of seconds greater than 0'),
        ({'rate': 10, 'per': float('nan')}, 'per must be a number of seconds greater than 0'),
        ({'rate': 10, 'per': 86401}, 'per must be at most 86400 seconds'),
        ({'concurrency': 0, 'rate': 10, 'per': 1}, 'concurrency must be an integer of at least 1'),
    ],
)
def test_rate_limit_checks_its_window_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace('(', r'\(').replace(')', r'\)')):
        RateLimit('k', **kwargs)


def test_window_fields_are_stored_and_read_back(connection: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=connection)
    alone = q.enqueue(jobs.noop, rate_limit=RateLimit('api', rate=10, per=1))
    both = q.enqueue(jobs.noop, rate_limit=RateLimit('api', concurrency=5, rate=10, per=0.5))
    raw = {k.decode(): v.decode(errors='replace') for k, v in connection.hgetall(f'rq:job:{alone.id}').items()}
    assert (raw['rate_limit_window_key'], raw['rate_limit_rate'], raw['rate_limit_per']) == ('api', '10', '1.0')
    assert 'rate_limit_key' not in raw and 'rate_limit_concurrency' not in raw  # RQ 3.0's fields: concurrency only
    assert raw['status'] == 'queued' and q.job_ids[0] == alone.id
    fetched = rqfast.Job.fetch(both.id, connection=connection)
    assert (fetched.rate_limit_key, fetched.rate_limit_concurrency) == ('api', 5)
    assert (fetched.rate_limit_window_key, fetched.rate_limit_rate, fetched.rate_limit_per) == ('api', 10, 0.5)
    assert fetched.has_rate_limit
    assert not rqfast.Job.fetch(alone.id, connection=connection).has_rate_limit
    shown = "RateLimit(key='api', concurrency=5, rate=10, per=0.5)"
    assert repr(RateLimit('api', concurrency=5, rate=10, per=0.5)) == shown


def test_claim_starts_rate_jobs_per_window_and_plans_the_rest(connection: redis.Redis) -> None:
    """5 jobs at rate=2 per 10 s, one burst run (no scheduler): 2 run, 3 wait in the scheduled registry,
    each planned a window (plus slack) after the entry 2 places before it in the log; nothing is left on
    the queue."""
    q = rqfast.Queue('q', connection=connection)
    # each job runs 50 ms, so the two starts are at least that far apart: the plan must follow each one
    ids = [q.enqueue(jobs.long_running, 0.05, rate_limit=RateLimit('api', rate=2, per=10)).id for _ in range(5)]
    before = time.time()
    SimpleWorker(['q'], connection=connection).work(burst=True)
    finished = FinishedJobRegistry('q', connection=connection).get_job_ids()
    assert sorted(finished) == sorted(ids[:2])
    scheduled = ScheduledJobRegistry('q', connection=connection)
    assert sorted(scheduled.get_job_ids()) == sorted(ids[2:]) and q.count == 0
    assert {rqfast.Job.fetch(i, connection=connection).get_status() for i in ids[2:]} == {'scheduled'}
    planned = [score for _, score in connection.zrange(keys.scheduled_registry_key('q'), 0, -1, withscores=True)]
    starts = started_at(connection, ids[:2])
    assert starts[0] >= before - 1 and starts[1] - starts[0] >= 0.05
    # each a window (plus its 4 % slack) after the entry `rate` places before it: the 3rd after the 1st
    # start, the 4th after the 2nd start (not the 1st: the two starts may be far apart on a loaded machine,
    # or on fakeredis), the 5th after the 3rd's planned start
    assert planned[0] == pytest.approx(starts[0] + 10.4, abs=0.01)
    assert planned[1] == pytest.approx(starts[1] + 10.4, abs=0.01)
    assert planned[2] == pytest.approx(planned[0] + 10.4, abs=0.01)
    log = connection.zrange(keys.rate_limit_window_key('api'), 0, -1)
    assert len(log) == 5 and sum(b':' in m for m in log) == 2  # 2 starts, 3 planned starts
    registry = RateLimitRegistry('api', connection)
    assert registry.get_window_start_count(10) == 2
    assert registry.get_planned_job_ids() == [
        as_text(m) for m in connection.zrange(keys.scheduled_registry_key('q'), 0, -1)
    ]


def test_a_planned_job_starts_when_its_turn_comes(connection: redis.Redis) -> None:
    """The scheduled job, put back on its queue when due (as a scheduler does), starts in its window."""
    q = rqfast.Queue('q', connection=connection)
    ids = [q.enqueue(jobs.noop, rate_limit=RateLimit('api', rate=1, per=0.3)).id for _ in range(2)]
    SimpleWorker(['q'], connection=connection).work(burst=True)
    assert ScheduledJobRegistry('q', connection=connection).get_job_ids() == [ids[1]]
    time.sleep(0.35)
    SimpleWorker(['q'], connection=connection).work(burst=True, with_scheduler=True)
    assert sorted(FinishedJobRegistry('q', connection=connection).get_job_ids()) == sorted(ids)
    starts = started_at(connection, ids)
    assert starts[1] - starts[0] >= 0.3


@pytest.mark.parametrize('concurrency', [1, 2])
def test_a_sleeping_scheduler_wakes_for_a_job_a_claim_planned(redis_conn: redis.Redis, concurrency: int) -> None:
    """A scheduler asleep until its next heartbeat (10 s away) hears the claim that planned a job 0.3 s
    ahead (lua/_window.lua publishes it) and moves the job onto its queue when due, not 10 s later; the
    same from a claim of one job (concurrency 1) and of several in one call (2)."""
    q = rqfast.Queue('q', connection=redis_conn)
    scheduler = RQScheduler(['q'], connection=redis_conn, interval=10)
    scheduler.start()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not redis_conn.exists(keys.scheduler_lock_key('q')):
            time.sleep(0.01)
        time.sleep(0.1)  # (its first move found nothing scheduled: it sleeps until the next heartbeat)
        ids = [q.enqueue(jobs.noop, rate_limit=RateLimit('api', rate=1, per=0.3)).id for _ in range(2)]
        SimpleWorker(['q'], connection=redis_conn, concurrency=concurrency).work(burst=True)
        planned = redis_conn.zscore(keys.scheduled_registry_key('q'), ids[1])
        assert planned is not None
        while time.monotonic() < planned + 3 and redis_conn.zscore(keys.scheduled_registry_key('q'), ids[1]):
            time.sleep(0.01)
        moved_at = time.time()
        assert q.job_ids == [ids[1]]
        assert planned <= moved_at <= planned + 1.0, moved_at - planned
    finally:
        scheduler.stop()
    assert scheduler._planned is None  # (its listener stopped with it)


def test_window_bound_and_round_trips_with_the_scheduler(redis_conn: redis.Redis, count_round_trips: Any) -> None:  # noqa: F811
    """60 jobs at rate=10 per 0.5 s, one worker at concurrency 20 with its scheduler: no 0.5 s window holds
    more than 10 starts, the run takes about 6 windows, and the worker spends at most 1.1 round trips a job
    (the scheduler's thread aside)."""
    q = rqfast.Queue('q', connection=redis_conn)
    n, rate, per = 60, 10, 0.5
    SimpleWorker(['q'], connection=redis_conn).work(burst=True)  # scripts loaded
    ids = [q.enqueue(jobs.noop, rate_limit=RateLimit('w', rate=rate, per=per)).id for _ in range(n)]
    worker = SimpleWorker(['q'], connection=redis_conn, concurrency=20)
    begin = time.monotonic()
    counter = count_round_trips(lambda: worker.work(with_scheduler=True, max_jobs=n, logging_level='WARNING'))
    took = time.monotonic() - begin
    assert FinishedJobRegistry('q', connection=redis_conn).count == n
    times = started_at(redis_conn, ids)
    assert most_in_a_window(times, per) <= rate
    assert (n / rate - 1) * per <= times[-1] - times[0] <= (n / rate) * per + 0.5, times
    print(f'{n} jobs in {took:.2f} s, {counter.steady} round trips: {counter.steady / n:.2f} a job')
    assert counter.steady / n <= 1.1, counter.commands


def test_window_beside_a_concurrency_limit(connection: redis.Redis) -> None:
    """concurrency=1 and rate=1 per 10 s: the first runs; each next one is promoted into the freed slot,
    then planned by its window, giving its slot up: both wait scheduled, no slot held."""
    q = rqfast.Queue('q', connection=connection)
    limit = RateLimit('both', concurrency=1, rate=1, per=10)
    ids = [q.enqueue(jobs.noop, rate_limit=limit).id for _ in range(3)]
    statuses = [rqfast.Job.fetch(i, connection=connection).get_status() for i in ids]
    assert statuses == ['queued', 'rate_limited', 'rate_limited']
    SimpleWorker(['q'], connection=connection).work(burst=True)
    assert FinishedJobRegistry('q', connection=connection).get_job_ids() == ids[:1]
    assert sorted(ScheduledJobRegistry('q', connection=connection).get_job_ids()) == sorted(ids[1:])
    assert connection.zcard(keys.rate_limit_allowed_key('both')) == 0
    assert connection.zcard(keys.rate_limit_waiting_key('both')) == 0


def test_rq_worker_runs_a_window_limited_job_ignoring_the_window(redis_conn: redis.Redis) -> None:
    """RQ 2.12 reads the job (the extra fields are ignored) and its worker runs every one at once."""
    q = rqfast.Queue('q', connection=redis_conn)
    ids = [q.enqueue(jobs.noop, rate_limit=RateLimit('api', rate=1, per=60)).id for _ in range(3)]
    assert rq.job.Job.fetch(ids[0], connection=redis_conn).get_status() == 'queued'
    rq.SimpleWorker(['q'], connection=redis_conn).work(burst=True)
    assert sorted(FinishedJobRegistry('q', connection=redis_conn).get_job_ids()) == sorted(ids)


def test_jobs_without_a_window_are_left_alone(connection: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=connection)
    ids = [q.enqueue(jobs.noop).id for _ in range(5)]
    SimpleWorker(['q'], connection=connection).work(burst=True)
    assert FinishedJobRegistry('q', connection=connection).count == 5 and len(ids) == 5
    assert not connection.keys('rq:rl:*')


def _due(conn: redis.Redis, q: rqfast.Queue, job_id: str) -> None:
    """What a scheduler does with a job that came due: out of the scheduled registry, onto its queue."""
    conn.zrem(keys.scheduled_registry_key(q.name), job_id)
    conn.hset(f'rq:job:{job_id}', 'status', 'queued')
    conn.rpush(keys.queue_key(q.name), job_id)


def test_a_late_start_pushes_the_plan_back_and_an_early_one_waits(connection: redis.Redis) -> None:
    """rate=2 per 10 s (planned windows 10.4 s apart), claims at chosen moments: A and B start, C..F are
    planned (C, D at +10.4 s; E, F at +20.8 s). C claimed 0.6 s late (past the 0.4 s slack) still starts,
    and the one of E and F that would be C's 2nd successor within 10 s moves back to 10 s after C; D claimed
    5 s early waits again, planned after them."""
    q = rqfast.Queue('q', connection=connection)
    a, b, c, d, e, f = (q.enqueue(jobs.noop, rate_limit=RateLimit('api', rate=2, per=10)).id for _ in range(6))
    ref = engine.WorkerRef('w', ['q'])
    t0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
    assert engine.claim_job(connection, ref, moment=t0).job_id == a
    assert engine.claim_job(connection, ref, moment=t0).job_id == b
    assert engine.claim_job(connection, ref, moment=t0).job_id is None  # C..F planned in that one call
    scheduled = keys.scheduled_registry_key('q')
    plan = {m.decode(): s - t0.timestamp() for m, s in connection.zrange(scheduled, 0, -1, withscores=True)}
    assert plan == pytest.approx({c: 10.4, d: 10.4, e: 20.8, f: 20.8})
    _due(connection, q, c)
    late = engine.claim_job(connection, ref, moment=t0 + timedelta(seconds=11))
    assert late.job_id == c
    plan = {m.decode(): s - t0.timestamp() for m, s in connection.zrange(scheduled, 0, -1, withscores=True)}
    assert plan[d] == pytest.approx(10.4) and sorted([plan[e], plan[f]]) == pytest.approx([20.8, 21.0])
    _due(connection, q, d)
    assert engine.claim_job(connection, ref, moment=t0 + timedelta(seconds=5)).job_id is None
    plan = {m.decode(): s - t0.timestamp() for m, s in connection.zrange(scheduled, 0, -1, withscores=True)}
    assert plan[d] == pytest.approx(31.2)  # 10.4 s after the 2nd newest entry (at 20.8)
    assert sorted([plan[e], plan[f]]) == pytest.approx([20.8, 21.0])


def test_cli_rate_limits_shows_slots_and_window(redis_url: str, redis_conn: redis.Redis) -> None:
    from click.testing import CliRunner

    from rqfast.cli import main

    runner = CliRunner()
    assert runner.invoke(main, ['rate-limits', '--url', redis_url]).output == 'No rate-limit keys.\n'
    windowed, slotted = rqfast.Queue('w', connection=redis_conn), rqfast.Queue('s', connection=redis_conn)
    for n in range(4):
        windowed.enqueue(jobs.add, n, 1, rate_limit=RateLimit('window-key', rate=2, per=60))
    for n in range(3):  # no worker: the first holds the slot (queued), two wait for it
        slotted.enqueue(jobs.add, n, 2, rate_limit=RateLimit('slots-key', concurrency=1))
    SimpleWorker([windowed], connection=redis_conn).work(burst=True, logging_level='WARNING')
    result = runner.invoke(main, ['rate-limits', '--url', redis_url])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(': ', 1) for line in result.output.splitlines())
    assert set(lines) == {'window-key', 'slots-key'}
    # two started in the window, the other two planned for its next turn (in the scheduled registry)
    assert lines['window-key'].startswith('window log: 2 starts, latest '), lines
    assert '; 2 planned, next in ' in lines['window-key'], lines
    assert lines['slots-key'] == 'concurrency 1: 1 holding a slot, 2 waiting', lines
