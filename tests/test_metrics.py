"""Prometheus metrics: a live worker's /metrics (rqfast worker --metrics-port) and the exporter (rqfast metrics),
scraped over HTTP, parsed with prometheus_client's parser and compared with what Redis holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import urllib.request
from datetime import timedelta
from typing import Any

import pytest
import redis
from click.testing import CliRunner

import rqfast
from rqfast import keys, metrics
from rqfast.cli import main
from rqfast.worker import SimpleWorker

try:
    import jobs
    from fleet import free_port, wait_until
    from test_worker_roundtrips import count_round_trips, per_job  # noqa: F401 (a fixture)
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.fleet import free_port, wait_until  # type: ignore[no-redef]
    from tests.test_worker_roundtrips import count_round_trips, per_job  # type: ignore[no-redef] # noqa: F401

prometheus_client = pytest.importorskip('prometheus_client')
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from rqfast.metrics import JobTimes, exporter_registry, serve_forever  # noqa: E402

pytestmark = pytest.mark.timeout(90)
TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def scrape(port: int) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """/metrics as {sample name: {sorted labels: value}}."""
    with urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=5) as response:
        text = response.read().decode()
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict[str, Any], metric: str, /, **labels: str) -> float | None:
    return samples.get(metric, {}).get(tuple(sorted(labels.items())))


def redis_counts(conn: redis.Redis, queue: str) -> dict[str, int]:
    return {
        'queued': conn.llen(keys.queue_key(queue)),
        'started': conn.zcard(keys.started_registry_key(queue)),
        'finished': conn.zcard(keys.finished_registry_key(queue)),
        'failed': conn.zcard(keys.failed_registry_key(queue)),
        'deferred': conn.zcard(keys.deferred_registry_key(queue)),
        'scheduled': conn.zcard(keys.scheduled_registry_key(queue)),
    }


def enqueue_mix(conn: redis.Redis, queue: str = 'q') -> None:
    """3 successes, 2 failures, 1 deferred (its parent fails), 1 scheduled in an hour."""
    q = rqfast.Queue(queue, connection=conn)
    for i in range(3):
        q.enqueue(jobs.add, i, 1)
    parent = q.enqueue(jobs.div_by_zero)
    q.enqueue(jobs.noop, depends_on=parent)
    q.enqueue(jobs.div_by_zero)
    q.enqueue_in(timedelta(hours=1), jobs.noop)


@pytest.mark.parametrize(
    'worker_options',
    [['-w', 'rqfast.SimpleWorker'], ['-w', 'rqfast.Worker'], ['-w', 'rqfast.SimpleWorker', '-C', '3']],
    ids=['simple', 'forking', 'concurrent'],
)
def test_live_worker_serves_counts_and_histograms_that_match_redis(
    redis_url: str, redis_conn: redis.Redis, worker_options: list[str]
) -> None:
    enqueue_mix(redis_conn)
    port = free_port()
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([ROOT, TESTS])}
    command = [sys.executable, '-m', 'rqfast.cli', 'worker', 'q', '-u', redis_url, *worker_options]
    command += ['--metrics-port', str(port), '--name', 'metered', '-q']
    proc = subprocess.Popen(command, env=env, cwd=TESTS)
    try:
        wait_until(lambda: redis_conn.zcard(keys.failed_registry_key('q')) == 2, 30, 'the jobs to end')
        wait_until(lambda: redis_conn.zcard(keys.finished_registry_key('q')) == 3, 30, 'the jobs to end')

        def histograms_done() -> Any:
            samples = scrape(port)
            done = value(samples, 'rqfast_job_duration_seconds_count', queue='q', outcome='success') == 3
            return done and value(samples, 'rqfast_job_latency_seconds_count', queue='q', outcome='failure') == 2

        wait_until(histograms_done, 20, 'the histograms')
        samples = scrape(port)
        for status, count in redis_counts(redis_conn, 'q').items():
            assert value(samples, 'rq_jobs', queue='q', status=status) == count, status
        assert value(samples, 'rq_jobs', queue='q', status='deferred') == 1
        assert value(samples, 'rq_jobs', queue='q', status='scheduled') == 1
        worker_hash = {k.decode(): v.decode() for k, v in redis_conn.hgetall(keys.worker_key('metered')).items()}
        assert value(samples, 'rq_workers', name='metered', queues='q', state=worker_hash['state']) == 1
        assert value(samples, 'rq_workers_success_total', name='metered', queues='q') == 3
        assert value(samples, 'rq_workers_success_total', name='metered', queues='q') == int(
            worker_hash['successful_job_count']
        )
        assert value(samples, 'rq_workers_failed_total', name='metered', queues='q') == int(
            worker_hash['failed_job_count']
        )
        working = value(samples, 'rq_workers_working_time_total', name='metered', queues='q')
        assert working == pytest.approx(float(worker_hash['total_working_time']))
        # the latency histogram: every job counted once, in the bucket its own hash's times put it in
        latencies = [job_latency(redis_conn, job_id) for job_id in registry_ids(redis_conn, 'q')]
        total = sum(value(samples, 'rqfast_job_latency_seconds_sum', queue='q', outcome=o) or 0 for o in OUTCOMES)
        assert total == pytest.approx(sum(latencies), abs=0.05)
        inf = value(samples, 'rqfast_job_latency_seconds_bucket', queue='q', outcome='success', le='+Inf')
        assert inf == 3
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


OUTCOMES = ('success', 'failure')


def registry_ids(conn: redis.Redis, queue: str) -> list[str]:
    ids = conn.zrange(keys.finished_registry_key(queue), 0, -1) + conn.zrange(keys.failed_registry_key(queue), 0, -1)
    return [i.decode() for i in ids]


def job_latency(conn: redis.Redis, job_id: str) -> float:
    job = rqfast.Job.fetch(job_id, connection=conn)
    assert job.started_at is not None and job.enqueued_at is not None
    return (job.started_at - job.enqueued_at).total_seconds()


def test_exporter_serves_every_queue_and_worker_and_samples_the_histograms(redis_conn: redis.Redis) -> None:
    enqueue_mix(redis_conn, 'a')
    rqfast.Queue('b', connection=redis_conn).enqueue(jobs.noop)
    SimpleWorker(['a'], connection=redis_conn, name='wa').work(burst=True, logging_level='WARNING')
    port = free_port()
    stop = threading.Event()
    thread = threading.Thread(target=serve_forever, args=(redis_conn, port, '127.0.0.1', stop), daemon=True)
    thread.start()
    try:
        samples = wait_until(lambda: _try_scrape(port), 10, 'the exporter')
        for queue in ('a', 'b'):
            for status, count in redis_counts(redis_conn, queue).items():
                assert value(samples, 'rq_jobs', queue=queue, status=status) == count, (queue, status)
        assert value(samples, 'rq_jobs', queue='b', status='queued') == 1
        # the worker has stopped (burst): its hash is gone, and so is its line, as in rq-exporter
        assert not any(dict(labels).get('name') == 'wa' for labels in samples.get('rq_workers', {}))
        assert value(samples, 'rqfast_job_duration_seconds_count', queue='a', outcome='success') == 3
        assert value(samples, 'rqfast_job_latency_seconds_count', queue='a', outcome='failure') == 2
        again = scrape(port)  # the jobs already sampled are not counted twice
        assert value(again, 'rqfast_job_duration_seconds_count', queue='a', outcome='success') == 3
    finally:
        stop.set()
        thread.join(5)


def _try_scrape(port: int) -> Any:
    try:
        return scrape(port)
    except OSError:
        return None


def test_exporter_reads_redis_in_few_round_trips(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    for name in ('a', 'b', 'c'):
        rqfast.Queue(name, connection=redis_conn).enqueue(jobs.noop)
    registry = exporter_registry(redis_conn)
    prometheus_client.generate_latest(registry)  # the sample of what is there
    counter = count_round_trips(lambda: prometheus_client.generate_latest(registry))
    assert counter.count == 2, counter.commands  # the names, then every count in one pipeline


def test_worker_with_metrics_still_costs_one_round_trip_per_job(
    redis_conn: redis.Redis, count_round_trips: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = JobTimes(prometheus_client.CollectorRegistry())
    monkeypatch.setattr(SimpleWorker, 'job_observer', times.observe)  # as serve_worker sets it on the worker
    q = rqfast.Queue('q', connection=redis_conn)
    cost, small, large = per_job(
        redis_conn, count_round_trips, lambda n: q.enqueue_many([q.prepare_data(jobs.add, (i, 1)) for i in range(n)])
    )
    assert cost == 1, (small.commands, large.commands)
    observed = times.duration.labels('q', 'success')._sum.get()
    assert observed > 0


def test_metrics_port_without_prometheus_client_names_the_extra(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, 'prometheus_client', None)  # as if not installed
    # these tests run rqfast from its checkout (an editable install): the hint is the checkout's extra
    # (.ci/run checks the installed wheel's: pip install 'rqfast[metrics]')
    assert metrics.install_hint() in (f"pip install -e '{ROOT}[metrics]'", "pip install -e '.[metrics]'")
    monkeypatch.chdir(ROOT)
    assert metrics.install_hint() == "pip install -e '.[metrics]'"
    result = CliRunner().invoke(main, ['worker', 'q', '-u', redis_url, '--metrics-port', str(free_port()), '-b'])
    assert result.exit_code == 1
    assert "pip install -e '.[metrics]'" in result.output
    result = CliRunner().invoke(main, ['metrics', '-u', redis_url])
    assert result.exit_code == 1
    assert "pip install -e '.[metrics]'" in result.output


def test_worker_logs_where_it_serves_metrics(redis_url: str) -> None:
    command = [sys.executable, '-m', 'rqfast.cli', 'worker', 'q', '-u', redis_url, '--metrics-port', '0', '--burst']
    out = subprocess.run(command, env={**os.environ, 'PYTHONPATH': ROOT}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    [line] = [line for line in out.stderr.splitlines() if 'metrics' in line]
    port = int(line.rsplit(':', 1)[1].split('/')[0])  # port 0: the one the system gave
    assert line.endswith(f'serving Prometheus metrics at http://127.0.0.1:{port}/metrics') and port > 0, line


def test_metrics_command_serves_the_exporter(redis_url: str, redis_conn: redis.Redis) -> None:
    rqfast.Queue('q', connection=redis_conn).enqueue(jobs.noop)
    port = free_port()
    command = [sys.executable, '-m', 'rqfast.cli', 'metrics', '-u', redis_url, '--port', str(port)]
    env = {**os.environ, 'PYTHONPATH': ROOT}
    proc = subprocess.Popen(command + ['--host', '127.0.0.1'], env=env, stdout=subprocess.PIPE, text=True)
    try:
        samples = wait_until(lambda: _try_scrape(port), 20, 'rqfast metrics')
        assert value(samples, 'rq_jobs', queue='q', status='queued') == 1
    finally:
        proc.send_signal(signal.SIGTERM)  # as a supervisor stops it: status 0, and it says so
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
    assert out.splitlines() == [
        f'Serving metrics at http://127.0.0.1:{port}/metrics',
        'Stopped serving metrics (SIGTERM)',
    ]


def test_exporter_leaves_out_a_worker_hash_it_cannot_read(redis_conn: redis.Redis) -> None:
    for name, state in (('good', 'idle'), ('odd', 'hibernating')):
        redis_conn.hset(keys.worker_key(name), mapping={'queues': 'q', 'state': state, 'successful_job_count': 4})
        redis_conn.sadd(keys.WORKERS, keys.worker_key(name))
    samples = {
        family.name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
        for family in text_string_to_metric_families(
            prometheus_client.generate_latest(exporter_registry(redis_conn)).decode()
        )
    }
    assert value(samples, 'rq_workers', name='good', queues='q', state='idle') == 1
    assert not any(dict(labels).get('name') == 'odd' for labels in samples['rq_workers'])
