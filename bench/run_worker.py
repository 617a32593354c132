"""One worker in a fresh interpreter, for the counted and memory rows.

    python -m bench.run_worker --module rq --class SimpleWorker --url redis://... --queue bench_rq
    python -m bench.run_worker --bullmq --url redis://... --jobs 200 --concurrency 1

Prints one JSON line: seconds spent in work() and the process' resident memory before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import time
from pathlib import Path
from typing import Any

from bench.redis_server import Target


def resident_mib() -> float:
    """This process' resident set size (psutil if installed, else /proc/self/status)."""
    try:
        return float(importlib.import_module('psutil').Process().memory_info().rss) / 2**20
    except ImportError:
        pass
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    return float('nan')


def run_rq_like(args: argparse.Namespace) -> dict[str, float]:
    from bench.libs import import_from
    from bench.rq_side import work_kwargs

    # python -m puts the current directory (the repository) first on sys.path: --root goes ahead of it.
    module = import_from(args.module, Path(args.root)) if args.root else importlib.import_module(args.module)
    target = Target(args.url)
    connection = target.connect()
    queue = module.Queue(args.queue, connection=connection)
    worker = getattr(module, args.worker_class)([queue], connection=connection)
    extra: dict[str, Any] = {'max_jobs': args.max_jobs} if args.max_jobs else {}
    kwargs = work_kwargs(worker, **extra)
    rss_start = resident_mib()
    start = time.monotonic()
    worker.work(**kwargs)
    elapsed = time.monotonic() - start
    return {'elapsed': elapsed, 'rss_start_mib': rss_start, 'rss_end_mib': resident_mib()}


def run_bullmq(args: argparse.Namespace) -> dict[str, float]:
    from bench.bull_side import drain

    target = Target(args.url)
    rss_start = resident_mib()
    elapsed = asyncio.run(drain(target, args.jobs, args.concurrency, timeout=args.timeout))
    return {'elapsed': elapsed, 'rss_start_mib': rss_start, 'rss_end_mib': resident_mib()}


def main() -> None:
    parser = argparse.ArgumentParser(prog='python -m bench.run_worker', description=__doc__)
    parser.add_argument('--url', required=True)
    parser.add_argument('--module', default='rq', help='rq or rqfast')
    parser.add_argument('--root', help='import --module from this directory, and check that it did (rqfast columns)')
    parser.add_argument('--class', dest='worker_class', default='SimpleWorker')
    parser.add_argument('--queue', default='bench_rq')
    parser.add_argument('--max-jobs', type=int, default=0)
    parser.add_argument('--bullmq', action='store_true', help='run a BullMQ Worker instead')
    parser.add_argument('--jobs', type=int, default=0, help='BullMQ: stop after this many jobs')
    parser.add_argument('--concurrency', type=int, default=1, help="BullMQ: the Worker's concurrency")
    parser.add_argument('--timeout', type=float, default=600)
    parser.add_argument(
        '--any-cpu', action='store_true', help="undo the bench's CPU pinning (for rows that do not report time)"
    )
    args = parser.parse_args()
    if args.any_cpu and hasattr(os, 'sched_setaffinity'):
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    result = run_bullmq(args) if args.bullmq else run_rq_like(args)
    print(json.dumps(result))


if __name__ == '__main__':
    main()
