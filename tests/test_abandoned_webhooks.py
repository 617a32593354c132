"""RQ 3.0's cleanup sends the `failed` webhooks of an abandoned job that ends failed (not of one
retried); RQ 2.12's sends none. rqfast's maintenance pass (the worker's) and StartedJobRegistry.cleanup."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
import redis

from rqfast import Queue, Retry, maintenance
from rqfast.registry import StartedJobRegistry
from rqfast.webhook import Webhook
from tests.test_maintenance import claim, jobs, lapse

pytestmark = pytest.mark.timeout(60)

HOOKS = [Webhook('http://127.0.0.1:9/done', 'finished'), Webhook('http://127.0.0.1:9/fail', 'failed')]


def sent(monkeypatch: pytest.MonkeyPatch, compat: str, clean: Any) -> list[tuple[str, str]]:
    from rqfast import defaults

    monkeypatch.setattr(defaults, 'RQFAST_COMPAT', compat)
    with mock.patch.object(Webhook, 'send', autospec=True) as send:
        clean()
    return [(call.args[0].job_status, call.args[1].id) for call in send.call_args_list]


@pytest.mark.parametrize('compat', ['', '2.12'])
def test_the_maintenance_pass_sends_failed_webhooks_of_abandoned_jobs(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch, compat: str
) -> None:
    q = Queue('q', connection=redis_conn)
    failed = q.enqueue(jobs.noop, webhooks=HOOKS)
    retried = q.enqueue(jobs.noop, webhooks=HOOKS, retry=Retry(max=1))
    claim(redis_conn), claim(redis_conn)
    calls = sent(monkeypatch, compat, lambda: maintenance.clean_registries(redis_conn, ['q'], timestamp=lapse()))
    assert calls == ([] if compat else [('failed', failed.id)])
    assert retried.get_status().value == 'queued'


def test_started_registry_cleanup_sends_them_too(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    q = Queue('q', connection=redis_conn)
    job = q.enqueue(jobs.noop, webhooks=HOOKS)
    claim(redis_conn)
    registry = StartedJobRegistry('q', connection=redis_conn)
    assert sent(monkeypatch, '', lambda: registry.cleanup(lapse())) == [('failed', job.id)]
