"""RQ_KEY_PREFIX beside rq 3.0: with the same prefix set (both read it at import, so the scenarios run
in a subprocess, as rq 3.0's own tests/test_key_prefix.py does), rq 3.0 and rqfast build the same key
and channel names, each runs and reads the other's jobs (dependents included), each sees the other's
busy worker, and no key outside the prefix is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import redis

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize('prefix', ['myapp', '{rq}'])
def test_rq3_and_rqfast_share_a_prefixed_deployment(prefix: str, redis_url: str, redis_conn: redis.Redis) -> None:
    env = dict(os.environ, RQ_KEY_PREFIX=prefix, PYTHONPATH=ROOT)
    out = subprocess.run(
        [sys.executable, '-m', 'tests.rq3.prefix_scenarios', redis_url],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.splitlines()[-1])
    assert report['prefix'] == f'{prefix}:'
    for name, (theirs, ours) in report['keys'].items():
        assert ours == theirs, name
        assert ours.startswith(f'{prefix}:'), name
    oracle = report['runs']['rq->rq']
    assert oracle['a'][:2] == ['finished', 'finished'] and oracle['b'][2:] == [4, 4]
    assert oracle['after_bad'][:2] == ['deferred', 'deferred']
    assert oracle['registries']['Finished'][0] == ['a', 'b', 'seen']
    for pair in ('rq->rqfast', 'rqfast->rq'):
        run = report['runs'][pair]
        for key in ('a', 'b', 'bad', 'after_bad', 'registries'):
            assert run[key] == oracle[key], (pair, key)
        for name, (theirs, ours) in run['registries'].items():
            assert theirs == ours, (pair, name)
        assert run['stray'] == [], (pair, run['stray'])
        # the reader (the other implementation) saw the busy worker w3 running the job 'seen'
        [seen] = run['seen']
        assert seen['name'] == 'w3' and seen['current_job_id'] == 'seen', (pair, seen)
