"""Sentry's cost on a forking Worker at concurrency 4 (issue 30): 8 jobs of 0.5 s each, with Sentry off, with
rqfast.contrib.sentry (the switch off) and with Sentry's own RqIntegration (RQFAST_AS_RQ=1), each mode in a fresh
interpreter against a private redis-server; the events go to a transport that keeps them in memory, no network.

    python -m bench.sentry_overhead [--jobs 8] [--seconds 0.5] [--concurrency 4] [--runs 3]

Prints each mode's wall time (median of --runs) and its ratio to Sentry off; the target is 1.2x at most.
Needs sentry-sdk (setup.cfg's test extra). Never asserts: a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

from .redis_server import PrivateRedis

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import json, os, sys, time
import redis, sentry_sdk
from sentry_sdk.transport import Transport

class Memory(Transport):
    def capture_envelope(self, envelope):
        pass

mode = os.environ['SENTRY_MODE']
if mode != 'off':
    integrations = []
    if mode == 'contrib':
        from rqfast.contrib.sentry import RqfastIntegration
        integrations.append(RqfastIntegration())
    sentry_sdk.init(dsn='http://public@sentry.invalid/1', transport=Memory, traces_sample_rate=1.0,
                    integrations=integrations)
from rqfast import Queue, Worker
conn = redis.Redis.from_url(os.environ['REDIS_URL'])
conn.flushdb()
queue = Queue('sentry-bench', connection=conn)
for _ in range(int(os.environ['JOBS'])):
    queue.enqueue('time.sleep', float(os.environ['SECONDS']))
worker = Worker([queue], connection=conn, concurrency=int(os.environ['CONCURRENCY']))
started = time.monotonic()
worker.work(burst=True, logging_level='WARNING')
print(json.dumps(time.monotonic() - started))
"""

MODES = {'off': {}, 'contrib': {}, 'switch': {'RQFAST_AS_RQ': '1'}}


def measure(url: str, mode: str, args: argparse.Namespace) -> float:
    env = {k: v for k, v in os.environ.items() if k != 'RQFAST_AS_RQ'}
    env.update(MODES[mode], SENTRY_MODE=mode, REDIS_URL=url, JOBS=str(args.jobs), SECONDS=str(args.seconds))
    env.update(CONCURRENCY=str(args.concurrency), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(RUN)], capture_output=True, text=True, env=env, timeout=600
    )
    if done.returncode:
        raise SystemExit(f'{mode}: {done.stderr[-2000:]}')
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m bench.sentry_overhead', description=__doc__.split('\n\n')[0])
    parser.add_argument('--jobs', type=int, default=8)
    parser.add_argument('--seconds', type=float, default=0.5)
    parser.add_argument('--concurrency', type=int, default=4)
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args(argv)
    ideal = args.jobs / args.concurrency * args.seconds
    server = PrivateRedis()
    try:
        times = {mode: statistics.median(measure(server.url, mode, args) for _ in range(args.runs)) for mode in MODES}
    finally:
        server.stop()
    print(f'{args.jobs} jobs of {args.seconds} s, forking Worker, concurrency {args.concurrency} (ideal {ideal:.2f} s)')
    for mode, seconds in times.items():
        print(f'  sentry {mode:8} {seconds:6.2f} s  {seconds / times["off"]:.2f}x')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
