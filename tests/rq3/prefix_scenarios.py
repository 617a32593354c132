"""Run with RQ_KEY_PREFIX set (rq 3.0 and rqfast read it at import): `python -m tests.rq3.prefix_scenarios URL`.

Prints, as JSON, the key names both build, and what each reads after the other enqueued and ran jobs;
tests/rq3/test_rq3_key_prefix.py compares them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import redis
import rq
import rq.command
import rq.executions
import rq.rate_limit
import rq.registry
import rq.results
import rq.suspension
import rq.worker
import rq.worker_registration

import rqfast
import rqfast.command
import rqfast.registry
import rqfast.worker
from rqfast import keys
from tests.rq3 import probe_jobs


def key_names(conn: redis.Redis) -> dict[str, list[str]]:
    """Each name as rq 3.0 builds it and as rqfast builds it (rq's worker names its connection: CLIENT SETNAME)."""
    job = rq.job.Job('j1', connection=conn)
    worker = rq.worker.SimpleWorker(['q'], name='w1', connection=conn)
    execution = rq.executions.Execution('x1', 'j1', connection=conn, worker_name='w1')
    limits = rq.rate_limit.RateLimitRegistry('k', connection=conn)
    pairs = {
        'queues': (rq.Queue.redis_queues_keys, keys.QUEUES),
        'queue': (rq.Queue('q', connection=conn).key, keys.queue_key('q')),
        'job': (job.key, keys.job_key('j1')),
        'dependents': (job.dependents_key, keys.dependents_key('j1')),
        'dependencies': (job.dependencies_key, keys.dependencies_key('j1')),
        'results': (rq.results.Result.get_key('j1'), keys.results_key('j1')),
        'execution': (execution.key, keys.execution_key('j1', 'x1')),
        'executions': (rq.executions.ExecutionRegistry('j1', connection=conn).key, keys.executions_key('j1')),
        'worker_executions': (execution.worker_executions_key, keys.worker_executions_key('w1')),
        'worker': (worker.key, keys.worker_key('w1')),
        'workers': (rq.worker_registration.REDIS_WORKER_KEYS, keys.WORKERS),
        'workers_by_queue': (rq.worker_registration.WORKERS_BY_QUEUE_KEY % 'q', keys.workers_by_queue_key('q')),
        'pubsub': (rq.command.PUBSUB_CHANNEL_TEMPLATE % 'w1', rqfast.command.PUBSUB_CHANNEL_TEMPLATE % 'w1'),
        'suspended': (rq.suspension.WORKERS_SUSPENDED, keys.SUSPENDED),
        'rl': (limits.config_key, keys.rate_limit_config_key('k')),
        'rl_allowed': (limits.allowed_key, keys.rate_limit_allowed_key('k')),
        'rl_keys': (rq.rate_limit.RateLimitRegistry.rl_keys_key, keys.RATE_LIMIT_KEYS),
    }
    for name in ('Started', 'Finished', 'Failed', 'Deferred', 'Scheduled', 'Canceled'):
        theirs = getattr(rq.registry, f'{name}JobRegistry')('q', connection=conn).key
        ours = getattr(rqfast.registry, f'{name}JobRegistry')('q', connection=conn).key
        pairs[name] = (theirs, ours)
    return {name: list(pair) for name, pair in pairs.items()}


def run_chain(producer: str, worker: str, conn: redis.Redis, url: str) -> dict[str, Any]:
    conn.flushdb()
    q = (rq.Queue if producer == 'rq' else rqfast.Queue)('q', connection=conn)
    a = q.enqueue(probe_jobs.add, 1, 1, job_id='a')
    q.enqueue(probe_jobs.add, 2, 2, job_id='b', depends_on=a)
    bad = q.enqueue(probe_jobs.boom, 'no', job_id='bad')
    q.enqueue(probe_jobs.add, 3, 3, job_id='after_bad', depends_on=bad)
    seer = 'rqfast_sees_workers' if worker == 'rq' else 'rq_sees_workers'  # the other reads the busy worker
    q.enqueue(getattr(probe_jobs, seer), url, job_id='seen')
    cls = rq.worker.SimpleWorker if worker == 'rq' else rqfast.worker.SimpleWorker
    cls(['q'], name='w3', connection=conn).work(burst=True, logging_level='WARNING')
    out: dict[str, Any] = {}
    for job_id in ('a', 'b', 'bad', 'after_bad'):
        job3 = rq.job.Job.fetch(job_id, connection=conn)
        jobf = rqfast.Job.fetch(job_id, connection=conn)
        status = jobf.get_status()
        out[job_id] = [str(job3.get_status().value), str(getattr(status, 'value', status))]
        out[job_id] += [job3.return_value(), jobf.return_value()]
    out['seen'] = rq.job.Job.fetch('seen', connection=conn).return_value()
    out['registries'] = {
        name: [
            sorted(getattr(rq.registry, f'{name}JobRegistry')('q', connection=conn).get_job_ids()),
            sorted(getattr(rqfast.registry, f'{name}JobRegistry')('q', connection=conn).get_job_ids()),
        ]
        for name in ('Finished', 'Failed', 'Deferred')
    }
    out['stray'] = sorted(k.decode() for k in conn.scan_iter() if not k.decode().startswith(keys.PREFIX))
    return out


def main(url: str) -> None:
    conn = redis.Redis.from_url(url)
    runs = {f'{p}->{w}': run_chain(p, w, conn, url) for p, w in (('rq', 'rq'), ('rq', 'rqfast'), ('rqfast', 'rq'))}
    print(json.dumps({'prefix': keys.PREFIX, 'keys': key_names(conn), 'runs': runs}))


if __name__ == '__main__':
    main(sys.argv[1])
