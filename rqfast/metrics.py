"""Prometheus metrics (the `metrics` extra): a worker's own endpoint, and a whole-Redis exporter.

rq-exporter's names where they overlap (`rq_jobs{queue,status}`, `rq_workers{name,state,queues}`,
`rq_workers_success_total`, `rq_workers_failed_total`, `rq_workers_working_time_total`), so its
dashboards keep working; rqfast's own under `rqfast_`: the job latency (enqueued -> started) and
duration (started -> ended) histograms, by queue and outcome.

A worker observes its histograms from the times it holds when it records a job's end (no round trip
on the job's path; the worker calls `job_observer` only when metrics are on). The exporter, which runs
no job, samples them instead: at each scrape, the newest entries of each finished and failed registry
it has not seen yet, read in one pipelined call. The counts are read at scrape time, pipelined: two
round trips for the whole Redis (one for a worker, which knows its queues), three when there are
new jobs to sample.
"""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from . import keys
from .dates import utcparse
from .outcome import Outcome, OutcomeKind
from .text import as_text
from .worker import workerhash

if TYPE_CHECKING:
    from redis import Redis

    from .job import Job
    from .worker import BaseWorker


def install_hint() -> str:
    """How to add the metrics extra, fitting how rqfast was installed: from a source checkout (an editable
    install, or the checkout on sys.path) `pip install -e '<checkout>[metrics]'`, else the package's extra."""
    package = pathlib.Path(__file__).resolve().parent
    checkout = package.parent
    setup_cfg = checkout / 'setup.cfg'
    if setup_cfg.is_file() and 'name = rqfast' in setup_cfg.read_text(errors='replace'):
        where = '.' if pathlib.Path.cwd().resolve() == checkout else str(checkout)
        return f"pip install -e '{where}[metrics]'"
    return "pip install 'rqfast[metrics]'"


def missing() -> str:
    return f"rqfast's metrics need prometheus_client: {install_hint()} (or pip install prometheus_client)"


def metrics_url(host: str, port: int) -> str:
    """Where a metrics endpoint bound to host:port is read (an IPv6 address in brackets)."""
    return f'http://[{host}]:{port}/metrics' if ':' in host else f'http://{host}:{port}/metrics'


# rq-exporter's statuses (rq_jobs{status}): how each is counted, from the queue's list or a registry
JOB_COUNTS: list[tuple[str, Callable[[str], str]]] = [
    ('queued', keys.queue_key),
    ('started', keys.started_registry_key),
    ('finished', keys.finished_registry_key),
    ('failed', keys.failed_registry_key),
    ('deferred', keys.deferred_registry_key),
    ('scheduled', keys.scheduled_registry_key),
]
# Seconds: from a fast job's milliseconds to a slow one's hour.
BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
SAMPLE_SIZE = 100  # newest entries per finished/failed registry an exporter scrape looks at
# the registries an exporter samples, and the outcome label of what it finds there (a worker's own words)
SAMPLED: list[tuple[Callable[[str], str], str]] = [
    (keys.finished_registry_key, OutcomeKind.SUCCESS.value),
    (keys.failed_registry_key, OutcomeKind.FAILURE.value),
]


class MetricsUnavailable(RuntimeError):
    """prometheus_client is not installed."""


def prometheus() -> Any:
    """The prometheus_client module; MetricsUnavailable, naming the extra to install, without it."""
    try:
        import prometheus_client.core  # optional: imported only when metrics are asked for (.core: the families)
    except ImportError as exc:
        raise MetricsUnavailable(missing()) from exc
    return prometheus_client


class RedisCollector:
    """rq-exporter's gauges and counters, read from Redis at each scrape.

    `queues` and `workers` (worker keys) narrow it to those (a worker's endpoint); None: every queue
    in `rq:queues` and every worker in `rq:workers`, read in one more round trip.
    """

    def __init__(
        self,
        connection: Redis,
        queues: Iterable[str] | None = None,
        workers: Iterable[str] | None = None,
        sampler: JobTimes | None = None,
    ) -> None:
        self.connection = connection
        self.queues = None if queues is None else list(queues)
        self.workers = None if workers is None else list(workers)
        self.sampler = sampler  # an exporter's histograms, fed from the registries' newest entries
        self._seen: dict[str, set[str]] = {}  # by registry key: the ids sampled at the last scrape

    def collect(self) -> Iterator[Any]:
        core = prometheus().core
        queue_names, worker_keys = self._names()
        pipe = self.connection.pipeline(transaction=False)
        for queue in queue_names:
            for status, count_key in JOB_COUNTS:
                (pipe.llen if status == 'queued' else pipe.zcard)(count_key(queue))
        for worker_key in worker_keys:
            pipe.hgetall(worker_key)
        sampled = self._sampled_keys(queue_names)
        for key, _, _ in sampled:
            pipe.zrevrange(key, 0, SAMPLE_SIZE - 1)
        replies = iter(pipe.execute())
        jobs = core.GaugeMetricFamily('rq_jobs', 'RQ jobs by state', labels=['queue', 'status'])
        for queue in queue_names:
            for status, _ in JOB_COUNTS:
                jobs.add_metric([queue, status], int(next(replies)))
        yield from self._workers(core, worker_keys, [next(replies) for _ in worker_keys])
        yield jobs
        if self.sampler is not None:  # sampled now, so this scrape shows the jobs ended since the last
            self._sample(sampled, [next(replies) for _ in sampled])
            yield from self.sampler.families()

    def _names(self) -> tuple[list[str], list[str]]:
        if self.queues is not None and self.workers is not None:
            return self.queues, self.workers
        pipe = self.connection.pipeline(transaction=False)
        pipe.smembers(keys.QUEUES)
        pipe.smembers(keys.WORKERS)
        queue_keys, worker_keys = pipe.execute()
        queues = self.queues
        if queues is None:
            found = (as_text(key) for key in queue_keys)
            queues = sorted(key[len(keys.QUEUE_PREFIX) :] for key in found if key.startswith(keys.QUEUE_PREFIX))
        workers = self.workers if self.workers is not None else sorted(as_text(key) for key in worker_keys)
        return queues, workers

    def _workers(self, core: Any, worker_keys: list[str], hashes: list[dict[Any, Any]]) -> Iterator[Any]:
        """rq-exporter's worker families (a worker whose hash is gone, or cannot be read, is left out)."""
        state = core.GaugeMetricFamily('rq_workers', 'RQ workers', labels=['name', 'state', 'queues'])
        labels = ['name', 'queues']
        success = core.CounterMetricFamily('rq_workers_success', 'RQ workers success count', labels=labels)
        failed = core.CounterMetricFamily('rq_workers_failed', 'RQ workers fail count', labels=labels)
        working = core.CounterMetricFamily('rq_workers_working_time', 'RQ workers spent seconds', labels=labels)
        for worker_key, raw in zip(worker_keys, hashes, strict=True):
            try:
                record = workerhash.parse(worker_key, raw) if raw else None
            except ValueError:  # a hash this version cannot read (an unknown state): the others are still shown
                record = None
            if record is None:
                continue
            queues = ','.join(record.queues)
            state.add_metric([record.name, record.state_text, queues], 1)
            success.add_metric([record.name, queues], record.successful_job_count)
            failed.add_metric([record.name, queues], record.failed_job_count)
            working.add_metric([record.name, queues], record.total_working_time)
        yield from (state, success, failed, working)

    # --- an exporter's histograms: sampled from the registries

    def _sampled_keys(self, queue_names: list[str]) -> list[tuple[str, str, str]]:
        if self.sampler is None:
            return []
        return [(key(queue), queue, outcome) for queue in queue_names for key, outcome in SAMPLED]

    def _sample(self, sampled: list[tuple[str, str, str]], newest: list[list[Any]]) -> None:
        """Observe the jobs that entered a registry since the last scrape: one HMGET each, in one call."""
        if self.sampler is None:
            return
        new: list[tuple[str, str, str]] = []  # (queue, outcome, job id)
        for (key, queue, outcome), ids in zip(sampled, newest, strict=True):
            current = {as_text(job_id) for job_id in ids}
            new.extend((queue, outcome, job_id) for job_id in sorted(current - self._seen.get(key, set())))
            self._seen[key] = current
        if not new:
            return
        pipe = self.connection.pipeline(transaction=False)
        for _, _, job_id in new:
            pipe.hmget(keys.job_key(job_id), 'enqueued_at', 'started_at', 'ended_at')
        for (queue, outcome, _), times in zip(new, pipe.execute(), strict=True):
            self.sampler.observe_times(queue, outcome, *[_date(value) for value in times])


def _date(value: Any) -> float | None:
    """An epoch from a job hash's date field; None when absent or unreadable."""
    if not value:
        return None
    try:
        return utcparse(as_text(value)).timestamp()
    except ValueError:
        return None


class JobTimes:
    """rqfast_job_latency_seconds and rqfast_job_duration_seconds, by queue and outcome."""

    def __init__(self, registry: Any) -> None:
        """`registry`: where the histograms are registered; None: nowhere (the exporter's collector yields them)."""
        prom = prometheus()
        labels = ['queue', 'outcome']
        self.latency = prom.Histogram(
            'rqfast_job_latency_seconds',
            'Seconds from a job enqueued to its run started',
            labels,
            registry=registry,
            buckets=BUCKETS,
        )
        self.duration = prom.Histogram(
            'rqfast_job_duration_seconds', 'Seconds a job ran', labels, registry=registry, buckets=BUCKETS
        )

    def families(self) -> Iterator[Any]:
        """The two histograms' families, for a collector that yields them itself (registry None)."""
        yield from self.latency.collect()
        yield from self.duration.collect()

    def observe(self, job: Job, outcome: Outcome) -> None:
        """A worker's job_observer: the times the worker holds for a job whose end it has just recorded."""
        enqueued, started, ended = job.enqueued_at, job.started_at, job.ended_at
        self.observe_times(
            job.origin or '',
            outcome.kind.value,
            enqueued.timestamp() if enqueued else None,
            started.timestamp() if started else None,
            ended.timestamp() if ended else None,
        )

    def observe_times(
        self, queue: str, outcome: str, enqueued: float | None, started: float | None, ended: float | None
    ) -> None:
        if started is None:
            return
        if enqueued is not None:
            self.latency.labels(queue, outcome).observe(max(0.0, started - enqueued))
        if ended is not None:
            self.duration.labels(queue, outcome).observe(max(0.0, ended - started))


# --- serving


def serve(registry: Any, port: int, host: str = '127.0.0.1') -> Any:
    """Prometheus text at http://host:port/metrics, from prometheus_client's daemon thread; its server."""
    server, _ = prometheus().start_http_server(port, addr=host, registry=registry)
    return server


def serve_worker(worker: BaseWorker, port: int, host: str = '127.0.0.1') -> Any:
    """Metrics of one worker: its queues' counts, its own hash, and the histograms of the jobs it records."""
    prom = prometheus()
    registry = prom.CollectorRegistry()
    registry.register(RedisCollector(worker.connection, worker.queue_names(), [worker.key]))
    worker.job_observer = JobTimes(registry).observe
    return serve(registry, port, host)


def exporter_registry(connection: Redis) -> Any:
    """The registry `rqfast metrics` serves: every queue and worker, and histograms sampled from the registries."""
    registry = prometheus().CollectorRegistry()
    registry.register(RedisCollector(connection, sampler=JobTimes(None)))  # its histograms: yielded by the collector
    return registry


def serve_forever(
    connection: Redis,
    port: int,
    host: str = '127.0.0.1',
    stop: threading.Event | None = None,
    on_listening: Callable[[str], object] | None = None,
) -> None:
    """`rqfast metrics`: serve the exporter until interrupted (or `stop` is set); `on_listening(url)` once
    it listens (port 0: the port the system gave)."""
    server = serve(exporter_registry(connection), port, host)
    if on_listening is not None:
        on_listening(metrics_url(host, server.server_address[1]))
    stop = stop or threading.Event()
    try:
        while not stop.wait(1):  # (a timed wait: Ctrl+C gets through)
            pass
    finally:
        server.shutdown()
