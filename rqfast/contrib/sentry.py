"""Sentry for rqfast without the switch: what Sentry's `RqIntegration` reports for RQ, for rqfast's jobs.

    import sentry_sdk
    from rqfast.contrib.sentry import RqfastIntegration

    sentry_sdk.init(dsn=..., traces_sample_rate=1.0, integrations=[RqfastIntegration()])

For every job an rqfast worker runs (every worker class and concurrency: the integration watches the run
itself, in the process that runs it, through rqfast.execution's run observers; no Redis call of its own):

- one transaction (op `queue.task.rq`, named after the job's function), continuing the trace of the code
  that enqueued it: `Queue.enqueue_job` stores the active trace's headers in `job.meta` under
  `_sentry_trace_headers`, the key Sentry's RqIntegration uses, so rq's and rqfast's workers continue
  each other's traces;
- one error event per job that fails for good (no retry left), with RQ's `rq-job` extra (id, function,
  description, arguments as the client's PII settings allow, enqueue and start times);
- no second event from the worker's own error line: the `rqfast.worker` (and `rq.worker`) loggers are
  ignored, as Sentry's integration ignores `rq.worker`.

A forking worker's horse and a spawn worker's child flush Sentry's client before they exit. With the switch
on (`RQFAST_AS_RQ=1`, `import rq` is rqfast) Sentry's own RqIntegration does this through RQ's hooks; this
one then stands aside whenever that one is enabled, so a job is never reported twice.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sentry_sdk
from sentry_sdk.consts import OP, SPANDATA
from sentry_sdk.integrations import Integration
from sentry_sdk.integrations.logging import ignore_logger
from sentry_sdk.scope import should_send_default_pii
from sentry_sdk.tracing import TransactionSource
from sentry_sdk.utils import capture_internal_exceptions, event_from_exception
from sentry_sdk.utils import format_timestamp as _format_timestamp

from ..execution import add_run_observer
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..queue import Queue
from ..timeouts import JobTimeoutException

__all__ = ['TRACE_HEADERS_KEY', 'RqfastIntegration']

SENSITIVE_DATA_SUBSTITUTE = '[Filtered]'  # sentry_sdk.utils' word for what the PII settings withhold

TRACE_HEADERS_KEY = '_sentry_trace_headers'  # job.meta's key: Sentry's RqIntegration reads and writes the same
ORIGIN = 'auto.queue.rqfast'


class RqfastIntegration(Integration):
    """Sentry's RQ integration for rqfast's workers and queues (see the module)."""

    identifier = 'rqfast'
    origin = ORIGIN

    @staticmethod
    def setup_once() -> None:
        add_run_observer(_watch_run, flush=_flush)
        Queue.enqueue_job = _with_trace_headers(Queue.enqueue_job)  # type: ignore[method-assign]
        for name in ('rqfast.worker', 'rq.worker'):
            ignore_logger(name)


def _active() -> bool:
    """Whether this integration reports: enabled, and not standing aside for Sentry's own RqIntegration
    (enabled while rqfast serves `import rq`: it patched the same classes, through RQ's hooks)."""
    client = sentry_sdk.get_client()
    if client.get_integration(RqfastIntegration) is None:
        return False
    switch = sys.modules.get('_rqfast_as_rq')
    return not (switch is not None and switch.installed() and client.get_integration('rq') is not None)


def _flush() -> None:
    if _active():
        sentry_sdk.get_client().flush()


def _with_trace_headers(enqueue_job: Callable[..., Job]) -> Callable[..., Job]:
    @functools.wraps(enqueue_job)
    def enqueue_job_with_trace(self: Queue, job: Job, *args: Any, **kwargs: Any) -> Job:
        if _active():
            scope = sentry_sdk.get_current_scope()
            if scope.span is not None:
                job.meta[TRACE_HEADERS_KEY] = dict(scope.iter_trace_propagation_headers())
        return enqueue_job(self, job, *args, **kwargs)

    return enqueue_job_with_trace


def _ignore(outcome: Outcome) -> None:
    return None


@contextmanager
def _watch_run(job: Job) -> Iterator[Callable[[Outcome], None]]:
    """A run observer (rqfast.execution): the job's transaction around its run, its failure's event."""
    if not _active():
        yield _ignore
        return
    with sentry_sdk.new_scope() as scope:
        scope.clear_breadcrumbs()
        scope.add_event_processor(_event_processor(weakref.ref(job)))
        headers = job.meta.get(TRACE_HEADERS_KEY) if isinstance(job.meta, dict) else None
        transaction = sentry_sdk.continue_trace(
            headers if isinstance(headers, dict) else {},
            op=OP.QUEUE_TASK_RQ,
            name='unknown RQ task',
            source=TransactionSource.TASK,
            origin=ORIGIN,
        )
        with capture_internal_exceptions():
            transaction.name = job.func_name or transaction.name
        with sentry_sdk.start_transaction(transaction, custom_sampling_context={'rq_job': job}) as span:
            span.set_data(SPANDATA.MESSAGING_DESTINATION_NAME, job.origin)
            span.set_data(SPANDATA.MESSAGING_MESSAGE_ID, job.id)

            def ended(outcome: Outcome) -> None:
                failed = outcome.kind is OutcomeKind.FAILURE
                span.set_status('internal_error' if failed else 'ok')
                retried = bool(job.retries_left) and (job.retries_left or 0) > 0
                if failed and not retried and outcome.exc_info is not None:
                    _capture(outcome.exc_info)

            yield ended


def _capture(exc_info: Any) -> None:
    client = sentry_sdk.get_client()
    event, hint = event_from_exception(
        exc_info, client_options=client.options, mechanism={'type': 'rqfast', 'handled': False}
    )
    sentry_sdk.capture_event(event, hint=hint)


def _event_processor(weak_job: Callable[[], Job | None]) -> Callable[[Any, dict[str, Any]], Any]:
    def processor(event: Any, hint: dict[str, Any]) -> Any:
        job = weak_job()
        if job is not None:
            with capture_internal_exceptions():
                event.setdefault('extra', {})['rq-job'] = _job_extra(job)
            exc_info = hint.get('exc_info')
            if exc_info and isinstance(exc_info[1], JobTimeoutException):
                event['fingerprint'] = ['rq', 'JobTimeoutException', job.func_name]
        return event

    return processor


def _job_extra(job: Job) -> dict[str, Any]:
    """RQ's `rq-job` extra, as Sentry's RqIntegration writes it."""
    extra: dict[str, Any] = {'job_id': job.id, 'func': job.func_name, 'description': job.description}
    if should_send_default_pii():
        extra.update(args=job.args, kwargs=job.kwargs)
    else:
        extra.update(args=SENSITIVE_DATA_SUBSTITUTE, kwargs=SENSITIVE_DATA_SUBSTITUTE)
    if job.enqueued_at:
        extra['enqueued_at'] = _format_timestamp(job.enqueued_at)
    if job.started_at:
        extra['started_at'] = _format_timestamp(job.started_at)
    return extra
