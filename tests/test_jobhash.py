"""The Job <-> hash mapping round-trips fields rqfast stores but does not act on (webhooks)."""

from __future__ import annotations

import redis
import rq
from rq.webhook import Webhook

from rqfast.job import Job


def test_a_job_with_webhooks_written_by_rq_is_fetched_and_saved_unchanged(connection: redis.Redis) -> None:
    queue = rq.Queue('hooks', connection=connection)
    job = queue.enqueue('operator.add', 1, 2, webhooks=[Webhook('https://example.invalid/done', 'finished')])
    stored = connection.hget(job.key, 'webhooks')

    fetched = Job.fetch(job.id, connection=connection)
    fetched.save()

    assert connection.hget(job.key, 'webhooks') == stored
    assert rq.job.Job.fetch(job.id, connection=connection).webhooks[0].url == 'https://example.invalid/done'
