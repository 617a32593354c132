"""Observe what RQ 3.0.0 writes and reads in Redis: the evidence behind docs/rq-3.0-layout.md.

Run it in the rq 3.0 environment (`python -m tests.rq3 --probe` creates it and runs this), or
directly with a Python that has rq==3.0.0: `python -m tests.rq3.probe [--out FILE]`. It starts its
own redis-server on a free port (it never touches another server), captures its traffic with
`redis-cli MONITOR`, and prints, per flow, the commands sent (ids, epochs and dates replaced by
placeholders) and the keys left behind (type, TTL, content):

  enqueue, a SimpleWorker's per-job sequence, a busy worker seen through `Worker.all()`, worker
  death, dependents (deferred -> ready_to_enqueue -> queued), concurrency rate limits,
  `send_stop_execution_command`, and `RQ_KEY_PREFIX`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
JOBS = 'tests.rq3.probe_jobs'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


@contextmanager
def private_redis() -> Iterator[tuple[str, int, str]]:
    """A redis-server of our own: (url, port, its working directory)."""
    port = free_port()
    workdir = tempfile.mkdtemp(prefix='rq3-probe-')
    proc = subprocess.Popen(
        ['redis-server', '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a stop/kill of the horse's process group must never reach us
    )
    url = f'redis://127.0.0.1:{port}/0'
    conn = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            conn.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.02)
    try:
        yield url, port, workdir
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


class Monitor:
    """`redis-cli MONITOR` into a file; sections are delimited by ECHO markers we send."""

    def __init__(self, conn: redis.Redis, port: int, workdir: str) -> None:
        self.conn = conn
        self.path = os.path.join(workdir, 'monitor.log')
        self.out = open(self.path, 'w')  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(['redis-cli', '-p', str(port), 'monitor'], stdout=self.out)
        self._n = 0
        time.sleep(0.3)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.out.close()

    @contextmanager
    def section(self) -> Iterator[list[str]]:
        """Collects the commands sent between entering and leaving (the ECHOs themselves excluded)."""
        self._n += 1
        start, end = f'probe-start-{self._n}', f'probe-end-{self._n}'
        lines: list[str] = []
        self.conn.echo(start)
        yield lines
        self.conn.echo(end)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with open(self.path) as f:
                text = f.read()
            if f'"{end}"' in text:
                break
            time.sleep(0.05)
        inside = False
        for line in text.splitlines():
            if f'"{start}"' in line:
                inside = True
                continue
            if f'"{end}"' in line:
                break
            if inside:
                lines.append(line)


class Scrubber:
    """Replaces ids, epochs and dates by stable placeholders so the output reads as a protocol."""

    HOST = re.compile(r'("(?:pid|hostname)" |\b(?:pid|hostname)=)("[^"]*"|[^ |]+)')
    PYVERSION = re.compile(r'("python_version" |python_version=)("[^"]*"|[^|]+)')
    ADDR = re.compile(r'127\.0\.0\.1:\d+')
    SHA = re.compile(r'(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])')
    BLOB = re.compile(r'"(data|meta)" "(?:[^"\\]|\\.)*"')
    UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}')
    DATE = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z')
    EPOCH = re.compile(r'(?<![\d.])1[6-9]\d{8}(\.\d+)?(?![\d.])')
    MONITOR = re.compile(r'^\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$')

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def name(self, value: str, label: str) -> None:
        self.names[value] = label

    def __call__(self, text: str) -> str:
        for value, label in sorted(self.names.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(value, label)
        counter = {'n': 0}

        def uuid(m: re.Match[str]) -> str:
            v = m.group(0)
            if v not in self.names:
                counter['n'] += 1
                self.names[v] = f'<uuid{len(self.names) + 1}>'
            return self.names[v]

        text = self.SHA.sub('<sha>', text)
        text = self.HOST.sub(lambda m: m.group(1) + '<host/pid> ', text)
        text = self.PYVERSION.sub(lambda m: m.group(1) + '<python> ', text)
        text = self.ADDR.sub('<addr>', text)
        text = self.BLOB.sub(lambda m: f'"{m.group(1)}" <bytes>', text)
        text = self.UUID.sub(uuid, text)
        text = self.DATE.sub('<date>', text)
        text = self.EPOCH.sub(lambda m: '<epoch.f>' if m.group(1) else '<epoch>', text)
        return text

    def monitor(self, lines: list[str]) -> list[str]:
        out = []
        clients: dict[str, str] = {}
        for line in lines:
            m = self.MONITOR.match(line)
            if not m:
                continue
            client = 'lua' if m.group(1) == 'lua' else clients.setdefault(m.group(1), f'c{len(clients) + 1}')
            out.append(f'{client}: {self(m.group(2))}')
        return out


def per_job(lines: list[str]) -> tuple[list[str], int]:
    """The worker's commands from its first dequeue (LMOVE) to the next, and their round trips
    (a MULTI...EXEC block is one; every other command one; Lua-internal commands none)."""
    start = next(i for i, line in enumerate(lines) if '"LMOVE"' in line)
    end = next(i for i, line in enumerate(lines) if '"LMOVE"' in line and i > start)
    body = lines[start:end]
    trips, in_multi = 0, False
    for line in body:
        if line.startswith('lua:'):
            continue
        if '"MULTI"' in line:
            in_multi = True
        elif '"EXEC"' in line:
            in_multi = False
            trips += 1
        elif not in_multi:
            trips += 1
    return body, trips


def dump(conn: redis.Redis, scrub: Scrubber, pattern: str = '*') -> list[str]:
    """Every key matching `pattern`: type, TTL and content, sorted by key."""
    out = []
    for raw in sorted(conn.scan_iter(pattern)):
        key = raw.decode()
        kind = conn.type(raw).decode()
        ttl = conn.ttl(raw)
        if kind == 'hash':
            items = conn.hgetall(raw)
            body = ' | '.join(
                f'{k.decode()}={"<bytes>" if k in (b"data", b"meta") else v.decode(errors="replace")!s}'
                for k, v in sorted(items.items())
            )
        elif kind == 'zset':
            body = ' '.join(f'{m.decode()}@{s:g}' for m, s in conn.zrange(raw, 0, -1, withscores=True))
        elif kind == 'set':
            body = ' '.join(sorted(m.decode() for m in conn.smembers(raw)))
        elif kind == 'list':
            body = ' '.join(m.decode() for m in conn.lrange(raw, 0, -1))
        elif kind == 'stream':
            body = '; '.join(
                ' '.join(f'{k.decode()}={v.decode(errors="replace")[:40]}' for k, v in fields.items())
                for _, fields in conn.xrange(raw)
            )
        else:
            body = str(conn.get(raw))
        out.append(scrub(f'{key} [{kind} ttl={ttl}] {body}'))
    return out


def worker_process(url: str, name: str, env: dict[str, str], worker_class: str) -> subprocess.Popen[bytes]:
    """`rq worker --burst` on queue `probe` in a subprocess (signal handlers need a main thread)."""
    return subprocess.Popen(
        [sys.executable, '-m', 'rq.cli', 'worker', '--burst', '-u', url, '-n', name, '-w', worker_class, 'probe'],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a stop/kill of the horse's process group must never reach us
    )


def wait_until(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError('condition not met')


def run(emit: Callable[[str], None]) -> None:
    import rq
    from rq import Queue, SimpleWorker, Worker
    from rq.command import send_stop_execution_command
    from rq.job import Dependency, Job

    from tests.rq3 import probe_jobs

    emit(f'# rq {rq.__version__} probe (redis-py {redis.__version__})')
    with private_redis() as (url, port, workdir):
        conn = redis.Redis.from_url(url)
        emit(f'redis-server {conn.info("server")["redis_version"]}')
        mon = Monitor(conn, port, workdir)
        scrub = Scrubber()
        try:
            q = Queue('probe', connection=conn)

            def section(title: str) -> None:
                emit('')
                emit(f'## {title}')

            def show(lines: list[str], label: str = 'commands') -> None:
                emit(f'### {label} ({len(lines)})')
                for line in lines:
                    emit('    ' + line)

            # 1. enqueue ------------------------------------------------------------------------
            section('enqueue(add, 2, 3)')
            with mon.section() as lines:
                job = q.enqueue(probe_jobs.add, 2, 3)
            scrub.name(job.id, '<job1>')
            show(scrub.monitor(lines))
            show(dump(conn, scrub), 'keys')

            # 2. SimpleWorker, one job, burst ---------------------------------------------------
            section('SimpleWorker burst: one successful job (from worker start to exit)')
            w = SimpleWorker([q], connection=conn, name='probe-simple')
            with mon.section() as lines:
                w.work(burst=True)
            show(scrub.monitor(lines))
            show(dump(conn, scrub), 'keys')

            section('SimpleWorker per-job sequence (steady state: first dequeue to the next)')
            for kind, func, args in (('success', probe_jobs.add, (2, 3)), ('failure', probe_jobs.boom, ('bad',))):
                conn.flushdb()
                first = q.enqueue(func, *args)
                scrub.name(first.id, f'<{kind}>')
                q.enqueue(probe_jobs.add, 0, 0)
                with mon.section() as lines:
                    SimpleWorker([q], connection=conn, name=f'probe-{kind}').work(burst=True)
                body, trips = per_job(scrub.monitor(lines))
                commands = sum(1 for line in body if not line.startswith('lua:'))
                show(body, f'{kind}: {trips} round trips, {commands} commands including MULTI/EXEC')
                show(dump(conn, scrub, f'rq:*{first.id}*'), f'{kind}: the job keys after the run')

            # 3. a busy worker seen by Worker.all() -----------------------------------------------
            section('busy SimpleWorker (non-burst thread), seen by Worker.all()')
            conn.flushdb()
            release = 'probe-release-busy'
            job = q.enqueue(probe_jobs.wait_for_key, url, release)
            scrub.name(job.id, '<job3>')
            env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
            busy = worker_process(url, 'probe-busy', env, 'rq.SimpleWorker')
            wait_until(lambda: Job.fetch(job.id, connection=conn).get_status() == 'started')
            show(dump(conn, scrub), 'keys while busy')
            for seen in Worker.all(connection=conn):
                execs = seen.get_current_executions()
                emit(
                    scrub(
                        f'Worker.all(): name={seen.name} state={seen.get_state()} '
                        f'current_job_id={seen.get_current_job_id()} '
                        f'current_execution_count={seen.current_execution_count} '
                        f'executions={[(e.job_id, e.id, e.worker_name) for e in execs]}'
                    )
                )
            with mon.section() as lines:
                Worker.all(connection=conn)[0].get_current_job()
            show(scrub.monitor(lines), 'Worker.all()[0].get_current_job() reads')
            conn.set(release, 1)
            busy.wait(20)
            emit(f'after the burst exit: {dump(conn, scrub, "rq:worker:*")}')

            # 4. a busy worker the 2.12 way (current_job only, no executions index) --------------
            section('a worker hash the 2.12 way (state busy, current_job set, no executions index)')
            conn.flushdb()
            job = q.enqueue(probe_jobs.add, 1, 1)
            conn.hset(
                'rq:worker:probe-212',
                mapping={'state': 'busy', 'current_job': job.id, 'queues': 'probe', 'birth': '', 'pid': 1},
            )
            conn.sadd('rq:workers', 'rq:worker:probe-212')
            seen = Worker.all(connection=conn)[0]
            emit(scrub(f'Worker.all(): state={seen.get_state()} current_job_id={seen.get_current_job_id()}'))

            # 5. dependents ----------------------------------------------------------------------
            section('dependents: parent, child depends_on parent; SimpleWorker burst')
            conn.flushdb()
            parent = q.enqueue(probe_jobs.add, 1, 2)
            with mon.section() as lines:
                child = q.enqueue(probe_jobs.add, 3, 4, depends_on=Dependency(jobs=[parent]))
            scrub.name(parent.id, '<parent>')
            scrub.name(child.id, '<child>')
            show(scrub.monitor(lines), 'enqueue of the child')
            show(dump(conn, scrub), 'keys before the run')
            with mon.section() as lines:
                SimpleWorker([q], connection=conn, name='probe-deps').work(burst=True, max_jobs=1)
            show(scrub.monitor(lines), 'the parent job, start to finish (max_jobs=1)')
            emit(f'child status after the parent: {Job.fetch(child.id, connection=conn).get_status()}')
            show(dump(conn, scrub, 'rq:*ready*'), 'ready registry')

            # 6. rate limits ----------------------------------------------------------------------
            section('rate limit: RateLimit(key="reports", concurrency=2), three jobs')
            from rq import RateLimit

            conn.flushdb()
            rl = RateLimit(key='reports', concurrency=2)
            jobs = []
            for n in range(3):
                with mon.section() as lines:
                    jobs.append(q.enqueue(probe_jobs.add, n, n, rate_limit=rl))
                scrub.name(jobs[-1].id, f'<rl{n + 1}>')
                show(scrub.monitor(lines), f'enqueue #{n + 1}')
            show(dump(conn, scrub), 'keys after three enqueues')
            with mon.section() as lines:
                SimpleWorker([q], connection=conn, name='probe-rl').work(burst=True, max_jobs=1)
            show(scrub.monitor(lines), 'first job, start to finish')
            show(dump(conn, scrub, 'rq:rl*'), 'rate-limit keys after one job')
            emit('statuses: ' + ' '.join(Job.fetch(j.id, connection=conn).get_status() for j in jobs))
            SimpleWorker([q], connection=conn, name='probe-rl2').work(burst=True)
            show(dump(conn, scrub, 'rq:rl*'), 'rate-limit keys after all')

            # 7. send_stop_execution_command ------------------------------------------------------
            section('send_stop_execution_command on a forking `rq worker` (subprocess)')
            conn.flushdb()
            release = 'probe-release-stop'
            job = q.enqueue(probe_jobs.wait_for_key, url, release, job_timeout=60)
            scrub.name(job.id, '<job4>')
            proc = worker_process(url, 'probe-fork', env, 'rq.Worker')
            try:
                wait_until(lambda: conn.exists(f'running:{release}'))
                seen = wait_until(lambda: [x for x in Worker.all(connection=conn) if x.get_current_executions(True)])
                execution = seen[0].get_current_executions()[0]
                scrub.name(execution.id, '<x4>')
                with mon.section() as lines:
                    send_stop_execution_command(conn, job.id, execution.id)
                    proc.wait(20)
                show(scrub.monitor(lines), 'stop-execution: sender and worker')
                fetched = Job.fetch(job.id, connection=conn)
                result = fetched.latest_result()
                emit(scrub(f'job status {fetched.get_status()}; latest result type {result and result.type}'))
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()

            # 8. RQ_KEY_PREFIX --------------------------------------------------------------------
            section('RQ_KEY_PREFIX=myapp (enqueue and burst worker in a subprocess)')
            conn.flushdb()
            code = (
                'import redis; from rq import Queue, SimpleWorker; from tests.rq3 import probe_jobs\n'
                f'c = redis.Redis.from_url({url!r}); q = Queue("probe", connection=c)\n'
                'j = q.enqueue(probe_jobs.add, 1, 2, depends_on=q.enqueue(probe_jobs.add, 0, 0))\n'
                'SimpleWorker([q], connection=c, name="probe-prefix").work(burst=True)\n'
            )
            subprocess.run([sys.executable, '-c', code], env=dict(env, RQ_KEY_PREFIX='myapp'), check=True, timeout=60)
            show(dump(conn, scrub), 'keys')
        finally:
            mon.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', help='also write the report to this file')
    args = parser.parse_args()
    lines: list[str] = []

    def emit(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    run(emit)
    if args.out:
        with open(args.out, 'w') as f:
            f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
