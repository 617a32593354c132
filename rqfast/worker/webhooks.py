"""Sending a worker's webhooks: one daemon thread per worker, fed through a bounded queue.

A job's webhooks go out once the worker has recorded how it ended (its finish_job call), as RQ
sends them once its pipeline is written: 'finished' ones when it returned, 'failed' ones when it
ended failed (retries exhausted; not while it is retried, not when it was stopped). The worker hands
them to this thread and goes on to its next job at once, so a slow, failing or hanging endpoint
never delays or fails a job. The thread starts with the first webhook (a worker whose jobs have
none has no thread), sends them in order with Webhook.send (one attempt, its timeout, failures
logged), and a stopping worker waits for what is still pending for WEBHOOK_SHUTDOWN_WAIT seconds
at most. The payload is a snapshot of the job (WebhookJob): a forking worker's parent takes the
function's name from its horse's report, never from the job's data.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from ..as_rq import logger_name
from ..defaults import WEBHOOK_QUEUE_SIZE
from ..engine import Plan
from ..outcome import Outcome, OutcomeKind
from ..status import JobStatus
from ..webhook import Webhook

logger = logging.getLogger(logger_name('webhook'))


@dataclass(frozen=True)
class WebhookJob:
    """What a webhook's payload says about the job, taken when its end was recorded."""

    id: str
    func_name: str | None
    enqueued_at: datetime | None
    ended_at: datetime | None


def status_to_send(outcome: Outcome, plan: Plan) -> JobStatus | None:
    """Which webhooks a recorded end sends: FAILED when the job ended failed, FINISHED when it returned."""
    status = plan.fields.get('status')
    if status == JobStatus.FAILED.value:
        return JobStatus.FAILED
    if outcome.kind is OutcomeKind.SUCCESS:  # (its status may be unwritten: result_ttl=0)
        return JobStatus.FINISHED
    return None  # retried, put back by Retry or Repeat, or stopped


class WebhookSender:
    """A worker's sending thread and the webhooks waiting for it, in order."""

    def __init__(self, worker_name: str, capacity: int = WEBHOOK_QUEUE_SIZE) -> None:
        self.worker_name = worker_name
        self.capacity = capacity
        self._pending: deque[tuple[Webhook, WebhookJob, str | None]] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._busy = False
        self._thread: threading.Thread | None = None

    def submit(self, webhook: Webhook, job: WebhookJob, exc_string: str | None) -> None:
        """Queue one webhook, never blocking: dropped (and logged) when the queue is full."""
        with self._ready:
            if len(self._pending) >= self.capacity:
                logger.warning(
                    'Worker %s: %d webhooks waiting to be sent; not sending %s for job %s',
                    self.worker_name,
                    len(self._pending),
                    webhook.url,
                    job.id,
                )
                return
            self._pending.append((webhook, job, exc_string))
            self._closing = False
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name='rqfast-webhooks', daemon=True)
                self._thread.start()
            self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                self._busy = False
                while not self._pending and not self._closing:
                    self._ready.wait()
                if not self._pending:
                    return
                webhook, job, exc_string = self._pending.popleft()
                self._busy = True
            try:
                webhook.send(job, exc_string=exc_string)  # logs its own failures; a replaced send may raise
            except Exception:
                logger.warning('Failed to send webhook to %s for job %s', webhook.url, job.id, exc_info=True)

    def close(self, wait: float) -> int:
        """Send what is pending, for `wait` seconds at most; the number of webhooks left unsent (dropped)."""
        with self._ready:
            self._closing = True
            self._ready.notify()
            thread = self._thread
        if thread is not None:
            thread.join(wait)
        with self._ready:
            left = len(self._pending) + (1 if self._busy else 0)
            self._pending.clear()
        if left:
            logger.warning('Worker %s: stopping with %d webhook(s) not sent after %s s', self.worker_name, left, wait)
        return left
