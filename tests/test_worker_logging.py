"""work(logging_level=...) applies its level at each call, as RQ 3.0 and 2.12 do (in a process of its own:
the level and handler are the process's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]

TWO_RUNS = """
import sys
from redis import Redis
from rqfast import Queue, SimpleWorker
conn = Redis.from_url(sys.argv[1])
q = Queue('logging', connection=conn)
for level in sys.argv[2:]:
    q.enqueue('tests.jobs.div_by_zero')
    print(f'--- {level}', file=sys.stderr, flush=True)
    SimpleWorker([q], connection=conn).work(burst=True, logging_level=level)
"""


def runs(redis_url: str, *levels: str) -> dict[str, str]:
    """What each work() call of one process logged (stderr), by its level."""
    out = subprocess.run(
        [sys.executable, '-c', TWO_RUNS, redis_url, *levels], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    parts = out.stderr.split('--- ')[1:]
    return {part.split('\n', 1)[0]: part.split('\n', 1)[1] for part in parts}


def test_each_work_call_applies_its_logging_level(redis_conn: redis.Redis, redis_url: str) -> None:
    logged = runs(redis_url, 'ERROR', 'CRITICAL', 'INFO')
    assert 'ZeroDivisionError' in logged['ERROR'] and 'Listening on' not in logged['ERROR']
    assert logged['CRITICAL'] == ''  # the failed job's ERROR line and traceback: below CRITICAL
    assert 'ZeroDivisionError' in logged['INFO'] and 'Listening on' in logged['INFO']
