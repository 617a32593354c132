"""rqfast.cron against RQ 2.12's: the same writes (rq as the oracle), and the guard RQ lacks: a run another
scheduler (rq's or rqfast's) already enqueued is never enqueued again by rqfast.

The guard is lua/enqueue_cron_job.lua's: before storing a run, it looks in the cron job's history for a job
another scheduler enqueued since the run's window opened (an interval job: one interval before the due time,
less a tolerance; a cron string: halfway from the previous slot) with the same queue and description.
"""

from __future__ import annotations

import importlib
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import rq.cron

from rqfast import cron, cron_job_registry, cron_scheduler_registry, keys
from rqfast.cron import CronJob, CronScheduler
from rqfast.defaults import CRON_FOLLOW_GRACE, CRON_RUN_TOLERANCE, DEFAULT_CRON_JOB_HISTORY_TTL
from rqfast.exceptions import DuplicateSchedulerError, SchedulerNotFound
from rqfast.webhook import Webhook

try:
    import jobs
    from snapshot import run_both
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import run_both  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def queued_ids(conn: redis.Redis, *queues: str) -> list[str]:
    """The ids in the queues, ordered by description (each run below has a distinct one)."""
    ids = [i.decode() for q in queues for i in conn.lrange(keys.queue_key(q), 0, -1)]
    return sorted(ids, key=lambda i: conn.hget(keys.job_key(i), 'description') or b'')


# --- rq as the oracle ------------------------------------------------------------------------------


def test_scheduler_writes_what_rq_writes(redis_conn: redis.Redis) -> None:
    """register, register_birth, enqueue_jobs, save, heartbeat: the same keys, fields, scores and TTLs."""

    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        module = importlib.import_module(f'{impl.name}.cron')
        webhook = importlib.import_module(f'{impl.name}.webhook').Webhook
        scheduler = module.CronScheduler(connection=conn, name='sched-1')
        scheduler.register(jobs.say_hello, 'default', args=('a',), interval=60)
        scheduler.register(
            jobs.say_hello, 'default', kwargs={'name': 'b'}, interval=30, job_timeout=20, result_ttl=100,
            ttl=300, failure_ttl=400, meta={'m': 1}, webhooks=[webhook('http://127.0.0.1:1/x', 'finished')],
        )  # fmt: skip
        scheduler.register(jobs.echo, 'low', args=(1, 2), interval=10, name='echoes')
        scheduler.register(jobs.noop, 'low', cron='0 9 29 2 *', name='nine')  # not due (leap days): nothing enqueued
        scheduler.register_birth()
        enqueued = scheduler.enqueue_jobs()
        scheduler.save()
        scheduler.heartbeat()
        answers = ([job.name for job in enqueued], module.get_cron_job_ids('nine', conn))
        return queued_ids(conn, 'default', 'low'), answers

    dumps = run_both(redis_conn, scenario)
    assert 'rq:cron_job:echoes:jobs' in dumps['rq'] and 'rq:cron_jobs' in dumps['rq']


def test_cron_job_enqueue_writes_what_rq_writes(redis_conn: redis.Redis) -> None:
    """CronJob.enqueue, again and again: the history (trimmed, with its TTL) and the registry as rq's."""

    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        module = importlib.import_module(f'{impl.name}.cron')
        cron_job = module.CronJob(queue_name='default', func=jobs.say_hello, interval=5, name='greeter')
        created = [cron_job.enqueue(conn) for _ in range(3)]
        other = module.CronJob(queue_name='default', func=jobs.add, args=(1, 2), cron='*/5 * * * *')
        created.append(other.enqueue(conn))
        return created, [module.get_cron_job_ids('greeter', conn) == [j.id for j in reversed(created[:3])]]

    run_both(redis_conn, scenario)


def test_monitoring_form_round_trips_with_rq(redis_conn: redis.Redis) -> None:
    """A scheduler saved by rq is fetched by rqfast, and one saved by rqfast by rq, with the same cron jobs."""
    theirs = rq.cron.CronScheduler(connection=redis_conn, name='theirs')
    theirs.register(jobs.say_hello, 'default', args=('x',), interval=60, meta={'k': 'v'})
    theirs.register(jobs.noop, 'low', cron='*/5 * * * *', name='five')
    theirs.save()
    ours = CronScheduler(connection=redis_conn, name='ours')
    ours.register(jobs.say_hello, 'default', args=('x',), interval=60, meta={'k': 'v'})
    ours.register(jobs.noop, 'low', cron='*/5 * * * *', name='five')
    ours.save()
    for fetched, original in (
        (CronScheduler.fetch('theirs', redis_conn), theirs),
        (rq.cron.CronScheduler.fetch('ours', redis_conn), ours),
    ):
        assert [job.to_dict() for job in fetched.get_jobs()] == [job.to_dict() for job in original.get_jobs()]
    assert redis_conn.hget(theirs.key, 'cron_jobs') == redis_conn.hget(ours.key, 'cron_jobs')


# --- the guard: a run another scheduler enqueued is not enqueued again -------------------------------


def history(conn: redis.Redis, name: str) -> list[tuple[str, float]]:
    return [(i.decode(), s) for i, s in conn.zrange(keys.cron_job_history_key(name), 0, -1, withscores=True)]


def test_second_rqfast_scheduler_follows_the_first(connection: redis.Redis) -> None:
    redis_conn = connection  # the real server and fakeredis
    first, second = CronScheduler(redis_conn, name='a'), CronScheduler(redis_conn, name='b')
    for scheduler in (first, second):
        scheduler.register(jobs.say_hello, 'default', args=('x',), interval=30)
    assert len(first.enqueue_jobs()) == 1
    assert second.enqueue_jobs() == []
    [(_, score)] = history(redis_conn, f'{jobs.__name__}.say_hello')
    assert redis_conn.llen(keys.queue_key('default')) == 1
    followed = second.get_jobs()[0]
    assert followed.latest_enqueue_time == datetime.fromtimestamp(score, tz=timezone.utc)
    assert followed.next_enqueue_time == followed.latest_enqueue_time + timedelta(seconds=30)
    assert followed.follow_grace == CRON_FOLLOW_GRACE
    # the follower waits its grace past the due time: its sleep says so
    assert 29 < second.calculate_sleep_interval() <= 30 + CRON_FOLLOW_GRACE
    assert second.calculate_sleep_interval() > first.calculate_sleep_interval()


def test_rqfast_refuses_a_run_rq_enqueued(redis_conn: redis.Redis) -> None:
    theirs = rq.cron.CronScheduler(connection=redis_conn, name='theirs')
    theirs.register(jobs.say_hello, 'default', args=('x',), interval=30)
    assert len(theirs.enqueue_jobs()) == 1
    ours = CronScheduler(redis_conn, name='ours')
    ours.register(jobs.say_hello, 'default', args=('x',), interval=30)
    assert ours.enqueue_jobs() == []
    assert redis_conn.llen(keys.queue_key('default')) == 1
    assert ours.get_jobs()[0].latest_enqueue_time is not None


def test_same_name_other_arguments_or_queue_is_another_run(redis_conn: redis.Redis) -> None:
    """Cron jobs share a history when they share a name (by default the function's): a run of one with
    other arguments, or on another queue, does not stand for a run of another."""
    first, second = CronScheduler(redis_conn, name='a'), CronScheduler(redis_conn, name='b')
    first.register(jobs.say_hello, 'default', args=('x',), interval=30)
    second.register(jobs.say_hello, 'default', args=('y',), interval=30)
    second.register(jobs.say_hello, 'other', args=('x',), interval=30)
    assert len(first.enqueue_jobs()) == 1
    assert len(second.enqueue_jobs()) == 2
    assert redis_conn.llen(keys.queue_key('default')) == 2 and redis_conn.llen(keys.queue_key('other')) == 1


def test_window_bounds_of_an_interval_job(redis_conn: redis.Redis) -> None:
    """A run by another scheduler counts from one interval (less the tolerance) before the due time."""
    theirs = rq.cron.CronJob(queue_name='default', func=jobs.say_hello, interval=10)
    ran_at = theirs.enqueue(redis_conn).enqueued_at
    ours = CronJob(queue_name='default', func=jobs.say_hello, interval=10)
    # never run: any run in the last interval stands for this one
    assert ours.enqueue_run(redis_conn, ran_at + timedelta(seconds=9.9))[0] is None
    ours.latest_enqueue_time = ran_at  # once it ran: a tolerance, for runs racing the previous one
    slack = timedelta(seconds=10 - min(CRON_RUN_TOLERANCE, 10 / 4))
    job, other = ours.enqueue_run(redis_conn, ran_at + slack - timedelta(seconds=0.2))
    assert job is None and other is not None and abs((other - ran_at).total_seconds()) < 1e-5
    job, other = ours.enqueue_run(redis_conn, ran_at + slack + timedelta(seconds=0.2))
    assert job is not None and other is None
    assert redis_conn.llen(keys.queue_key('default')) == 2


def test_window_of_a_cron_string_starts_halfway_from_the_previous_slot() -> None:
    job = CronJob(queue_name='default', func=jobs.noop, cron='*/10 * * * *')
    due = datetime(2026, 1, 1, 12, 10, tzinfo=timezone.utc)
    assert job.run_window(due) == due.timestamp() - 300
    seconds = CronJob(queue_name='default', func=jobs.noop, cron='* * * * * */4')
    due = datetime(2026, 1, 1, 12, 0, 8, tzinfo=timezone.utc)
    assert seconds.run_window(due) == due.timestamp() - 2


def test_cron_string_run_refused_in_its_slot_only(redis_conn: redis.Redis) -> None:
    theirs = rq.cron.CronJob(queue_name='default', func=jobs.noop, cron='* * * * * */10')
    ran_at = theirs.enqueue(redis_conn).enqueued_at
    slot = ran_at.replace(second=ran_at.second - ran_at.second % 10, microsecond=0)
    ours = CronJob(queue_name='default', func=jobs.noop, cron='* * * * * */10')
    assert ours.enqueue_run(redis_conn, slot)[0] is None  # the run rq enqueued
    # the first slot whose window (from halfway after the previous slot) opens after rq's run
    later = slot + timedelta(seconds=10 if ran_at - slot < timedelta(seconds=5) else 20)
    assert ours.run_window(later) > ran_at.timestamp() >= ours.run_window(slot)
    assert ours.enqueue_run(redis_conn, later)[0] is not None


def test_a_history_entry_whose_job_is_gone_counts_as_a_run(redis_conn: redis.Redis) -> None:
    """The conservative side: a run whose job was deleted (result_ttl=0, `rq empty`) may have been this
    one, so it is not enqueued again."""
    theirs = rq.cron.CronJob(queue_name='default', func=jobs.say_hello, args=('gone',), interval=60)
    theirs.enqueue(redis_conn).delete()
    ours = CronScheduler(redis_conn, name='ours')
    ours.register(jobs.noop, 'default', interval=60, name=theirs.name)  # another function, same name
    assert ours.enqueue_jobs() == []


def test_own_runs_never_refuse(redis_conn: redis.Redis) -> None:
    """One scheduler's cron jobs sharing a name never block each other, their jobs gone or not."""
    scheduler = CronScheduler(redis_conn, name='one')
    for word in ('a', 'b', 'c'):
        scheduler.register(jobs.say_hello, 'default', args=(word,), interval=60)
    assert len(scheduler.enqueue_jobs()) == 3
    redis_conn.delete(*[keys.job_key(i) for i in queued_ids(redis_conn, 'default')])
    for job in scheduler.get_jobs():
        job.next_enqueue_time = datetime.now(timezone.utc) - timedelta(seconds=1)
    assert len(scheduler.enqueue_jobs()) == 3


def test_unguarded_enqueue_always_enqueues(redis_conn: redis.Redis) -> None:
    """CronJob.enqueue is RQ's: it enqueues whatever ran before (the guard is the scheduler's)."""
    first = CronJob(queue_name='default', func=jobs.noop, interval=60)
    second = CronJob(queue_name='default', func=jobs.noop, interval=60)
    first.enqueue(redis_conn)
    second.enqueue(redis_conn)
    assert len(history(redis_conn, first.name)) == 2


def test_refused_run_writes_nothing(redis_conn: redis.Redis) -> None:
    theirs = rq.cron.CronJob(queue_name='default', func=jobs.noop, interval=60)
    theirs.enqueue(redis_conn)
    before = {key: redis_conn.dump(key) for key in redis_conn.keys('*')}
    ours = CronJob(queue_name='default', func=jobs.noop, interval=60)
    assert ours.enqueue_run(redis_conn, datetime.now(timezone.utc))[0] is None
    assert {key: redis_conn.dump(key) for key in redis_conn.keys('*')} == before


# --- the rest of the API ---------------------------------------------------------------------------


def test_bad_input_fails_before_redis() -> None:
    with pytest.raises(ValueError, match='both interval and cron'):
        CronJob(queue_name='q', func=jobs.noop, interval=1, cron='* * * * *')
    with pytest.raises(ValueError, match='either interval or cron'):
        CronJob(queue_name='q', func=jobs.noop)
    with pytest.raises(ValueError, match='positive'):
        CronJob(queue_name='q', func=jobs.noop, interval=-5)
    with pytest.raises(ValueError):
        CronJob(queue_name='q', func=jobs.noop, cron='not a cron string')
    with pytest.raises(TypeError, match='Webhook'):
        CronJob(queue_name='q', func=jobs.noop, interval=1, webhooks=['http://x'])  # type: ignore[list-item]
    with pytest.raises(ValueError, match='no function'):
        CronJob(queue_name='q', func_name='a.b', interval=1).enqueue(redis.Redis(port=1))


def test_registries(redis_conn: redis.Redis) -> None:
    cron_job_registry.add('old', redis_conn, enqueue_timestamp=1.0)
    cron_job_registry.add('new', redis_conn)
    assert cron_job_registry.get_names(redis_conn, cleanup=False) == ['old', 'new']
    assert cron_job_registry.get_names(redis_conn) == ['new']
    scheduler = CronScheduler(redis_conn, name='s1')
    cron_scheduler_registry.register(scheduler)
    with pytest.raises(DuplicateSchedulerError):
        cron_scheduler_registry.register(scheduler)
    assert cron_scheduler_registry.get_keys(redis_conn) == ['s1']
    redis_conn.zadd(keys.CRON_SCHEDULERS, {'stale': 1.0})
    assert cron_scheduler_registry.cleanup(redis_conn) == 1
    cron_scheduler_registry.unregister(scheduler)
    with pytest.raises(SchedulerNotFound):
        cron_scheduler_registry.unregister(scheduler)


def test_history_ttl_and_trim(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cron, 'DEFAULT_CRON_JOB_HISTORY_LIMIT', 3)
    job = CronJob(queue_name='default', func=jobs.noop, interval=1, name='trimmed')
    made = [job.enqueue(redis_conn).id for _ in range(5)]
    assert job.get_job_ids(redis_conn) == made[::-1][:3]
    assert 0 < redis_conn.ttl(job.job_history_key) <= DEFAULT_CRON_JOB_HISTORY_TTL


def test_module_register_and_create_cron(redis_conn: redis.Redis) -> None:
    data = cron.register(jobs.noop, 'default', interval=5, webhooks=[Webhook('http://127.0.0.1:1/', 'failed')])
    assert data['webhooks'] and data['interval'] == 5
    scheduler = cron.create_cron(redis_conn)
    assert [job.func for job in scheduler.get_jobs()] == [jobs.noop]
    assert cron.create_cron(redis_conn).get_jobs() == []


def test_rq_config_loads_unchanged(redis_conn: redis.Redis, tmp_path: Any) -> None:
    """A config written for `rq cron` (`from rq import cron`) registers its jobs with rqfast's scheduler."""
    config = tmp_path / 'rq_style_cron_config.py'
    config.write_text(
        f'from rq import cron\nfrom {jobs.__name__} import noop\n'
        "cron.register(noop, 'default', interval=7)\ncron.register(noop, 'low', cron='*/5 * * * *')\n"
    )
    scheduler = CronScheduler(redis_conn)
    scheduler.load_config_from_file(str(config))
    assert sorted((job.queue_name, job.interval, job.cron) for job in scheduler.get_jobs()) == [
        ('default', 7, None),
        ('low', None, '*/5 * * * *'),
    ]
    assert rq.cron._job_data_registry == [] and cron._job_data_registry == []


def test_grace_only_when_other_schedulers_are_alive(redis_conn: redis.Redis) -> None:
    """Alone, a scheduler runs jobs at their due time (RQ's timing); with another one registered, it waits
    a grace past it (so an rq scheduler, which never checks, enqueues first and this one refuses)."""
    ours = CronScheduler(redis_conn, name='ours')
    job = ours.register(jobs.noop, 'default', interval=60)
    job.set_enqueue_time(datetime.now(timezone.utc))
    ours.register_birth()
    ours.heartbeat()
    assert ours.schedulers_alive == 1 and 59 < ours.calculate_sleep_interval() <= 60
    job.next_enqueue_time = datetime.now(timezone.utc) - timedelta(seconds=0.05)
    assert ours.calculate_sleep_interval() == 0
    rq.cron.CronScheduler(connection=redis_conn, name='theirs').register_birth()
    ours.heartbeat()
    assert ours.schedulers_alive == 2
    assert 0 < ours.calculate_sleep_interval() <= CRON_FOLLOW_GRACE
    assert ours.enqueue_jobs() == []  # not yet: within the grace
    time.sleep(CRON_FOLLOW_GRACE)
    assert ours.enqueue_jobs() == [job]
