"""The chaos suite's harness: a fleet of worker processes of every class, faults, and a per-job account.

Every job is `chaos_jobs.mark`, which leaves an idempotency marker per run outside Redis. `Fleet` starts
workers, kills them or their horses (and restarts a killed worker, as a supervisor would), and notices a
worker that exits without being told to. `Recovery` watches, after each kill, the started-registry
entries of the job the dead process held until they are gone: the recovery bound. `account()` says
what each job became, and checks it:

- finished: status finished with exactly one successful result entry;
- failed: status failed with a reason (the latest result's exc_string);
- runs: at most 1 + retry.max bodies started; never more than one completed run recorded as finished;
- lost (not queued, started, finished or failed) and stuck (still started) are failures of the suite.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from rqfast import Queue, Retry, keys
from rqfast.job import Job

try:
    import fleet
except ImportError:  # tests/ became a package
    from tests import fleet  # type: ignore[no-redef]

CLASSES = ('SimpleWorker', 'Worker', 'SpawnWorker')
SOAK = os.environ.get('RQFAST_CHAOS_SOAK', '') not in ('', '0')
REPORTS: list[str] = []  # printed at the end of the pytest run (conftest.py)


def scale(ci: int, soak: int) -> int:
    return soak if SOAK else ci


# ---------------------------------------------------------------------------------------------------
# Jobs


@dataclass
class Enqueued:
    ids: list[str]
    retry_max: dict[str, int]  # job id -> Retry max (0: none)


def enqueue(conn: redis.Redis, marks: Path, count: int, rng: random.Random, max_seconds: float) -> Enqueued:
    """`count` marker jobs, half with Retry(max=2), each running 0..max_seconds."""
    q = Queue('q', connection=conn)
    ids, retry_max = [], {}
    specs = []
    for i in range(count):
        retried = i % 2 == 0
        specs.append(
            Queue.prepare_data(
                'chaos_jobs.mark',
                args=(str(marks), round(rng.uniform(0, max_seconds), 3)),
                retry=Retry(max=2) if retried else None,
                timeout=60,
            )
        )
    for start in range(0, len(specs), 500):
        for job in q.enqueue_many(specs[start : start + 500]):
            ids.append(job.id)
    for i, job_id in enumerate(ids):
        retry_max[job_id] = 2 if i % 2 == 0 else 0
    return Enqueued(ids, retry_max)


# ---------------------------------------------------------------------------------------------------
# The fleet


@dataclass
class Tracked:
    process: fleet.WorkerProcess
    worker_class: str
    killed: bool = False
    stopped: bool = False


class Fleet:
    def __init__(self, url: str, log_dir: Path, options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.log_dir = log_dir
        self.options = options or {}
        self.workers: list[Tracked] = []
        self.unexpected_exits: list[str] = []
        self.kills: Counter[str] = Counter()

    def start(self, worker_class: str) -> Tracked:
        options = {'class': worker_class, 'idle_wakeup': 1, **self.options}
        process = fleet.WorkerProcess(self.url, options, self.log_dir / f'w{len(self.workers)}-{worker_class}.log')
        tracked = Tracked(process, worker_class)
        self.workers.append(tracked)
        return tracked

    def alive(self) -> list[Tracked]:
        return [w for w in self.workers if not w.killed and not w.stopped]

    def wait_registered(self, conn: redis.Redis, timeout: float = 60) -> None:
        """Until every live worker has registered (its constructor talks to Redis, as RQ's does: a worker
        started while the server is down exits 1, which a fault that must hit running workers avoids)."""
        for tracked in self.alive():
            tracked.process.wait_registered(conn, timeout)

    def check_exits(self) -> None:
        """A worker that exited without being killed or told to stop."""
        for tracked in self.alive():
            code = tracked.process.proc.poll()
            if code is not None:
                tracked.stopped = True
                log = tracked.process.log()[-3000:]
                self.unexpected_exits.append(f'{tracked.worker_class} {tracked.process.name} exited {code}:\n{log}')

    def lines_about(self, failures: list[str], limit: int = 40) -> list[str]:
        """The workers' log lines that name the jobs of `failures` (Account.failures: each starts with its id)."""
        ids = [failure.split()[0] for failure in failures]
        found = []
        for tracked in self.workers:
            for line in tracked.process.log().splitlines():
                if any(job_id in line for job_id in ids):
                    found.append(f'{tracked.worker_class} {tracked.process.name[:8]}: {line[:400]}')
        return found[:limit]

    def horses(self, tracked: Tracked) -> list[int]:
        """The pids of the horses of a forking or spawn worker (the breeder's children, or its own)."""
        children = tracked.process.children()
        if tracked.worker_class == 'SpawnWorker':
            return children
        grandchildren = []
        for pid in children:
            try:
                text = Path(f'/proc/{pid}/task/{pid}/children').read_text()
            except OSError:
                continue
            grandchildren += [int(p) for p in text.split()]
        return grandchildren or [pid for pid in children if not _has_children(pid)]

    def stop_all(self) -> list[str]:
        """SIGTERM every live worker; the ones that did not exit 0 (their logs)."""
        bad = []
        for tracked in self.alive():
            tracked.process.signal(signal.SIGTERM)
        for tracked in self.alive():
            try:
                code = tracked.process.wait(60)
            except AssertionError as exc:
                bad.append(str(exc)[-2000:])
                continue
            tracked.stopped = True
            if code != 0:
                bad.append(f'{tracked.worker_class} exited {code}:\n{tracked.process.log()[-2000:]}')
        return bad

    def close(self) -> None:
        for tracked in self.workers:
            tracked.process.stop()


def _has_children(pid: int) -> bool:
    try:
        return bool(Path(f'/proc/{pid}/task/{pid}/children').read_text().split())
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------------
# The recovery bound


@dataclass
class Watched:
    job_id: str
    members: list[bytes]
    killed_at: float
    what: str
    gone_at: float | None = None


class Recovery:
    """After a kill: how long until the started-registry entries of the job the dead process held are gone."""

    def __init__(self, conn: redis.Redis) -> None:
        self.conn = conn
        self.watched: list[Watched] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def before_kill(self, worker_name: str, what: str) -> None:
        job_id = self.conn.hget(keys.worker_key(worker_name), 'current_job')
        if not job_id:
            return
        job_id = job_id.decode()
        prefix = f'{job_id}:'.encode()
        members = [m for m in self.conn.zrange(keys.started_registry_key('q'), 0, -1) if m.startswith(prefix)]
        if members:
            self.watched.append(Watched(job_id, members, time.monotonic(), what))

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            self._check()

    def _check(self) -> None:
        try:
            for watched in self.watched:
                if watched.gone_at is None:
                    started = keys.started_registry_key('q')
                    if all(self.conn.zscore(started, m) is None for m in watched.members):
                        watched.gone_at = time.monotonic()
        except redis.RedisError:
            pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def bound(self) -> tuple[float, int, int]:
        """(the longest kill-to-gone delay seen, entries gone, entries still there).

        Looks once more first: the pass that recovered the last job may have run after the poller's
        last look (the suite ends as soon as every job is settled)."""
        self._check()
        gone = [w.gone_at - w.killed_at for w in self.watched if w.gone_at is not None]
        return (max(gone) if gone else 0.0), len(gone), sum(w.gone_at is None for w in self.watched)

    def slowest(self) -> list[tuple[str, float]]:
        return sorted(((w.what, w.gone_at - w.killed_at) for w in self.watched if w.gone_at), key=lambda x: -x[1])[:5]


# ---------------------------------------------------------------------------------------------------
# The account


@dataclass
class Account:
    counts: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    completed_then_abandoned: set[str] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)  # each job that failed visibly: its id and reason's last line

    def line(self, title: str) -> str:
        names = ('jobs', 'finished_once', 'failed_visibly', 'retried', 'ran_twice_or_more', 'lost', 'stuck')
        names += ('finished_twice', 'too_many_runs', 'failed_after_body_completed')
        return f'{title}: ' + ', '.join(f'{n}={self.counts.get(n, 0)}' for n in names)


def terminal(conn: redis.Redis, ids: list[str]) -> int:
    """How many of the jobs are finished or failed."""
    pipe = conn.pipeline(transaction=False)
    for job_id in ids:
        pipe.hget(keys.job_key(job_id), 'status')
    return sum(s in (b'finished', b'failed') for s in pipe.execute())


def account(conn: redis.Redis, marks: Path, enqueued: Enqueued) -> Account:
    result = Account()
    for job_id in enqueued.ids:
        result.counts['jobs'] += 1
        status = conn.hget(keys.job_key(job_id), 'status')
        started, completed = fleet.runs(marks, job_id)
        entries = conn.xrange(keys.results_key(job_id))
        successes = sum(fields.get(b'type') == b'1' for _, fields in entries)
        limit = 1 + enqueued.retry_max[job_id]
        if started > 1:
            result.counts['ran_twice_or_more'] += 1
        if enqueued.retry_max[job_id] and started > 1:
            result.counts['retried'] += 1
        if started > limit:
            result.counts['too_many_runs'] += 1
            result.problems.append(f'{job_id}: {started} runs, at most {limit} allowed')
        if status == b'finished':
            if successes == 1:
                result.counts['finished_once'] += 1
            else:
                result.counts['finished_twice'] += 1
                result.problems.append(f'{job_id}: finished with {successes} successful result entries')
        elif status == b'failed':
            latest = Job.fetch(job_id, connection=conn).latest_result()
            reason = latest.exc_string if latest is not None else ''
            if reason:
                result.counts['failed_visibly'] += 1
                last = reason.strip().splitlines()[-1]
                result.failures.append(f'{job_id} ({started} runs, {completed} completed): {last}')
            else:
                result.problems.append(f'{job_id}: failed without a reason')
            if completed and 'AbandonedJobError' in reason:  # a completed run whose outcome was never recorded
                result.counts['failed_after_body_completed'] += 1
                result.completed_then_abandoned.add(job_id)
        elif status == b'started':
            result.counts['stuck'] += 1
            result.problems.append(f'{job_id}: stuck started')
        else:
            result.counts['lost'] += 1
            result.problems.append(f'{job_id}: lost (status {status!r}, {started} runs)')
    return result


def wait_terminal(conn: redis.Redis, ids: list[str], deadline: float, fleet_: Fleet | None = None) -> int:
    done = 0
    while time.monotonic() < deadline:
        try:
            done = terminal(conn, ids)
        except redis.RedisError:
            done = 0
        if done == len(ids):
            break
        if fleet_ is not None:
            fleet_.check_exits()
        time.sleep(0.5)
    return done
