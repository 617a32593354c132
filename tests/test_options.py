"""The table of job options (rqfast/options.py) against the signatures RQ writes out by hand.

RQ's signatures stay explicit (Queue.enqueue_call, Queue.create_job, Queue.prepare_data, @job, and the
EnqueueArgs/EnqueueData tuples); these tests hold each of them to the table, parameter for parameter and
default for default, and hold the table's "rq" column to RQ 2.12's own signatures (installed beside).
A new option that is a row but not a parameter (or the reverse) fails here, as does a validator run
more than once per enqueue.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import rq.decorators
import rq.queue

from rqfast import keys, options, scriptload
from rqfast.decorators import job
from rqfast.enqueueing import EnqueueArgs, EnqueueData, EnqueueRecord, settle, store_call
from rqfast.job import Job
from rqfast.jobhash import HASH_FIELDS
from rqfast.queue import Queue

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

# Each signature's parameters that are not job options: the call itself, and what only that signature has.
NOT_OPTIONS: dict[str, set[str]] = {
    options.ENQUEUE_CALL: {'self', 'func', 'args', 'kwargs'},
    options.CREATE_JOB: {'self', 'func', 'args', 'kwargs', 'status', 'group_id'},  # set by the enqueue path
    options.PREPARE_DATA: {'func', 'args', 'kwargs'},
    options.DECORATOR: {'self', 'queue', 'connection', 'queue_class'},  # where, not what
    options.PARSE_ARGS: {'func', 'args', 'kwargs'},
}

RQFAST: dict[str, Callable[..., Any]] = {
    options.ENQUEUE_CALL: Queue.enqueue_call,
    options.CREATE_JOB: Queue.create_job,
    options.PREPARE_DATA: Queue.prepare_data,
    options.DECORATOR: job.__init__,
}
RQ: dict[str, Callable[..., Any]] = {
    options.ENQUEUE_CALL: rq.queue.Queue.enqueue_call,
    options.CREATE_JOB: rq.queue.Queue.create_job,
    options.PREPARE_DATA: rq.queue.Queue.prepare_data,
    options.DECORATOR: rq.decorators.job.__init__,
}


def parameters(signature: str) -> dict[str, Any]:
    """The job options of one of rqfast's signatures, by name, with their defaults."""
    if signature == options.PARSE_ARGS:
        found = {name: EnqueueArgs._field_defaults.get(name, inspect.Parameter.empty) for name in EnqueueArgs._fields}
    else:
        found = {name: p.default for name, p in inspect.signature(RQFAST[signature]).parameters.items()}
    return {name: default for name, default in found.items() if name not in NOT_OPTIONS[signature]}


@pytest.mark.parametrize(
    'signature',
    [options.ENQUEUE_CALL, options.CREATE_JOB, options.PREPARE_DATA, options.DECORATOR, options.PARSE_ARGS],
)
def test_each_signature_takes_the_options_the_table_says_with_their_defaults(signature: str) -> None:
    table = {option.name: option.default for option in options.options_of(signature)}
    assert parameters(signature) == table


def test_enqueue_call_lists_its_options_in_the_tables_order() -> None:
    """The table is in enqueue_call's order, RQ's positional one: a row goes where its parameter is."""
    assert list(parameters(options.ENQUEUE_CALL)) == [o.name for o in options.options_of(options.ENQUEUE_CALL)]


def test_enqueue_data_has_prepare_datas_parameters_in_order() -> None:
    """prepare_data builds EnqueueData(**its parameters): the two stay one list."""
    assert list(EnqueueData._fields) == list(inspect.signature(Queue.prepare_data).parameters)


@pytest.mark.parametrize(
    'signature', [options.ENQUEUE_CALL, options.CREATE_JOB, options.PREPARE_DATA, options.DECORATOR]
)
def test_the_rq_column_says_which_options_rq_212_has_in_rqs_own_order(signature: str) -> None:
    ours = [name for name in parameters(signature) if options.BY_NAME[name].rq == '2.12']
    theirs = [name for name in inspect.signature(RQ[signature]).parameters if name not in NOT_OPTIONS[signature]]
    assert ours == theirs  # RQ's options first, in RQ's order; rqfast's and RQ 3.0's after them


def test_enqueue_call_keeps_rq_212s_positional_order() -> None:
    ours = list(inspect.signature(Queue.enqueue_call).parameters)
    theirs = list(inspect.signature(rq.queue.Queue.enqueue_call).parameters)
    assert ours[: len(theirs)] == theirs


def test_each_stored_field_is_a_job_hash_field_and_each_keyword_is_unique() -> None:
    stored = {field.attribute for field in HASH_FIELDS}  # (JobRecord's attributes)
    for option in options.OPTIONS:
        assert not option.field or option.field in stored, option
        assert option.rq in ('2.12', '3.0', None), option
    assert len({option.keyword for option in options.OPTIONS}) == len(options.OPTIONS)
    assert options.BY_NAME['timeout'].keyword == 'job_timeout'  # enqueue()'s name for it, as RQ's
    for name, default, apply, field in options._APPLIED:  # (apply_options leaves a default to the job's class)
        assert apply is not None or getattr(Job, field) == default, name


def test_parse_args_takes_every_options_keyword_and_leaves_the_functions_own() -> None:
    given = {option.keyword: f'value-{option.name}' for option in options.options_of(options.PARSE_ARGS)}
    given.pop('rate_limit')  # (only a RateLimit is the option: any other value is the function's, RQ 2.12)
    parsed = Queue.parse_args('tests.jobs.noop', x=1, rate_limit=3, **given)
    assert parsed.kwargs == {'x': 1, 'rate_limit': 3}
    for option in options.options_of(options.PARSE_ARGS):
        if option.name not in ('rate_limit', 'at_front', 'unique'):  # (the two flags are made bools)
            assert getattr(parsed, option.name) == f'value-{option.name}', option.name


@pytest.fixture
def validator_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often each of the table's validators runs."""
    calls: dict[str, int] = {}

    def counted(field: str, check: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run(value: Any) -> Any:
            calls[field] = calls.get(field, 0) + 1
            return check(value)

        return run

    monkeypatch.setattr(options, '_CHECKED', tuple((field, counted(field, check)) for field, check in options._CHECKED))
    return calls


def test_each_validator_runs_once_per_enqueue(connection: redis.Redis, validator_calls: dict[str, int]) -> None:
    queue = Queue('q', connection=connection)
    in_an_hour = datetime.now(timezone.utc) + timedelta(hours=1)
    decorated: Any = job(queue, priority=2)(jobs.noop)  # (checked here: a bad option raises at the decorator)
    enqueues: list[Callable[[], Any]] = [
        lambda: queue.enqueue(jobs.noop, priority=3),
        lambda: queue.enqueue_call(jobs.noop, priority=3, capture_output=True),
        lambda: queue.enqueue_at(in_an_hour, jobs.noop, priority=3),
        lambda: queue.enqueue_in(timedelta(minutes=1), jobs.noop),
        lambda: queue.enqueue_job(queue.create_job(jobs.noop, priority=1)),
        lambda: queue.enqueue(jobs.noop, debounce=('k', 5)),
        lambda: decorated.delay(),
    ]
    assert {option.field for option in options.OPTIONS if option.check} == {'priority', 'capture_output'}
    for enqueue in enqueues:
        validator_calls.clear()
        enqueue()
        assert validator_calls == {'priority': 1, 'capture_output': 1}
    validator_calls.clear()
    queue.enqueue_many([Queue.prepare_data(jobs.noop) for _ in range(3)])
    assert validator_calls == {'priority': 3, 'capture_output': 3}  # once per job
    assert queue.count == 7  # (the enqueued ones; enqueue_at, enqueue_in and the debounced one are scheduled)
    assert len(queue.scheduled_job_registry) == 3


def test_a_bad_option_raises_before_anything_is_written(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    with pytest.raises(TypeError, match='capture_output must be True or False'):
        queue.enqueue_call(jobs.noop, capture_output='yes')
    with pytest.raises(TypeError, match='capture_output must be True or False'):
        job(queue, capture_output='yes')
    made = [Queue.prepare_data(jobs.noop) for _ in range(2)]
    bad = queue.create_job(jobs.noop)
    bad.priority = 12
    with pytest.raises(ValueError, match='priority must be'):
        queue.enqueue_job(bad)
    with pytest.raises(ValueError, match='priority must be'):
        queue.enqueue_many([*made, Queue.prepare_data(jobs.noop)._replace(priority=10)])
    assert connection.dbsize() == 0


def test_checked_options_to_the_script_call_without_io(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seam (enqueueing.store_call, settle): a job from create_job, checked (options.check_job), is the
    script call Queue.enqueue sends, made without I/O; sent by another client, settle reads its reply back."""
    sent: list[list[Any]] = []
    real_call = scriptload.call

    def recording(name: str, connection: Any, args: Any, pipeline: Any = None) -> Any:
        sent.append(list(args))
        return real_call(name, connection, args, pipeline)

    monkeypatch.setattr(scriptload, 'call', recording)
    queue = Queue('q', connection=redis_conn)
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    monkeypatch.setattr('rqfast.enqueueing.now', lambda: moment)
    stored = queue.enqueue(jobs.noop, job_id='one', priority=4)
    again = store_call('q', [EnqueueRecord.for_job(stored, 'queue')], moment)
    assert again.name == 'enqueue_jobs' and again.args == sent[0]  # (the record leaves out status, enqueued_at)

    made = queue.create_job(jobs.noop, job_id='two', priority=4)
    options.check_job(made)
    call = store_call('q', [EnqueueRecord.for_job(made, 'queue')], moment)
    source = scriptload.script(call.name).source
    reply = redis_conn.eval(source, 1, keys.SLOT_KEY, keys.PREFIX, *call.args)  # (what scriptload sends)
    assert settle([made], reply, moment, None) is None
    assert made.get_status(refresh=False) == 'queued'
    assert Job.fetch('two', connection=redis_conn).priority == 4
    assert queue.job_ids == ['one', 'two']
