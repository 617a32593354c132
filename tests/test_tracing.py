"""OpenTelemetry: the enqueuer's span is stored with the job (`rqfast_trace`), and the run's consumer span is its child.

The test process sets one SDK tracer provider (OpenTelemetry allows one per process) with two span
processors: the SDK's InMemorySpanExporter, which sees the spans of this process (a SimpleWorker's), and
a JSON-lines file exporter, which sees a forked horse's too: a horse inherits the provider when it is
forked, exports there, then exits, so the test reads its spans back from the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import redis

import rqfast
from rqfast import keys
from rqfast.worker import SimpleWorker, Worker

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

trace = pytest.importorskip('opentelemetry.trace')
sdk_trace = pytest.importorskip('opentelemetry.sdk.trace')
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

pytestmark = pytest.mark.timeout(60)


class FileSpanExporter(SpanExporter):
    """Appends each span, one JSON line, to the file named by `path` at export time (any process's)."""

    path = ''

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if FileSpanExporter.path:
            with open(FileSpanExporter.path, 'a') as file:
                for span in spans:
                    file.write(json.dumps(_as_dict(span)) + '\n')
        return SpanExportResult.SUCCESS


def _as_dict(span: Any) -> dict[str, Any]:
    parent = span.parent
    return {
        'name': span.name,
        'kind': span.kind.name,
        'trace_id': span.context.trace_id,
        'span_id': span.context.span_id,
        'parent_span_id': parent.span_id if parent is not None else None,
        'attributes': dict(span.attributes or {}),
        'status': span.status.status_code.name,
        'pid': os.getpid(),
    }


MEMORY = InMemorySpanExporter()


@pytest.fixture(scope='module')
def provider() -> Any:
    current = trace.get_tracer_provider()
    if not isinstance(current, sdk_trace.TracerProvider):
        current = sdk_trace.TracerProvider()
        trace.set_tracer_provider(current)
    current.add_span_processor(SimpleSpanProcessor(MEMORY))
    current.add_span_processor(SimpleSpanProcessor(FileSpanExporter()))
    return current


@pytest.fixture
def spans_file(provider: Any, tmp_path: Any) -> Iterator[str]:
    MEMORY.clear()
    FileSpanExporter.path = str(tmp_path / 'spans.jsonl')
    yield FileSpanExporter.path
    FileSpanExporter.path = ''


def read_spans(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path) as file:
        return [json.loads(line) for line in file]


def enqueue_in_span(conn: redis.Redis) -> tuple[Any, list[rqfast.Job]]:
    q = rqfast.Queue('q', connection=conn)
    with trace.get_tracer('test').start_as_current_span('producer') as span:
        made = [q.enqueue(jobs.add, 1, 2), q.enqueue(jobs.div_by_zero, retry=rqfast.Retry(max=1))]
    return span.get_span_context(), made


def check_consumer_spans(spans: list[dict[str, Any]], producer: Any, made: list[rqfast.Job]) -> None:
    consumers = [s for s in spans if s['kind'] == 'CONSUMER']
    by_job: dict[str, list[dict[str, Any]]] = {}
    for span in consumers:
        by_job.setdefault(span['attributes']['messaging.message.id'], []).append(span)
    ok, failing = made
    assert len(by_job[ok.id]) == 1 and len(by_job[failing.id]) == 2  # one span per run: the retry's too
    for span in consumers:
        assert span['trace_id'] == producer.trace_id
        assert span['parent_span_id'] == producer.span_id  # parented to the enqueue span
        assert span['name'] == 'process q'
        assert span['attributes']['messaging.destination.name'] == 'q'
        assert span['attributes']['messaging.system'] == 'rq'
    [success] = by_job[ok.id]
    assert success['attributes']['rqfast.job.func_name'] == 'jobs.add'
    assert success['attributes']['rqfast.job.outcome'] == 'success'
    assert success['status'] == 'UNSET'
    first, second = sorted(by_job[failing.id], key=lambda s: -s['attributes']['rqfast.job.retries_left'])
    assert first['attributes']['rqfast.job.retries_left'] == 1
    assert second['attributes']['rqfast.job.retries_left'] == 0
    assert {first['attributes']['rqfast.job.outcome'], second['attributes']['rqfast.job.outcome']} == {'failure'}
    assert first['status'] == second['status'] == 'ERROR'


def test_enqueue_stores_the_active_spans_traceparent(redis_conn: redis.Redis, spans_file: str) -> None:
    producer, made = enqueue_in_span(redis_conn)
    stored = redis_conn.hget(keys.job_key(made[0].id), 'rqfast_trace')
    assert stored is not None
    assert stored.decode().rpartition('-')[0] == f'00-{producer.trace_id:032x}-{producer.span_id:016x}'  # W3C
    untraced = rqfast.Queue('q', connection=redis_conn).enqueue(jobs.noop)  # no span active: no field
    assert redis_conn.hget(keys.job_key(untraced.id), 'rqfast_trace') is None


def test_simple_worker_runs_each_job_in_a_consumer_span(redis_conn: redis.Redis, spans_file: str) -> None:
    producer, made = enqueue_in_span(redis_conn)
    SimpleWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    spans = [_as_dict(span) for span in MEMORY.get_finished_spans()]
    check_consumer_spans(spans, producer, made)
    assert {span['pid'] for span in spans} == {os.getpid()}


def test_forking_worker_runs_each_job_in_a_consumer_span_in_its_horse(redis_conn: redis.Redis, spans_file: str) -> None:
    producer, made = enqueue_in_span(redis_conn)
    Worker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    spans = read_spans(spans_file)
    check_consumer_spans(spans, producer, made)
    consumers = [span for span in spans if span['kind'] == 'CONSUMER']
    assert os.getpid() not in {span['pid'] for span in consumers}  # opened in the horses
    assert not any(span['attributes']['messaging.message.id'] == 'rqfast-warm-up' for span in consumers)


# A spawned child is a fresh interpreter: it gets its provider from a sitecustomize module, as with
# `opentelemetry-instrument`. This one exports each span as a JSON line to $RQFAST_TEST_SPANS.
SITECUSTOMIZE = """
import json, os
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

class _Exporter(SpanExporter):
    def export(self, spans):
        with open(os.environ['RQFAST_TEST_SPANS'], 'a') as file:
            for span in spans:
                parent = span.parent
                file.write(json.dumps({
                    'name': span.name, 'kind': span.kind.name,
                    'trace_id': span.context.trace_id, 'span_id': span.context.span_id,
                    'parent_span_id': parent.span_id if parent is not None else None,
                    'attributes': dict(span.attributes or {}),
                    'status': span.status.status_code.name, 'pid': os.getpid(),
                }) + '\\n')
        return SpanExportResult.SUCCESS

_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_Exporter()))
trace.set_tracer_provider(_provider)
"""


def test_spawn_worker_runs_each_job_in_a_consumer_span_in_its_child(
    redis_url: str, redis_conn: redis.Redis, spans_file: str, tmp_path: Any
) -> None:
    producer, made = enqueue_in_span(redis_conn)
    site = tmp_path / 'site'
    site.mkdir()
    (site / 'sitecustomize.py').write_text(SITECUSTOMIZE)
    tests = os.path.dirname(os.path.abspath(__file__))
    code = (
        'import sys, os, redis\n'
        'from rqfast.worker import SpawnWorker\n'
        'conn = redis.Redis.from_url(sys.argv[1])\n'
        "SpawnWorker(['q'], connection=conn).work(burst=True, logging_level='WARNING')\n"
        'print(os.getpid())\n'
    )
    child_spans = str(tmp_path / 'child-spans.jsonl')
    path = os.pathsep.join([str(site), os.path.dirname(tests), tests])
    env = {**os.environ, 'PYTHONPATH': path, 'RQFAST_TEST_SPANS': child_spans}
    done = subprocess.run(
        [sys.executable, '-c', code, redis_url], env=env, cwd=tests, capture_output=True, text=True, timeout=50
    )
    assert done.returncode == 0, done.stderr
    worker_pid = int(done.stdout.split()[-1])
    spans = read_spans(child_spans)
    check_consumer_spans(spans, producer, made)
    consumers = [span for span in spans if span['kind'] == 'CONSUMER']
    pids = {span['pid'] for span in consumers}
    assert worker_pid not in pids and len(pids) == 3  # one fresh child per run (the retry's too)


def test_without_opentelemetry_nothing_is_traced_and_jobs_run(redis_url: str, redis_conn: redis.Redis) -> None:
    """The extra not installed: tracing.ENABLED is False, enqueue writes no field, the worker opens no span."""
    code = (
        'import sys\n'
        "sys.modules['opentelemetry'] = None  # as if not installed\n"
        'import redis, rqfast, rqfast.tracing, jobs\n'
        'assert not rqfast.tracing.ENABLED\n'
        'conn = redis.Redis.from_url(sys.argv[1])\n'
        "job = rqfast.Queue('q', connection=conn).enqueue(jobs.add, 1, 2)\n"
        "rqfast.SimpleWorker(['q'], connection=conn).work(burst=True, logging_level='WARNING')\n"
        'print(job.id)\n'
    )
    job_id = run_child(code, redis_url).strip()
    assert redis_conn.hget(keys.job_key(job_id), 'status') == b'finished'
    assert not redis_conn.hexists(keys.job_key(job_id), 'rqfast_trace')


def test_rq_reads_and_saves_a_traced_job_and_keeps_the_field(redis_conn: redis.Redis, spans_file: str) -> None:
    """The field is additive: RQ's Job.fetch ignores it, and RQ's save (an HSET) leaves it in the hash."""
    import rq.job

    _, made = enqueue_in_span(redis_conn)
    stored = redis_conn.hget(keys.job_key(made[0].id), 'rqfast_trace')
    job = rq.job.Job.fetch(made[0].id, connection=redis_conn)
    assert job.func_name == 'jobs.add'
    job.meta['seen'] = True
    job.save()
    assert redis_conn.hget(keys.job_key(made[0].id), 'rqfast_trace') == stored
    assert rqfast.Job.fetch(made[0].id, connection=redis_conn)._rqfast_trace == stored.decode()


def test_a_provider_set_while_the_worker_runs_traces_the_next_run(redis_url: str, redis_conn: redis.Redis) -> None:
    """tracing.active() answers per run without the API's per-call os.environ lookup: a run before any
    provider gets no span, and a provider set afterwards, in the same process, traces the next run."""
    code = (
        'import sys, redis, rqfast, rqfast.tracing, jobs\n'
        'from opentelemetry import trace\n'
        'from opentelemetry.sdk.trace import TracerProvider\n'
        'from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n'
        'from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n'
        'conn = redis.Redis.from_url(sys.argv[1])\n'
        "queue = rqfast.Queue('q', connection=conn)\n"
        'assert not rqfast.tracing.active()\n'
        'queue.enqueue(jobs.add, 1, 2)\n'
        'worker = rqfast.SimpleWorker([queue], connection=conn)\n'
        "worker.work(burst=True, logging_level='WARNING')\n"
        'exporter = InMemorySpanExporter()\n'
        'provider = TracerProvider()\n'
        'provider.add_span_processor(SimpleSpanProcessor(exporter))\n'
        'trace.set_tracer_provider(provider)\n'
        'assert rqfast.tracing.active()\n'
        'queue.enqueue(jobs.add, 3, 4)\n'
        "worker.work(burst=True, logging_level='WARNING')\n"
        'print(len([s for s in exporter.get_finished_spans() if s.kind == trace.SpanKind.CONSUMER]))\n'
    )
    assert run_child(code, redis_url).split()[-1] == '1'  # the second run's span only


def run_child(code: str, redis_url: str) -> str:
    """`python -c code redis_url` with tests/ on the path and no tracer provider from the environment;
    it must exit 0. Its stdout."""
    tests = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([os.path.dirname(tests), tests])}
    env.pop('OTEL_PYTHON_TRACER_PROVIDER', None)
    done = subprocess.run([sys.executable, '-c', code, redis_url], env=env, cwd=tests, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout
