"""A small RQ 3.0 application (app3.py), run against rq 3.0.0 and again with its imports swapped to
rqfast (rewritten as RQ's suite is, tests/rq_suite/rewrite.py): the same observations, hooks with
`execution`, callbacks, rate limits and the executions API included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rq_suite.rewrite import rewrite_source

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).with_name('app3.py')


def run_app(source: Path, url: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(source), url], cwd=ROOT, env=env, capture_output=True, text=True, timeout=50
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_same_application_on_rq_and_rqfast(redis_url: str, tmp_path: Path) -> None:
    ported = tmp_path / 'app3_rqfast.py'
    ported.write_text(rewrite_source(APP.read_text()))
    assert 'from rqfast.rate_limit import' in ported.read_text()
    expected = run_app(APP, redis_url)
    # the oracle: what RQ 3.0 itself does with this app
    assert expected['status'] == {'ok': 'finished', 'limited': 'finished', 'bad': 'failed'}
    assert [e[0] for e in expected['events']].count('perform') == 3
    assert run_app(ported, redis_url) == expected
