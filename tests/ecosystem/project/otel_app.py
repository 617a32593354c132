"""An app traced with OpenTelemetry and opentelemetry-instrumentation-rq's RQInstrumentor, with the switch on
(`import rq` is rqfast). Every finished span is appended to RQFAST_OTEL_SPANS as a JSON line, synchronously
(SimpleSpanProcessor), by whichever process ends it: the worker, a horse, a spawned child.

Importing this module sets the tracing up when RQFAST_OTEL_SPANS is set; the worker classes live here so that a
spawn worker's children import it too (as RQ 3.0's children import their worker's class).
"""

from __future__ import annotations

import json
import os
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileExporter(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        lines = []
        for span in spans:
            parent = span.parent
            lines.append(
                json.dumps(
                    {
                        'name': span.name,
                        'kind': span.kind.name,
                        'scope': span.instrumentation_scope.name if span.instrumentation_scope else '',
                        'trace_id': format(span.context.trace_id, '032x'),
                        'parent': format(parent.span_id, '016x') if parent else None,
                        'attributes': dict(span.attributes or {}),
                        'pid': os.getpid(),
                    },
                    default=str,
                )
            )
        fd = os.open(os.environ['RQFAST_OTEL_SPANS'], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ('\n'.join(lines) + '\n').encode())
        finally:
            os.close(fd)
        return SpanExportResult.SUCCESS


def setup() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter()))
    trace.set_tracer_provider(provider)
    from opentelemetry_instrumentation_rq import RQInstrumentor

    RQInstrumentor().instrument()


if os.environ.get('RQFAST_OTEL_SPANS'):
    setup()

from rq import SimpleWorker as _Simple  # noqa: E402  (after the instrumentation, as an app would)
from rq import SpawnWorker as _Spawn  # noqa: E402
from rq import Worker as _Worker  # noqa: E402


class SimpleWorker(_Simple):
    pass


class Worker(_Worker):
    pass


class SpawnWorker(_Spawn):
    pass


INSTRUMENTATION = 'opentelemetry_instrumentation_rq.instrumentor'


def read_spans(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path) as spans:
        return [json.loads(line) for line in spans if line.strip()]
