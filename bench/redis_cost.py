"""python -m bench.redis_cost: Redis' own cost per job, rqfast against a baseline revision, side by side.

For each phase (enqueue one by one; enqueue in bulk; enqueue in bulk + a SimpleWorker at concurrency
1 draining them; the same at concurrency 10), on a private redis-server started for the phase:

- instructions per job the server executed for its clients' commands (redis-server under `valgrind
  --tool=callgrind`, counting only while the phase runs and only while the server reads, runs and
  replies to commands: independent of the machine's load), with --callgrind (KEEP_CALLGRIND=<file>
  keeps the profile; COST_ALL=1 counts the server's timers too);
- the server's CPU per job (INFO cpu: used_cpu_sys + used_cpu_user; depends on load);
- INFO commandstats per job: the script calls' own time, and the time of the commands they ran
  (Redis counts a script's inner commands under their own names): the script's own Lua work is the
  difference.

The floor (phase `floor-1`, its own row, measured in the working tree's turn): what RQ's layout
allows a worker at concurrency 1 that makes one call per job, the same jobs enqueued the same way,
then drained by a Python loop calling FLOOR_LIBRARY: one function call per job running the 25 commands
a plain job's finish-and-claim runs in rqfast (tests/test_script_commands.py's LAYOUT) with the least
Lua around them (keys joined, numbers precomputed by the caller, no checks) and the claimed job's hash
returned. rqfast's work-1 over it is what rqfast's own logic costs Redis.

Each revision runs in its own process (the working tree's rqfast, or REV's extracted as --baseline
does); the phases alternate between the columns, run by run.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import redis

from bench import baseline
from bench.counting import REPO_ROOT
from bench.redis_server import _SCRIPT_COMMANDS, _TRANSACTION_COMMANDS, _free_port

SLOW = 600  # seconds a reply may take from a server under valgrind, on a loaded machine
PHASES = ('enqueue-single', 'enqueue-bulk', 'work-1', 'work-10', 'floor-1')
FLOOR_PHASES = ('floor-1',)  # measured once per run, in the working tree's turn

FLOOR_LIBRARY = """#!lua name=bench_floor
redis.register_function('bench_floor', function(keys, a)
  local p, w, now_text, now_float, queue, prev, prev_x, working, x = unpack(a, 1, 9)
  local started_score, executions_score, ttl, executions_ttl, result_ttl, finished_score = unpack(a, 10, 15)
  local wkey = p .. 'worker:' .. w
  local index = wkey .. ':executions'
  if prev ~= '' then
    local key = p .. 'job:' .. prev
    local member = prev .. ':' .. prev_x
    redis.call('HMGET', key, 'status', 'rate_limit_key', 'priority', 'events', 'dependency_ids')
    redis.call('DEL', p .. 'execution:' .. member)
    redis.call('ZREM', p .. 'wip:' .. queue, member)
    redis.call('ZREM', p .. 'executions:' .. prev, prev_x)
    redis.call('HINCRBY', wkey, 'successful_job_count', '1')
    redis.call('HINCRBYFLOAT', wkey, 'total_working_time', working)
    redis.call('HSET', key, 'started_at', now_text, 'ended_at', now_text, 'last_heartbeat', now_text,
      'worker_name', w, 'status', 'finished')
    local results = p .. 'results:' .. prev
    redis.call('XADD', results, 'MAXLEN', '~', '10', '*', 'type', '1', 'worker_name', w, 'execution_id', prev_x,
      'execution_started_at', now_float, 'execution_ended_at', now_float)
    redis.call('EXPIRE', results, result_ttl)
    redis.call('ZADD', p .. 'finished:' .. queue, finished_score, prev)
    redis.call('SMEMBERS', key .. ':dependents')
    redis.call('EXPIRE', key, result_ttl)
    redis.call('SREM', index, member)
  end
  redis.call('EXISTS', p .. 'suspended', p .. 'paused-queues', p .. 'queue:' .. queue .. ':priority')
  local id = redis.call('LPOP', p .. 'queue:' .. queue)
  if not id then return false end
  local key = p .. 'job:' .. id
  local member = id .. ':' .. x
  local job = redis.call('HGETALL', key)
  redis.call('HSET', key, 'status', 'started', 'started_at', now_text, 'last_heartbeat', now_text, 'worker_name', w)
  redis.call('PERSIST', key)
  local execution = p .. 'execution:' .. member
  redis.call('HSET', execution, 'id', x, 'created_at', now_float, 'last_heartbeat', now_float, 'worker_name', w)
  redis.call('EXPIRE', execution, ttl)
  local executions = p .. 'executions:' .. id
  redis.call('ZADD', executions, executions_score, x)
  redis.call('EXPIRE', executions, executions_ttl)
  redis.call('ZADD', p .. 'wip:' .. queue, started_score, member)
  redis.call('HSET', wkey, 'state', 'busy', 'current_job', id, 'current_job_working_time', '0',
    'last_heartbeat', now_text)
  redis.call('SADD', index, member)
  return {id, queue, job}
end)
"""


def _drain_floor(conn: redis.Redis, queue: str) -> int:
    """FLOOR_LIBRARY's loop: a call per job until the queue is empty; the jobs it claimed."""
    from datetime import datetime, timezone

    from rqfast.defaults import DEFAULT_JOB_MONITORING_INTERVAL, DEFAULT_RESULT_TTL, JOB_HEARTBEAT_GRACE

    worker, prev, prev_x, count = uuid.uuid4().hex, '', '', 0
    ttl = DEFAULT_JOB_MONITORING_INTERVAL + JOB_HEARTBEAT_GRACE
    while True:
        moment = datetime.now(timezone.utc)
        now_text, now_float, now_int = (
            moment.strftime('%Y-%m-%dT%H:%M:%S.%fZ'),
            repr(moment.timestamp()),
            int(moment.timestamp()),
        )
        x = uuid.uuid4().hex
        numbers = (now_int + ttl, now_int + ttl + JOB_HEARTBEAT_GRACE, ttl, ttl + JOB_HEARTBEAT_GRACE)
        args = ('rq:', worker, now_text, now_float, queue, prev, prev_x, '0.0001', x, *numbers)
        reply = conn.fcall('bench_floor', 1, 'rq:queues', *args, DEFAULT_RESULT_TTL, now_int + DEFAULT_RESULT_TTL)
        if not reply:
            return count
        prev, prev_x, count = reply[0].decode(), x, count + 1


class Server:
    """A private redis-server, optionally under callgrind with collection off until measure()."""

    def __init__(self, callgrind: bool, binary: str = 'redis-server') -> None:
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix='bench-cost-')
        command = [shutil.which(binary) or binary, '--port', str(self.port), '--bind', '127.0.0.1', '--save', '']
        command += ['--appendonly', 'no', '--dir', self.dir, '--loglevel', 'warning']
        if callgrind:  # serverCron's work depends on the wall time, which valgrind stretches: the least of it
            command += ['--hz', '1', '--dynamic-hz', 'no']
        self.callgrind = callgrind
        if callgrind:
            self.out = os.path.join(self.dir, 'callgrind.out')
            # Only what the server does for its clients' commands (reading, running, replying), not its timers:
            # serverCron's work depends on the wall time, which valgrind stretches.
            toggles = ['--collect-atstart=no', '--toggle-collect=processInputBuffer', '--toggle-collect=writeToClient']
            if os.environ.get('COST_ALL'):  # (everything the server does, its timers included: for a profile)
                toggles = []
            command = ['valgrind', '--tool=callgrind', *toggles, f'--callgrind-out-file={self.out}', *command]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f'redis://127.0.0.1:{self.port}/0'
        client = redis.Redis.from_url(self.url, socket_timeout=SLOW)
        deadline = time.monotonic() + SLOW
        while True:
            try:
                client.ping()
                break
            except (redis.ConnectionError, redis.TimeoutError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise SystemExit('redis-server did not start') from None
                time.sleep(0.1)
        client.close()

    def _control(self, *args: str) -> None:
        subprocess.run(['callgrind_control', *args, str(self.proc.pid)], check=True, capture_output=True)

    def start(self) -> None:
        if self.callgrind:
            self._control('-z')

    def instructions(self) -> int:
        if not self.callgrind:
            return 0
        self._control('-d')
        total = 0
        for path in glob.glob(self.out + '*'):
            with open(path) as f:
                for line in f:
                    if line.startswith(('summary:', 'totals:')):
                        total = max(total, int(line.split()[1]))
                        break
            if os.environ.get('KEEP_CALLGRIND'):
                shutil.copy(path, os.environ['KEEP_CALLGRIND'])
            os.unlink(path)
        return total

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def _stats(client: redis.Redis) -> tuple[float, dict[str, tuple[int, float]]]:
    cpu = client.info('cpu')
    commands = {
        name.removeprefix('cmdstat_'): (int(s['calls']), float(s['usec']))
        for name, s in client.info('commandstats').items()
    }
    return float(cpu['used_cpu_sys']) + float(cpu['used_cpu_user']), commands


def measure(phase: str, count: int, callgrind: bool) -> dict[str, float]:
    """One phase in this process (whose rqfast is the column's): per-job figures."""
    import rqfast
    from bench import jobs

    server = Server(callgrind)
    try:
        conn = redis.Redis.from_url(server.url, socket_timeout=SLOW)
        queue = rqfast.Queue('cost', connection=conn)
        conn.ping()
        if phase in FLOOR_PHASES:
            conn.function_load(FLOOR_LIBRARY, replace=True)
            queue.enqueue_many([rqfast.Queue.prepare_data(jobs.noop) for _ in range(20)])
            _drain_floor(conn, queue.name)  # untimed warm-up, as the worker's
        elif phase.startswith('work'):
            concurrency = int(phase.split('-')[1])
            options = {'concurrency': concurrency} if concurrency > 1 else {}
            worker = rqfast.SimpleWorker([queue], connection=conn, **options)
            # untimed warm-up: scripts cached, modules imported
            queue.enqueue_many([rqfast.Queue.prepare_data(jobs.noop) for _ in range(20)])
            worker.work(burst=True, logging_level='WARNING')
            worker = rqfast.SimpleWorker([queue], connection=conn, **options)
        else:
            queue.enqueue(jobs.noop)
        conn.config_resetstat()
        cpu_before, _ = _stats(conn)
        server.start()
        if phase == 'enqueue-single':
            for _ in range(count):
                queue.enqueue(jobs.noop)
        elif phase == 'enqueue-bulk':
            queue.enqueue_many([rqfast.Queue.prepare_data(jobs.noop) for _ in range(count)])
        elif phase in FLOOR_PHASES:
            queue.enqueue_many([rqfast.Queue.prepare_data(jobs.noop) for _ in range(count)])
            if _drain_floor(conn, queue.name) != count:
                raise SystemExit('the floor loop did not claim every job')
        else:
            queue.enqueue_many([rqfast.Queue.prepare_data(jobs.noop) for _ in range(count)])
            worker.work(burst=True, logging_level='WARNING')
        instructions = server.instructions()
        cpu_after, commands = _stats(conn)
    finally:
        server.stop()
    script_calls = sum(calls for name, (calls, _) in commands.items() if name in _SCRIPT_COMMANDS)
    script_us = sum(us for name, (_, us) in commands.items() if name in _SCRIPT_COMMANDS)
    inner = {n: v for n, v in commands.items() if n not in _SCRIPT_COMMANDS and n not in _TRANSACTION_COMMANDS}
    inner.pop('info', None)
    inner.pop('config|resetstat', None)
    inner_us = sum(us for _, us in inner.values())
    inner_calls = sum(calls for calls, _ in inner.values())
    return {
        'instructions': instructions / count,
        'cpu_us': (cpu_after - cpu_before) / count * 1e6,
        'script_calls': script_calls / count,
        'script_us': script_us / count,
        'commands': inner_calls / count,
        'commands_us': inner_us / count,
    }


def _child(root: str, phase: str, count: int, callgrind: bool) -> dict[str, float]:
    load = f'from bench.libs import import_from; import_from("rqfast", Path({root!r})); ' if root else ''
    code = (
        'import json; from pathlib import Path; '
        + load
        + f'from bench.redis_cost import measure; print(json.dumps(measure({phase!r}, {count}, {callgrind})))'
    )
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=REPO_ROOT)
    if done.returncode != 0:
        raise SystemExit(f'{phase} ({root or "working tree"}) failed:\n{done.stderr}')
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m bench.redis_cost', description=__doc__)
    parser.add_argument('--baseline', metavar='REV', help='also rqfast as of REV, side by side')
    parser.add_argument('--jobs', type=int, default=1000)
    parser.add_argument('--runs', type=int, default=1)
    parser.add_argument('--callgrind', action='store_true', help='count instructions under valgrind')
    parser.add_argument('--phases', default=','.join(PHASES))
    args = parser.parse_args(argv)
    phases = args.phases.split(',')
    with baseline.materialised(REPO_ROOT, args.baseline) if args.baseline else _nothing() as base:
        columns = [('rqfast', '')] + ([(base.label, str(base.root))] if base else [])
        found: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(args.runs):
            for phase in phases:
                for label, root in columns[:1] if phase in FLOOR_PHASES else columns:
                    found.setdefault((label, phase), []).append(_child(root, phase, args.jobs, args.callgrind))
        _print(phases, columns, found)


def _print(
    phases: list[str], columns: list[tuple[str, str]], found: dict[tuple[str, str], list[dict[str, float]]]
) -> None:
    """The table: a row per phase and column, a ratio row with a baseline, the floor's row and shares."""
    keys = ('instructions', 'cpu_us', 'script_calls', 'script_us', 'commands', 'commands_us')
    print('| phase | column | ' + ' | '.join(keys) + ' |')
    print('|---|---|' + '---:|' * len(keys))

    def median(label: str, phase: str, key: str) -> float:
        return statistics.median(r[key] for r in found[(label, phase)])

    for phase in phases:
        if phase in FLOOR_PHASES:
            cells = [f'{median(columns[0][0], phase, k):,.1f}' for k in keys]
            print(f'| {phase} | floor | ' + ' | '.join(cells) + ' |')
            continue
        for label, _ in columns:
            cells = [f'{median(label, phase, k):,.1f}' for k in keys]
            print(f'| {phase} | {label} | ' + ' | '.join(cells) + ' |')
        if len(columns) == 2:
            a = found[(columns[0][0], phase)]
            b = found[(columns[1][0], phase)]
            ratios = []
            for k in keys:
                mb = statistics.median(r[k] for r in b)
                ratios.append(f'{statistics.median(r[k] for r in a) / mb:.2f}x' if mb else '—')
            print(f'| {phase} | ratio | ' + ' | '.join(ratios) + ' |')
    if 'floor-1' in phases and 'work-1' in phases:
        print()
        for label, _ in columns:  # (instructions are 0 without --callgrind)
            shares = [
                f'{median(label, "work-1", k) / median(columns[0][0], "floor-1", k):.2f}x {k}'
                for k in ('instructions', 'cpu_us', 'script_us')
                if median(columns[0][0], 'floor-1', k)
            ]
            print(f'work-1 of {label} over the floor: ' + ', '.join(shares))


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == '__main__':
    main()
