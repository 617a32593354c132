"""Opt-in job security: the allow-list and HMAC-signed jobs, on every worker class and the CLI.

A refused job fails with a reason naming why, and nothing in it is imported or deserialized:
`marker_module` writes a file when imported, and a Marker pickle records who unpickles it.
"""

from __future__ import annotations

import base64
import datetime
import os
import zlib
from pathlib import Path
from typing import Any

import pytest
import redis
import rq

import rqfast
from rqfast import Callback, Queue, SimpleWorker, security
from rqfast.cli.workers import WorkerOptions, job_security
from rqfast.job import Job

try:
    import security_jobs as sj
except ImportError:  # tests/ became a package
    from tests import security_jobs as sj  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)
CLASSES = [SimpleWorker, rqfast.Worker, rqfast.SpawnWorker]
J = sj.__name__
KEY = b'test-signing-key'
# ('security_jobs.noop', None, (marker_module.run(),), {}) as protocol 0: an argument that imports marker_module
ARG_IMPORTS_MARKER = b'(Vsecurity_jobs.noop\nN(cmarker_module\nrun\n(tRt(dt.'
MARKER_GLOBAL = b'cmarker_module\nrun\n(tR.'  # marker_module.run(), unpickled


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file marker_module writes when imported (in any process this test starts)."""
    path = tmp_path / 'imported'
    monkeypatch.setenv('RQFAST_MARKER_FILE', str(path))
    monkeypatch.delenv('RQFAST_SIGNING_KEY', raising=False)
    assert 'marker_module' not in os.sys.modules
    return path


def work(conn: redis.Redis, worker_class: type, **options: Any) -> None:
    worker_class(['q'], connection=conn, **options).work(burst=True, logging_level='WARNING')


def failure(conn: redis.Redis, job_id: str) -> str:
    job = rq.job.Job.fetch(job_id, connection=conn)
    assert job.get_status() == 'failed'
    return str(job.latest_result().exc_string)


# --- the allow-list


def test_allowed_names() -> None:
    allow = ('myapp', 'other.tasks.add', 'builtins.len')
    assert security.allowed('myapp.tasks.add', allow)
    assert security.allowed('other.tasks.add', allow)
    assert security.allowed('len', allow)  # RQ runs a bare name as a builtin
    assert not security.allowed('myapp2.tasks', allow)
    assert not security.allowed('other.tasks.add_all', allow)
    assert not security.allowed('other.tasks', allow)
    assert not security.allowed('os.system', allow)
    with pytest.raises(ValueError, match='empty'):
        security.JobPolicy.make(['myapp', ''])
    assert security.JobPolicy.make() is None


@pytest.mark.parametrize('worker_class', CLASSES, ids=lambda c: c.__name__)
def test_a_function_outside_the_allow_list_is_never_imported(
    redis_conn: redis.Redis, marker: Path, worker_class: type
) -> None:
    queue = Queue('q', connection=redis_conn)
    refused = queue.enqueue('marker_module.run')
    bad_callback = queue.enqueue(f'{J}.noop', on_success=Callback('marker_module.callback'))
    bad_argument = queue.enqueue(f'{J}.noop')
    redis_conn.hset(bad_argument.key, 'data', zlib.compress(ARG_IMPORTS_MARKER))
    allowed = queue.enqueue(f'{J}.noop', datetime.datetime(2020, 1, 1), on_failure=Callback(f'{J}.on_callback'))

    work(redis_conn, worker_class, allow=[J])

    assert not marker.exists(), marker.read_text()
    assert 'marker_module.run is not in the allow-list' in failure(redis_conn, refused.id)
    assert 'its success callback marker_module.callback is not in the allow-list' in failure(
        redis_conn, bad_callback.id
    )
    assert 'its payload names marker_module.run, which is not in the allow-list' in failure(redis_conn, bad_argument.id)
    assert rq.job.Job.fetch(allowed.id, connection=redis_conn).return_value() == 'ok'
    assert "refused by the worker's job policy" in failure(redis_conn, refused.id)


@pytest.mark.parametrize('worker_class', CLASSES, ids=lambda c: c.__name__)
def test_with_an_allow_list_meta_and_result_pickles_are_restricted_too(
    redis_conn: redis.Redis, marker: Path, worker_class: type
) -> None:
    """meta and RQ's `result` field are unpickled in the horse: through the restricted unpickler, so a
    global outside the list is not loaded (meta reads as RQ's {'unserialized': ...}) and the job runs."""
    job = Queue('q', connection=redis_conn).enqueue(f'{J}.noop')
    redis_conn.hset(job.key, mapping={'meta': MARKER_GLOBAL, 'result': MARKER_GLOBAL})
    work(redis_conn, worker_class, allow=[J])
    assert not marker.exists(), marker.read_text()
    assert redis_conn.hget(job.key, 'status') == b'finished'  # (not fetched here: that would unpickle meta)
    assert 'marker_module' not in os.sys.modules


# ('security_jobs.noop', None, (security_jobs.os.getpid(),), {}): a global reached through an allowed module
ARG_REACHES_PAST = b'\x80\x04(\x8c\x12security_jobs.noopN\x8c\rsecurity_jobs\x8c\tos.getpid\x93)R\x85}t.'


@pytest.mark.parametrize('worker_class', CLASSES, ids=lambda c: c.__name__)
def test_a_name_reaching_past_an_allowed_module_is_refused(redis_conn: redis.Redis, worker_class: type) -> None:
    """`security_jobs.os.getpid` starts with an allowed prefix but is os.getpid: refused, by name and in a pickle."""
    queue = Queue('q', connection=redis_conn)
    by_name = queue.enqueue(f'{J}.os.getpid')
    in_pickle = queue.enqueue(f'{J}.noop')
    redis_conn.hset(in_pickle.key, 'data', zlib.compress(ARG_REACHES_PAST))
    work(redis_conn, worker_class, allow=[J])
    assert f'{J}.os.getpid is posix.getpid, which is not in the allow-list' in failure(redis_conn, by_name.id)
    assert f'its payload names {J}.os.getpid is posix.getpid' in failure(redis_conn, in_pickle.id)


def test_without_an_allow_list_the_same_jobs_run(redis_conn: redis.Redis, marker: Path) -> None:
    """The control: the marker module is what the test says it is."""
    job = Queue('q', connection=redis_conn).enqueue('marker_module.run')
    work(redis_conn, rqfast.Worker)
    assert rq.job.Job.fetch(job.id, connection=redis_conn).return_value() == 'ran'
    assert marker.exists()


def test_a_refused_job_is_not_retried(redis_conn: redis.Redis, marker: Path) -> None:
    job = Queue('q', connection=redis_conn).enqueue('marker_module.run', retry=rqfast.Retry(max=3))
    work(redis_conn, rqfast.Worker, allow=[J])
    assert 'not in the allow-list' in failure(redis_conn, job.id)
    assert redis_conn.hget(job.key, 'retries_left') == b'3'


def test_the_cli_takes_allow_and_the_settings(tmp_path: Path) -> None:
    options = {f: None for f in WorkerOptions.__dataclass_fields__}
    opts = WorkerOptions(**{**options, 'allow': ('myapp', 'other.f')})  # type: ignore[arg-type]
    assert job_security(opts, {}) == {'allow': ['myapp', 'other.f']}
    opts = WorkerOptions(**{**options, 'allow': ()})  # type: ignore[arg-type]
    assert job_security(opts, {}) == {}
    assert job_security(opts, {'ALLOWED_FUNCTIONS': 'myapp', 'SIGNING_KEY': 'k'}) == {
        'allow': ['myapp'],
        'signing_key': 'k',
    }
    from rqfast.cli.errors import CliError

    with pytest.raises(CliError, match='ALLOWED_FUNCTIONS'):
        job_security(opts, {'ALLOWED_FUNCTIONS': [1]})


def test_rqfast_worker_allow_on_the_command_line(redis_conn: redis.Redis, redis_url: str, marker: Path) -> None:
    from click.testing import CliRunner

    from rqfast.cli import main

    queue = Queue('q', connection=redis_conn)
    refused, ok = queue.enqueue('marker_module.run'), queue.enqueue(f'{J}.noop')
    result = CliRunner().invoke(
        main, ['worker', 'q', '--burst', '-u', redis_url, '-w', 'rqfast.SimpleWorker', '--allow', J, '--allow', 'x.y']
    )
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert 'not in the allow-list' in failure(redis_conn, refused.id)
    assert rq.job.Job.fetch(ok.id, connection=redis_conn).get_status() == 'finished'


# --- signed jobs


@pytest.mark.parametrize('worker_class', CLASSES, ids=lambda c: c.__name__)
def test_unsigned_and_tampered_jobs_are_refused_unloaded(
    redis_conn: redis.Redis, marker: Path, tmp_path: Path, worker_class: type
) -> None:
    pids = str(tmp_path / 'pids')
    signed = Queue('q', connection=redis_conn, signing_key=KEY)
    good = signed.enqueue(f'{J}.noop', on_failure=Callback(f'{J}.on_callback'))
    unsigned = rq.Queue('q', connection=redis_conn).enqueue('marker_module.run')
    tampered = signed.enqueue(f'{J}.noop')
    redis_conn.hset(tampered.key, 'data', zlib.compress(sj.marker_pickle(pids, ('marker_module.run', None, (), {}))))
    redis_conn.hset(tampered.key, 'meta', sj.marker_pickle(pids))
    swapped_callback = signed.enqueue(f'{J}.noop', on_success=Callback(f'{J}.on_callback'))
    redis_conn.hset(swapped_callback.key, 'success_callback_name', 'marker_module.callback')
    other_key = Queue('q', connection=redis_conn, signing_key=b'another key').enqueue('marker_module.run')

    work(redis_conn, worker_class, signing_key=KEY)

    assert not marker.exists(), marker.read_text()
    assert sj.pids(pids) == []  # neither its data nor its meta was deserialized anywhere
    assert rq.job.Job.fetch(good.id, connection=redis_conn).return_value() == 'ok'
    assert 'it is not signed (rqfast_signature is missing)' in failure(redis_conn, unsigned.id)
    for job in (tampered, swapped_callback, other_key):
        assert 'its signature does not match its payload' in failure(redis_conn, job.id)


def test_signing_covers_the_call_and_callbacks_not_the_rest() -> None:
    fields = {'data': zlib.compress(b'call'), 'success_callback_name': 'a.b', 'description': 'x'}
    signature = security.sign_fields(KEY, 'id1', fields)
    assert signature.startswith('v1:')
    assert security.sign_fields(KEY, 'id1', {**fields, 'data': b'call', 'description': 'y'}) == signature
    assert security.sign_fields(KEY, 'id2', fields) != signature
    assert security.sign_fields(KEY, 'id1', {**fields, 'data': b'call!'}) != signature
    assert security.sign_fields(KEY, 'id1', {**fields, 'failure_callback_name': 'a.b'}) != signature
    assert security.sign_fields(b'other', 'id1', fields) != signature


def test_rq_reads_and_runs_signed_jobs(redis_conn: redis.Redis) -> None:
    """The signature is a field RQ 2.12 does not know: Job.fetch, its worker and requeue leave it be."""
    job = Queue('q', connection=redis_conn, signing_key=KEY).enqueue(f'{J}.noop')
    signature = redis_conn.hget(job.key, security.SIGNATURE_FIELD)
    assert signature
    fetched = rq.job.Job.fetch(job.id, connection=redis_conn)
    assert fetched.func_name == f'{J}.noop'
    rq.SimpleWorker(['q'], connection=redis_conn).work(burst=True)
    assert rq.job.Job.fetch(job.id, connection=redis_conn).return_value() == 'ok'
    assert redis_conn.hget(job.key, security.SIGNATURE_FIELD) == signature


def test_a_signed_job_stays_signed_through_retries_and_requeue(redis_conn: redis.Redis) -> None:
    queue = Queue('q', connection=redis_conn, signing_key=KEY)
    job = queue.enqueue(f'{J}.fail', retry=rqfast.Retry(max=1))
    work(redis_conn, rqfast.Worker, signing_key=KEY)
    assert 'ValueError: boom' in failure(redis_conn, job.id)  # ran twice, refused never
    assert redis_conn.hget(job.key, 'retries_left') == b'0'
    Job.fetch(job.id, connection=redis_conn).requeue()
    work(redis_conn, rqfast.Worker, signing_key=KEY)
    assert 'ValueError: boom' in failure(redis_conn, job.id)


def test_the_key_from_the_environment(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('RQFAST_SIGNING_KEY', 'from-env')
    job = Queue('q', connection=redis_conn).enqueue(f'{J}.noop')
    unsigned = rq.Queue('q', connection=redis_conn).enqueue(f'{J}.noop')
    work(redis_conn, rqfast.Worker)
    assert rq.job.Job.fetch(job.id, connection=redis_conn).return_value() == 'ok'
    assert 'not signed' in failure(redis_conn, unsigned.id)
    with pytest.raises(ValueError, match='signing_key'):
        Queue('q', connection=redis_conn, signing_key=b'')


def test_signing_and_an_allow_list_together(redis_conn: redis.Redis, marker: Path) -> None:
    queue = Queue('q', connection=redis_conn, signing_key=KEY)
    signed_but_not_allowed = queue.enqueue('marker_module.run')
    ok = queue.enqueue(f'{J}.noop')
    work(redis_conn, rqfast.Worker, signing_key=KEY, allow=[J])
    assert not marker.exists()
    assert 'not in the allow-list' in failure(redis_conn, signed_but_not_allowed.id)
    assert rq.job.Job.fetch(ok.id, connection=redis_conn).return_value() == 'ok'


@pytest.mark.parametrize('worker_class', CLASSES, ids=lambda c: c.__name__)
def test_with_a_signing_key_no_unsigned_pickle_runs(
    redis_conn: redis.Redis, marker: Path, tmp_path: Path, worker_class: type
) -> None:
    """A signed job whose meta, `result`, exc_info, own result and dependency's result and meta were
    replaced by a pickle whose __reduce__ writes a file: it runs, and nothing writes the file in any
    process (the worker, a horse); those fields load restricted (plain values only), meta it saves
    itself reads back."""
    pids = str(tmp_path / 'pids')
    crafted = sj.marker_pickle(pids)
    signed = Queue('q', connection=redis_conn, signing_key=KEY)
    dependency = signed.enqueue(f'{J}.noop', meta={'plain': [1, 2]})
    work(redis_conn, worker_class, signing_key=KEY)
    assert dependency.get_status() == 'finished'
    redis_conn.hset(dependency.key, mapping={'meta': crafted, 'result': crafted, 'exc_info': crafted})
    forged = {'type': 1, 'worker_name': 'w', 'return_value': base64.b64encode(crafted)}
    redis_conn.xadd(f'rq:results:{dependency.id}', forged)  # type: ignore[arg-type]
    job = signed.enqueue(f'{J}.read_back', depends_on=dependency, meta={'plain': 1})
    redis_conn.hset(job.key, mapping={'meta': crafted, 'result': crafted})
    redis_conn.xadd(f'rq:results:{job.id}', forged)  # type: ignore[arg-type]

    work(redis_conn, worker_class, signing_key=KEY)

    assert sj.pids(pids) == [], 'an unsigned pickle ran'
    assert redis_conn.hget(job.key, 'status') == b'finished'
    seen = rq.job.Job.fetch(
        job.id, connection=redis_conn, serializer=security.RestrictedSerializer(rq.serializers.DefaultSerializer, ())
    ).return_value()
    # (each read raises; the job's own load kept its meta as RQ's {'unserialized': ...}; exc_info is
    # text, read from the latest result, whose return value is the crafted pickle)
    assert seen == [
        *(f'{name}: JobRefused' for name in security_jobs_reads()),
        "saved meta: {'saved': 'by the job', 'when': 1}",
    ], seen
    assert sj.pids(pids) == []


def security_jobs_reads() -> list[str]:
    return [
        'meta',
        'own result',
        'dependency result',
        'dependency meta',
        'dependency exc_info',
        'dependency result field',
    ]


def test_the_signed_call_serializer(tmp_path: Path) -> None:
    """The signed call loads as it is; any other pickle only restricted (plain values, SAFE_GLOBALS)."""
    import pickle

    pids = str(tmp_path / 'pids')
    call = pickle.dumps(('security_jobs.noop', None, (sj.Marker(pids),), {}))
    fields = {'data': zlib.compress(call)}
    raw = {**fields, security.SIGNATURE_FIELD: security.sign_fields(KEY, 'j', fields)}
    policy = security.JobPolicy(None, KEY)
    serializer = policy.serializer(pickle, 'j', raw)
    assert serializer.loads(pickle.dumps({'a': [1, datetime.date(2020, 1, 1)]})) == {
        'a': [1, datetime.date(2020, 1, 1)]
    }
    with pytest.raises(security.JobRefused, match='unsigned pickle'):
        serializer.loads(sj.marker_pickle(pids))
    assert sj.pids(pids) == []
    serializer.loads(call)  # the signed call itself is trusted: its Marker runs
    assert sj.pids(pids) == [os.getpid()]
    tampered = policy.serializer(pickle, 'j', {**raw, 'data': zlib.compress(call + b'.')})
    with pytest.raises(security.JobRefused):  # a signature that does not match: nothing loads unrestricted
        tampered.loads(call)
