"""The inline runner: a worker at concurrency 1 runs its job on the loop's own thread (loop.py).

So a SimpleWorker's job runs under SIGALRM timeouts, RQ's hooks are called where RQ calls them, and a
forking or spawn worker watches its horse from that thread. The worker's finisher (finishing.py)
runs the job and records it with ONE finish_job call that also claims the next job, which runs next:
one round trip per job, the turns of the loop chained with no call of their own in between.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from .. import engine, keys
from .waiting import log_dropped

if TYPE_CHECKING:
    from .base import BaseWorker


class Inline:
    """Runs each job where the loop runs; its record claims the next."""

    def __init__(self, worker: BaseWorker) -> None:
        self.worker = worker

    def run_from(self, claim: engine.Claim, one_more: Callable[[], bool]) -> None:
        """Run the claim, then each job its record claimed, while `one_more()` (asked as each starts) says
        the one after it may be claimed too."""
        while claim:
            claim = self.run(claim, one_more(), None)

    def run(self, claim: engine.Claim, claim_next: bool, now: datetime | None) -> engine.Claim:
        """The worker's finisher runs the job on this thread and records it, claiming the next
        (unless not claim_next); the answer is that claim. An error the job did not cause (a script
        error) is logged with its id, and work goes on."""
        worker = self.worker
        try:
            with keys.within(claim.queue):  # (sharded by queue: the job's keyspace, its worker's or not)
                next_claim = worker._finisher.process_claim(claim, claim_next=claim_next, now=now)
        except Exception:
            worker.log.exception(
                'Worker %s: could not finish job %s; maintenance will find it', worker.name, claim.job_id
            )
            worker._recorder.idle()
            return engine.Claim()
        if next_claim:
            worker._queue_order.claimed_from(next_claim.queue or '')
        log_dropped(worker.log, worker.name, next_claim)
        return next_claim

    def stop_job(self, job_id: str) -> bool:
        """A stop-job command is the worker's to handle (a forking worker kills its horse; a SimpleWorker
        ignores it, as RQ's does): False."""
        return False
