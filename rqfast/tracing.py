"""OpenTelemetry, when installed (`pip install 'rqfast[tracing]'`): a job carries its producer's trace.

At enqueue, the active span's W3C traceparent is stored in the job hash as `rqfast_trace` (an
additive field: RQ's readers ignore it); whoever runs the job (a SimpleWorker, a horse, the sync
path) opens a CONSUMER span around the run, child of that producer span, with the queue, the
function, the outcome and the retries as attributes.

Without opentelemetry-api, ENABLED is False, checked once per job by the callers (no import is
tried again per job). With it but no SDK, the API's spans are no-ops. The API is imported only once a
span is needed: a process that never imported it has no span active and no tracer provider set (but
for one named in OTEL_PYTHON_TRACER_PROVIDER), so a spawned child whose job is not traced does not
pay for it (about 15 ms of imports per child).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .outcome import Outcome, OutcomeKind

API = 'opentelemetry.trace'


def _installed() -> bool:
    try:  # an optional dependency: looked for once, here
        return importlib.util.find_spec('opentelemetry') is not None
    except (ImportError, ValueError):  # (None in sys.modules: as if not installed)
        return False


ENABLED = _installed()
_GONE = object()  # (a future API without the _TRACER_PROVIDER global: active() asks the API itself)
_PROVIDER_FROM_ENV = 'OTEL_PYTHON_TRACER_PROVIDER' in os.environ


def _api() -> Any:
    """opentelemetry.trace, imported the first time a span is needed (see the module docstring)."""
    return sys.modules.get(API) or importlib.import_module(API)


def _propagator() -> Any:
    global _PROPAGATOR
    if _PROPAGATOR is None:
        module = importlib.import_module('opentelemetry.trace.propagation.tracecontext')
        _PROPAGATOR = module.TraceContextTextMapPropagator()
    return _PROPAGATOR


_PROPAGATOR: Any = None

TRACE_FIELD = 'rqfast_trace'  # the job hash field (jobhash.JobRecord._rqfast_trace)
TRACER_NAME = 'rqfast'


def current_traceparent() -> str | None:
    """The active span's W3C traceparent; None when no span is active (or the extra is not installed)."""
    trace = sys.modules.get(API) if ENABLED else None  # (never imported: no span can be active)
    if trace is None or not trace.get_current_span().get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _propagator().inject(carrier)
    return carrier.get('traceparent')


def active() -> bool:
    """Whether a run gets a span: opentelemetry is installed and a tracer provider is configured (the
    API's stand-in, a ProxyTracerProvider, means none). Asked per run, so a provider set later counts.

    The API's own answer looks the provider's environment variable up in os.environ on every call while
    none is set, a cost a run of a few dozen microseconds feels; so its global is read first (with the
    variable read once, at import), and the API is asked only if that global is set or gone.
    """
    if not ENABLED:
        return False
    trace = sys.modules.get(API)
    if trace is None and not _PROVIDER_FROM_ENV:
        return False  # the API was never imported: no provider can have been set
    trace = trace or _api()
    if getattr(trace, '_TRACER_PROVIDER', _GONE) is None and not _PROVIDER_FROM_ENV:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


@contextmanager
def consumer_span(job: Any) -> Iterator[Any]:
    """The span of one run of the job (current while it runs), child of the span that enqueued it.

    Only called when active(). The caller hands the run's outcome to `ended` before the block ends.
    """
    stored = getattr(job, '_rqfast_trace', None)
    trace = _api()
    parent = _propagator().extract({'traceparent': stored}) if stored else None
    queue = job.origin or ''
    attributes: dict[str, Any] = {
        'messaging.system': 'rq',
        'messaging.operation.type': 'process',
        'messaging.destination.name': queue,
        'messaging.message.id': job.id,
    }
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        f'process {queue}', context=parent, kind=trace.SpanKind.CONSUMER, attributes=attributes
    ) as span:
        if span.is_recording():
            _describe(span, job)
        yield span


def _describe(span: Any, job: Any) -> None:
    """The job's function and retries, read only when the span is recorded (a sealed job has no function)."""
    try:
        span.set_attribute('rqfast.job.func_name', str(job.func_name or ''))
    except Exception:  # its call cannot be read (a poison job): the outcome says so
        pass
    span.set_attribute('rqfast.job.number_of_retries', job.number_of_retries or 0)
    if job.retries_left is not None:
        span.set_attribute('rqfast.job.retries_left', job.retries_left)


def ended(span: Any, outcome: Outcome) -> Outcome:
    """Record how the run ended on its span; the outcome, unchanged."""
    if span.is_recording():
        span.set_attribute('rqfast.job.outcome', outcome.kind.value)
        if outcome.kind not in (OutcomeKind.SUCCESS, OutcomeKind.RETRY):
            trace = _api()
            span.set_status(trace.Status(trace.StatusCode.ERROR, outcome.exc_string.strip().rpartition('\n')[2]))
    return outcome


def flush(timeout_millis: int = 5000) -> None:
    """Export what a process about to os._exit still holds (a horse's spans, under a BatchSpanProcessor)."""
    force_flush = getattr(_api().get_tracer_provider(), 'force_flush', None)
    if force_flush is not None:
        force_flush(timeout_millis)


@contextmanager
def paused() -> Iterator[None]:
    """No span for the runs inside (a horse's warm-up run of a stand-in job); a single-threaded process's."""
    global ENABLED
    was, ENABLED = ENABLED, False
    try:
        yield
    finally:
        ENABLED = was
