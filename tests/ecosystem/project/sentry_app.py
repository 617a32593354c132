"""An app reporting to Sentry, as a deployment would set it up, with a transport that writes every envelope item
to a file (RQFAST_SENTRY_EVENTS) instead of the network: the worker, its horses and spawned children all append
to it, so the test sees what each process sent.

Importing this module initializes Sentry when RQFAST_SENTRY_EVENTS is set (RQFAST_SENTRY_WITH: `switch`, Sentry's
own RqIntegration with RQFAST_AS_RQ=1; `contrib`, rqfast.contrib.sentry's RqfastIntegration). The worker classes
below live here so that a spawn worker's children import this module, and so set Sentry up, as RQ 3.0's children
import their worker's class.
"""

from __future__ import annotations

import json
import os
from typing import Any

import sentry_sdk
from sentry_sdk.transport import Transport


class FileTransport(Transport):
    """Each envelope item (event, transaction...) as one JSON line appended to RQFAST_SENTRY_EVENTS."""

    def capture_envelope(self, envelope: Any) -> None:
        lines = []
        for item in envelope.items:
            payload = item.payload.json
            if payload is None:
                continue
            lines.append(json.dumps({'type': item.type, 'pid': os.getpid(), 'payload': payload}, default=str))
        if lines:
            fd = os.open(os.environ['RQFAST_SENTRY_EVENTS'], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, ('\n'.join(lines) + '\n').encode())
            finally:
                os.close(fd)

    def flush(self, timeout: float, callback: Any = None) -> None:
        return None


def init() -> None:
    with_ = os.environ['RQFAST_SENTRY_WITH']
    integrations: list[Any] = []
    if with_ == 'contrib':
        from rqfast.contrib.sentry import RqfastIntegration

        integrations.append(RqfastIntegration())
    sentry_sdk.init(
        dsn='http://public@sentry.invalid/1',
        transport=FileTransport,
        traces_sample_rate=1.0,
        integrations=integrations,
        send_default_pii=True,
    )


if os.environ.get('RQFAST_SENTRY_EVENTS'):
    init()

if os.environ.get('RQFAST_SENTRY_WITH') == 'switch':
    from rq import SimpleWorker as _Simple
    from rq import SpawnWorker as _Spawn
    from rq import Worker as _Worker
else:
    from rqfast import SimpleWorker as _Simple
    from rqfast import SpawnWorker as _Spawn
    from rqfast import Worker as _Worker


class SimpleWorker(_Simple):
    pass


class Worker(_Worker):
    pass


class SpawnWorker(_Spawn):
    pass


def read_events(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path) as events:
        return [json.loads(line) for line in events if line.strip()]
