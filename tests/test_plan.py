"""engine.plan on its own: every outcome, a pinned time, no Redis (the job's fakeredis is never written)."""

from __future__ import annotations

import calendar
import copy
import pickle
from datetime import datetime, timedelta, timezone
from typing import Any

import fakeredis
import pytest

from rqfast import Retry, engine
from rqfast.dates import epoch_seconds, utcformat
from rqfast.defaults import DEFAULT_FAILURE_TTL
from rqfast.job import Job
from rqfast.outcome import Outcome, OutcomeKind
from rqfast.results import Result, encode_exc_string, encode_return_value

NOW = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
STARTED = NOW - timedelta(seconds=3)
ENDED = NOW - timedelta(seconds=1)
EPOCH = epoch_seconds(NOW)
RUN = {'worker_name': 'w1', 'execution_id': 'x1', 'started_at': STARTED}


def make_job(**attrs: Any) -> Job:
    """A job as the worker holds it after running it."""
    job = Job.create('operator.add', args=(1, 2), connection=fakeredis.FakeStrictRedis(), id='j1')
    assert job.data  # serialized, as the job a worker restores from its hash is
    job.origin = 'q'
    job.worker_name = 'w1'
    job.started_at, job.ended_at, job.last_heartbeat = STARTED, ENDED, ENDED
    for name, value in attrs.items():
        setattr(job, name, value)
    return job


def ended_fields(status: str | None, ended: datetime | None = ENDED) -> dict[str, Any]:
    fields = {
        'started_at': utcformat(STARTED),
        'ended_at': utcformat(ended) if ended else '',
        'last_heartbeat': utcformat(ENDED),
        'worker_name': 'w1',
    }
    return fields if status is None else {**fields, 'status': status}


def execution(ended: datetime | None = ENDED) -> dict[str, Any]:
    fields = {'worker_name': 'w1', 'execution_id': 'x1', 'execution_started_at': repr(STARTED.timestamp())}
    return fields if ended is None else {**fields, 'execution_ended_at': repr(ended.timestamp())}


def failure(exc_string: str = 'Traceback: boom') -> Outcome:
    return Outcome(OutcomeKind.FAILURE, exc_string=exc_string)


# --- success


def test_success_finishes_with_a_result_entry() -> None:
    job = make_job()

    plan = engine.plan(job, Outcome(OutcomeKind.SUCCESS, 3), NOW, default_result_ttl=500, **RUN)

    assert plan == engine.Plan(
        registry='finished',
        registry_score=EPOCH + 500,
        job_ttl=500,
        release_as='finished',
        counter='successful_job_count',
        stream_ttl=500,
        fields=ended_fields('finished'),
        stream={
            'type': Result.Type.SUCCESSFUL.value,
            **execution(),
            'return_value': encode_return_value(job.serializer, 3),
        },
    )


def test_success_result_ttl_zero_and_minus_one() -> None:
    gone = engine.plan(make_job(result_ttl=0), Outcome(OutcomeKind.SUCCESS, 3), NOW, **RUN)
    kept = engine.plan(make_job(result_ttl=-1), Outcome(OutcomeKind.SUCCESS, None), NOW, **RUN)

    assert (gone.registry, gone.stream, gone.job_ttl) == ('', {}, 'delete')
    assert gone.fields == ended_fields(None)  # no status: the hash is deleted anyway
    assert (kept.registry_score, kept.job_ttl, kept.stream_ttl) == ('+inf', 'persist', -1)
    assert 'return_value' not in kept.stream


def test_repeat_goes_back_with_its_result_and_meta() -> None:
    job = make_job(repeats_left=2, repeat_intervals=[10, 20], meta={'m': 1}, ttl=900)

    plan = engine.plan(job, Outcome(OutcomeKind.SUCCESS, 'v'), NOW, **RUN)

    # RQ 3.0: the intervals are taken in order; the job keeps the ones left
    assert (plan.put_back, plan.schedule_score) == ('schedule', EPOCH + 10)
    assert plan.fields['repeats_left'] == 1
    assert plan.fields['repeat_intervals'] == '[20]'
    assert plan.fields['result'] == pickle.dumps('v', protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(plan.fields['meta']) == {'m': 1}
    assert plan.job_ttl == 900
    assert plan.registry == 'finished' and plan.release_as == 'finished'


def test_repeat_intervals_in_rq2_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """RQ 2.12 indexes the intervals by the repeats left after this one (so [10, 20] runs 20 then 10)
    and never rewrites them."""
    monkeypatch.setattr('rqfast.defaults.RQFAST_COMPAT', '2.12')
    job = make_job(repeats_left=2, repeat_intervals=[10, 20])

    plan = engine.plan(job, Outcome(OutcomeKind.SUCCESS, 'v'), NOW, **RUN)

    assert (plan.put_back, plan.schedule_score) == ('schedule', EPOCH + 20)
    assert 'repeat_intervals' not in plan.fields


def test_repeat_without_interval_goes_back_on_the_queue() -> None:
    front = engine.plan(make_job(repeats_left=1, enqueue_at_front=True), Outcome(OutcomeKind.SUCCESS), NOW)
    back = engine.plan(make_job(repeats_left=1), Outcome(OutcomeKind.SUCCESS), NOW)

    assert (front.put_back, back.put_back) == ('front', 'queue')
    assert 'result' not in back.fields and back.job_ttl == ''


# --- a returned Retry


def test_returned_retry_runs_again_after_its_interval() -> None:
    job = make_job(ttl=600)
    retry = Retry(max=2, interval=[5, 50])

    plan = engine.plan(job, Outcome(OutcomeKind.RETRY, retry), NOW, **RUN)

    encoded = encode_return_value(job.serializer, retry)
    assert plan == engine.Plan(
        counter='failed_job_count',
        put_back='schedule',
        schedule_score=EPOCH + 5,
        job_ttl=600,
        fields={**ended_fields(None), 'number_of_retries': 1, 'result': job.serializer.dumps(retry)},
        stream={'type': Result.Type.RETRIED.value, 'return_value': encoded, **execution()},
    )


@pytest.mark.parametrize('compat', ['3.0', '2.12'])
def test_returned_retry_enqueue_at_front(monkeypatch: pytest.MonkeyPatch, compat: str) -> None:
    """RQ 3.0: a returned Retry(enqueue_at_front=True) goes back at the front and the job keeps
    enqueue_at_front_on_retry (the scheduler honours it for an interval's retry); RQ 2.12: at the back."""
    monkeypatch.setattr('rqfast.defaults.RQFAST_COMPAT', compat)
    now_ = engine.plan(make_job(), Outcome(OutcomeKind.RETRY, Retry(max=2, enqueue_at_front=True)), NOW, **RUN)
    later = engine.plan(
        make_job(), Outcome(OutcomeKind.RETRY, Retry(max=2, interval=5, enqueue_at_front=True)), NOW, **RUN
    )

    assert now_.put_back == ('front' if compat == '3.0' else 'queue')
    assert later.put_back == 'schedule'
    for plan in (now_, later):
        assert plan.fields.get('enqueue_at_front_on_retry') == (1 if compat == '3.0' else None)


def test_returned_retry_past_its_max_fails() -> None:
    job = make_job(number_of_retries=2, failure_ttl=300)

    plan = engine.plan(job, Outcome(OutcomeKind.RETRY, Retry(max=2)), NOW, **RUN)

    assert (plan.registry, plan.registry_score, plan.job_ttl, plan.stream_ttl) == ('failed', EPOCH + 300, 300, 300)
    assert plan.fields == ended_fields('failed')
    assert plan.stream['type'] == Result.Type.MAX_RETRIES_EXCEEDED.value
    assert plan.release_as == 'failed' and plan.put_back == ''


# --- failure, stop, poison


def test_failure_with_retries_left_is_retried() -> None:
    job = make_job(retries_left=2, retry_intervals=[3, 7], enqueue_at_front_on_retry=True, ttl=100)

    plan = engine.plan(job, failure(), NOW, **RUN)

    assert plan == engine.Plan(
        counter='failed_job_count',
        put_back='schedule',
        schedule_score=EPOCH + 3,
        job_ttl=100,
        fields={**ended_fields(None), 'retries_left': 1},
    )


def test_failure_without_interval_is_requeued_at_the_front() -> None:
    plan = engine.plan(make_job(retries_left=1, enqueue_at_front_on_retry=True), failure(), NOW, **RUN)
    assert (plan.put_back, plan.fields['retries_left'], plan.stream) == ('front', 0, {})


def test_failure_without_retries_fails() -> None:
    plan = engine.plan(make_job(), failure(), NOW, **RUN)

    assert plan == engine.Plan(
        registry='failed',
        registry_score=EPOCH + DEFAULT_FAILURE_TTL,
        job_ttl=DEFAULT_FAILURE_TTL,
        release_as='failed',
        counter='failed_job_count',
        fields=ended_fields('failed'),
        stream={'type': Result.Type.FAILED.value, 'exc_string': encode_exc_string('Traceback: boom'), **execution()},
    )


def test_failure_ttl_minus_one_keeps_everything() -> None:
    plan = engine.plan(make_job(failure_ttl=-1), failure(), NOW, **RUN)
    assert (plan.registry_score, plan.job_ttl, plan.stream_ttl) == (-1, '', -1)


def test_stopped_job_is_never_retried_and_releases_nothing() -> None:
    plan = engine.plan(make_job(retries_left=3), Outcome(OutcomeKind.STOPPED, exc_string='stopped'), NOW, **RUN)

    assert plan.fields == ended_fields('stopped')
    assert plan.registry == 'failed' and plan.put_back == '' and plan.release_as == ''
    assert plan.stream['exc_string'] == encode_exc_string('stopped')
    assert plan.stream == {'type': 2, 'exc_string': encode_exc_string('stopped'), **execution(ended=None)}


def test_poison_fails_never_retried_with_its_unreadable_fields_reset() -> None:
    resets = {'timeout': '', 'enqueue_at_front': '0'}

    plan = engine.plan(make_job(retries_left=3), Outcome(OutcomeKind.POISON, resets, 'unreadable'), NOW, **RUN)

    assert plan.fields == {**resets, **ended_fields('failed')}
    assert plan.registry == 'failed' and plan.put_back == '' and plan.release_as == 'failed'


def test_disable_default_exception_handler_writes_only_the_status() -> None:
    failed = engine.plan(make_job(), failure(), NOW, disable_default_exception_handler=True, **RUN)
    retried = engine.plan(make_job(retries_left=1), failure(), NOW, disable_default_exception_handler=True, **RUN)

    assert failed == engine.Plan(release_as='failed', counter='failed_job_count', fields={'status': 'failed'})
    assert retried.put_back == 'queue'  # a retry is not a failure: untouched
    past_max = Outcome(OutcomeKind.RETRY, Retry(max=1))
    past_max_plan = engine.plan(make_job(number_of_retries=1), past_max, NOW, disable_default_exception_handler=True)
    assert past_max_plan.registry == 'failed' and past_max_plan.stream  # as the worker always recorded it


# --- abandoned (maintenance: the worker is gone)


def test_abandoned_job_with_retries_left_is_retried() -> None:
    job = make_job(retries_left=2, retry_intervals=[5, 50], ttl=1000)

    plan = engine.plan(job, Outcome(OutcomeKind.ABANDONED, exc_string='gone'), NOW)

    assert plan == engine.Plan(put_back='schedule', schedule_score=EPOCH + 5, job_ttl=1000, fields={'retries_left': 1})


def test_abandoned_job_fails_with_a_result_entry_by_no_worker() -> None:
    plan = engine.plan(make_job(failure_ttl=300), Outcome(OutcomeKind.ABANDONED, exc_string='gone'), NOW)

    assert plan == engine.Plan(
        registry='failed',
        registry_score=EPOCH + 300,
        job_ttl=300,
        release_as='failed',
        stream_ttl=300,
        fields={'status': 'failed'},
        stream={'type': Result.Type.FAILED.value, 'worker_name': '', 'exc_string': encode_exc_string('gone')},
    )


# --- the sync path (is_async=False)


def test_sync_failure_is_never_retried_and_releases_nothing() -> None:
    plan = engine.plan(make_job(retries_left=2), failure(), NOW, worker_name='', sync=True)

    assert plan.fields == {**ended_fields('failed', ended=None)}
    assert plan.registry == 'failed' and plan.put_back == '' and plan.release_as == ''
    assert plan.stream == {'type': 2, 'exc_string': encode_exc_string('Traceback: boom'), 'worker_name': ''}


def test_sync_success_releases_no_dependents() -> None:
    plan = engine.plan(make_job(), Outcome(OutcomeKind.SUCCESS, 3), NOW, sync=True)
    assert plan.registry == 'finished' and plan.release_as == ''
    assert plan.stream['worker_name'] == '' and 'execution_id' not in plan.stream


# --- pure


@pytest.mark.parametrize(
    ('attrs', 'outcome'),
    [
        ({'repeats_left': 2, 'repeat_intervals': [1]}, Outcome(OutcomeKind.SUCCESS, 'v')),
        ({}, Outcome(OutcomeKind.RETRY, Retry(max=3))),
        ({'retries_left': 2, 'retry_intervals': [1, 2]}, failure()),
        ({'retries_left': 2}, Outcome(OutcomeKind.ABANDONED, exc_string='gone')),
    ],
)
def test_plan_leaves_the_job_alone_and_depends_only_on_its_arguments(attrs: dict[str, Any], outcome: Outcome) -> None:
    job = make_job(**attrs)
    before = {name: copy.copy(value) for name, value in vars(job).items() if name != 'connection'}

    first = engine.plan(job, outcome, NOW, **RUN)
    second = engine.plan(job, outcome, NOW, **RUN)

    assert first == second
    assert {name: value for name, value in vars(job).items() if name != 'connection'} == before
    assert not job.connection.keys('*')


def test_outcome_kinds_are_named_and_read_from_their_words() -> None:
    assert Outcome('success').kind is OutcomeKind.SUCCESS  # as a horse's report carries it
    assert OutcomeKind.FAILURE == 'failure'
    with pytest.raises(ValueError):
        Outcome('finished')


@pytest.mark.parametrize(
    'moment',
    [
        datetime(2026, 11, 27, 2, 40, 7, 999999, tzinfo=timezone.utc),
        datetime(1970, 1, 1, tzinfo=timezone.utc),
        datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=timezone.utc),
        datetime(1900, 3, 1, 12, 0, 0, 1, tzinfo=timezone.utc),
        datetime(2106, 2, 7, 6, 28, 16, tzinfo=timezone.utc),
    ],
)
def test_epoch_seconds_of_utc_is_the_whole_second_it_falls_in(moment: datetime) -> None:
    """The fast path for UTC datetimes (twice per job) gives what calendar.timegm does: the second a
    moment falls in, before 1970 too (floored, not truncated toward zero)."""
    assert epoch_seconds(moment) == calendar.timegm(moment.utctimetuple())
