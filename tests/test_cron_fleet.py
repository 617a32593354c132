"""Cron schedulers side by side on one Redis, with fast schedules: two rqfast ones; rq's and two rqfast ones
(24 s by default, RQFAST_CRON_FLEET_SECONDS for longer); rq's then rqfast's, rq's stopping halfway.

What rqfast guarantees (docs/scheduling.md, Cron): an rqfast scheduler never enqueues a run that another scheduler (rq's
or rqfast's) enqueued before its script ran. For an interval job every run rqfast enqueues comes more than
`interval - tolerance` after every run enqueued before it; for a cron string, no run enqueued before it is
at or after the middle of the gap between its slot and the previous one. rq's scheduler checks nothing, so
it can still enqueue a run rqfast enqueued first (rq's behaviour): the test counts those and prints them.

The queue is never worked, so its list is the order in which the scripts ran, and every job hash is there to
read its description. Each scheduler process records the ids it enqueued (tests/cron_fleet_process.py).
"""

from __future__ import annotations

import itertools
import math
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import redis

from rqfast import keys
from rqfast.defaults import CRON_RUN_TOLERANCE

REPO_ROOT = Path(__file__).resolve().parents[1]
SECONDS = float(os.environ.get('RQFAST_CRON_FLEET_SECONDS', '24'))  # longer runs: set it (e.g. 300)

pytestmark = [pytest.mark.timeout(SECONDS + 90), pytest.mark.trial]  # a long trial: `python -m pytest -m trial`
# description -> ('interval', seconds) or ('cron', period in seconds); see FLEET_JOBS
SCHEDULES = {
    "tests.jobs.say_hello('every 1s')": ('interval', 1),
    "tests.jobs.say_hello('every 2s')": ('interval', 2),
    'tests.jobs.noop()': ('cron', 2),
    "tests.jobs.echo('cron 3s')": ('cron', 3),
}


def start(impl: str, url: str, tag: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(REPO_ROOT / 'tests' / 'cron_fleet_process.py'), impl, url, tag],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_registered(conn: redis.Redis, name: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 15
    while conn.zscore(keys.CRON_SCHEDULERS, name) is None:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ''
        assert time.monotonic() < deadline, f'{name} did not register'
        time.sleep(0.02)


# (impl, tag, seconds after the previous start, seconds after the first start to stop it at: None, the end)
Fleet = tuple[tuple[str, str, float, float | None], ...]
MIXED: Fleet = (('rqfast', 'a', 0.0, None), ('rq', 'rq', 1.3, None), ('rqfast', 'b', 1.4, None))


def stop(tag: str, proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0, f'{tag}: exit {proc.returncode}'


def run_fleet(conn: redis.Redis, url: str, fleet: Fleet = MIXED, seconds: float = SECONDS) -> tuple[float, float]:
    """Start the schedulers one after the other, stop each by SIGTERM when due; the rest at `seconds`."""
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        began = time.time()
        for impl, tag, delay, _ in fleet:
            time.sleep(delay)
            procs[tag] = start(impl, url, tag)
            wait_registered(conn, f'fleet-{tag}', procs[tag])
        for _, tag, _, stop_at in sorted(fleet, key=lambda member: member[3] or seconds):
            time.sleep(max(0.0, began + (stop_at or seconds) - time.time()))
            stop(tag, procs[tag])
        return began, time.time()
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def assert_on_schedule(found: dict[str, list[dict[str, Any]]], began: float, ended: float) -> None:
    """Every job ran on schedule all along (nobody starved it), the first 4 s and the last 1 s left out."""
    for description, (kind, period) in SCHEDULES.items():
        steady = sorted(e['score'] for e in found[description] if began + 4 <= e['score'] <= ended - 1)
        if kind == 'interval':
            gaps = [b - a for a, b in itertools.pairwise(steady)]
            assert max(gaps) <= 2 * period + 0.5, (description, gaps)
        else:
            slots = {math.floor(s / period) for s in steady}
            assert len(slots) >= (ended - 1 - began - 4) / period - 1, (description, sorted(slots))


def runs(conn: redis.Redis) -> dict[str, list[dict[str, Any]]]:
    """Per description, its runs in the order the scripts ran: id, owner, score (the history's)."""
    owners = {i.decode(): tag for tag in ('a', 'b', 'rq') for i in conn.smembers(f'fleet:{tag}')}
    scores: dict[str, float] = {}
    for name in ('tests.jobs.say_hello', 'cron-2s', 'cron-3s'):
        scores.update({i.decode(): s for i, s in conn.zrange(keys.cron_job_history_key(name), 0, -1, withscores=True)})
    by_description: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for raw in conn.lrange(keys.queue_key('fleet'), 0, -1):
        job_id = raw.decode()
        description = conn.hget(keys.job_key(job_id), 'description')
        assert description is not None and job_id in owners and job_id in scores, job_id
        by_description[description.decode()].append({'id': job_id, 'owner': owners[job_id], 'score': scores[job_id]})
    assert len(owners) == sum(len(v) for v in by_description.values()), 'a recorded id is not in the queue'
    return by_description


def too_early(kind: str, period: float, run: dict[str, Any], before: list[dict[str, Any]]) -> bool:
    """Whether `run` came while a run another scheduler enqueued before it still stood for the same one (see
    the docstring). A scheduler's own earlier runs are not: its previous slot's run, enqueued late on a
    loaded machine, is not this slot's (CI once saw one 1.2 s late; the script never refuses for `own`)."""
    before = [r for r in before if r['owner'] != run['owner']]
    if not before:
        return False
    latest = max(r['score'] for r in before)
    if kind == 'interval':  # (a first run counts any run of the last interval: this is the weaker bound)
        return run['score'] - latest <= period - min(CRON_RUN_TOLERANCE, period / 4)
    slot = math.floor(run['score'] / period) * period
    return latest >= slot - period / 2


def early_runs(found: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Per description, the runs enqueued while a run enqueued before them stood for the same one."""
    return {
        description: [e for i, e in enumerate(entries) if too_early(*SCHEDULES[description], e, entries[:i])]
        for description, entries in found.items()
    }


def test_two_rqfast_cron_schedulers_never_duplicate_a_run(redis_conn: redis.Redis, redis_url: str) -> None:
    fleet: Fleet = (('rqfast', 'a', 0.0, None), ('rqfast', 'b', 1.5, None))
    began, ended = run_fleet(redis_conn, redis_url, fleet, seconds=10)
    found = runs(redis_conn)
    assert set(found) == set(SCHEDULES)
    assert early_runs(found) == dict.fromkeys(SCHEDULES, [])
    assert_on_schedule(found, began, ended)


def test_rqfast_takes_over_when_rq_stops(redis_conn: redis.Redis, redis_url: str) -> None:
    """A rolling switch: rq's scheduler runs, rqfast's joins and follows it, rq's stops, rqfast's goes on
    from where rq's left off (no gap; rqfast runs no run twice)."""
    fleet: Fleet = (('rq', 'rq', 0.0, 8.0), ('rqfast', 'a', 1.3, None))
    began, ended = run_fleet(redis_conn, redis_url, fleet, seconds=15)
    found = runs(redis_conn)
    assert set(found) == set(SCHEDULES)
    early = [e for entries in early_runs(found).values() for e in entries]
    assert [e for e in early if e['owner'] != 'rq'] == []  # rqfast never enqueued a run another had enqueued
    # rq's scheduler checks nothing: under load it can enqueue a run rqfast enqueued a moment before, once
    # its own loop runs late past rqfast's grace (as in the side-by-side test below)
    assert len(early) <= sum(len(v) for v in found.values()) // 8, early
    assert_on_schedule(found, began, ended)
    for description, entries in found.items():
        owners = [e['owner'] for e in entries if e['score'] > began + 9]
        assert owners and set(owners) == {'a'}, (description, owners)


def test_rq_and_rqfast_cron_schedulers_side_by_side(redis_conn: redis.Redis, redis_url: str) -> None:
    began, ended = run_fleet(redis_conn, redis_url)
    found = runs(redis_conn)
    assert set(found) == set(SCHEDULES)
    report, rq_duplicates = [], 0
    for description in SCHEDULES:
        entries, early = found[description], early_runs(found)[description]
        # the guarantee: rqfast never enqueued a run another scheduler had enqueued
        assert [e for e in early if e['owner'] != 'rq'] == [], (description, early)
        rq_duplicates += len(early)
        counts = {tag: sum(e['owner'] == tag for e in entries) for tag in ('a', 'b', 'rq')}
        report.append(f'{description}: {len(entries)} runs {counts}, {len(early)} duplicated by rq')
    assert_on_schedule(found, began, ended)
    total = sum(len(v) for v in found.values())
    print(f'\n{SECONDS:.0f} s, {total} runs, {rq_duplicates} enqueued again by rq:\n  ' + '\n  '.join(report))
    # rqfast schedulers wait a grace past each due time while others are registered, so rq gets there
    # first: its duplicates are the runs it enqueues as it starts (it runs interval jobs at once), and
    # races lost under load (measured: 1 or 2 of about 58 runs, all at rq's start)
    assert rq_duplicates <= total // 8, '\n'.join(report)
