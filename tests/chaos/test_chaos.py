"""The chaos suite: faults during a few thousand jobs, and what every job became.

Bounded for CI (a few minutes); `RQFAST_CHAOS_SOAK=1` (or `make soak`) runs the longer soak. Each test
prints its counts (see the "chaos counts" section of pytest's summary) and fails on any job lost, stuck
started, finished twice, run more than 1 + retry.max times, or failed without a reason, and on any
worker that exits without being told to.

- kills: SIGKILLs of random workers (parents) and horses of all three classes, with default heartbeat
  and recovery settings, so the bound it measures is the default one: every job a kill left behind
  leaves `started` within 60 s of the kill;
- redis: redis-server SIGKILLed and restarted (AOF, appendfsync always) during work, outages of 1-10 s;
- poison: the poison corpus through every class;
- full memory (maxmemory, noeviction) under load, then freed; an evicting policy under load; a silent
  network path (tests/silent_proxy.py) under load, then back (issue 32);
- a SIGSTOPped worker woken after its job was recovered elsewhere: tests/test_fencing.py.
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from rqfast import keys

try:
    import fleet
    import redis_servers
    import soak
    from silent_proxy import SilentProxy
except ImportError:  # tests/ became a package
    from tests import fleet, redis_servers  # type: ignore[no-redef]
    from tests.chaos import soak  # type: ignore[no-redef]
    from tests.silent_proxy import SilentProxy  # type: ignore[no-redef]

pytestmark = [pytest.mark.timeout(900), pytest.mark.trial]  # a long trial: `python -m pytest -m trial`

RECOVERY_BOUND = 60.0  # seconds: docs/reliability.md's promise, with default settings


@pytest.fixture
def server() -> Iterator[fleet.KillableRedis]:
    killable = fleet.KillableRedis()
    killable.start()
    yield killable
    killable.close()


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / 'marks'
    path.mkdir()
    return path


def test_sigkills_of_workers_and_horses(server: fleet.KillableRedis, tmp_path: Path, marks: Path) -> None:
    rng = random.Random(11)
    conn = redis.Redis.from_url(server.url)
    jobs = soak.enqueue(conn, marks, soak.scale(2000, 12000), rng, max_seconds=0.15)
    crew = soak.Fleet(server.url, tmp_path)
    recovery = soak.Recovery(conn)
    try:
        for worker_class in soak.CLASSES * 2:
            crew.start(worker_class)
        kills = soak.scale(30, 120)
        parent_kills_of_forking: set[str] = set()
        spacing = soak.scale(1.0, 2.0)
        for _ in range(kills):
            time.sleep(spacing * rng.uniform(0.5, 1.5))
            crew.check_exits()
            candidates = [w for w in crew.alive() if conn.hget(w.process.key, 'state') == b'busy']
            if not candidates:
                continue
            victim = rng.choice(candidates)
            horses = crew.horses(victim) if victim.worker_class != 'SimpleWorker' else []
            if horses and rng.random() < 0.5:
                what = f'{victim.worker_class} horse'
                recovery.before_kill(victim.process.name, what)
                try:
                    fleet_kill(rng.choice(horses))
                except ProcessLookupError:
                    continue
            else:
                what = f'{victim.worker_class} worker'
                job_id = conn.hget(victim.process.key, 'current_job')
                recovery.before_kill(victim.process.name, what)
                victim.process.signal(signal.SIGKILL)
                victim.killed = True
                if victim.worker_class != 'SimpleWorker' and job_id:
                    parent_kills_of_forking.add(job_id.decode())
                crew.start(victim.worker_class)  # as a supervisor would
            crew.kills[what] += 1
        last_kill = time.monotonic()
        done = soak.wait_terminal(conn, jobs.ids, last_kill + RECOVERY_BOUND + soak.scale(180, 900), crew)
        crew.check_exits()
        recovery.stop()
        result = soak.account(conn, marks, jobs)
        longest, gone, left = recovery.bound()
        soak.REPORTS.append(result.line('kills') + f'; kills {dict(crew.kills)}')
        soak.REPORTS.append(
            f'kills: recovery bound with default settings: longest {longest:.1f} s from a kill to its job leaving '
            f'started ({gone} jobs held by killed processes, {left} never left); slowest {recovery.slowest()}'
        )
        assert done == len(jobs.ids), result.problems[:20]
        assert not result.problems, result.problems[:20]
        assert result.counts['lost'] == result.counts['stuck'] == 0
        assert left == 0 and longest <= RECOVERY_BOUND, recovery.slowest()
        assert not (result.completed_then_abandoned & parent_kills_of_forking), 'a parent-only kill lost an outcome'
        assert not crew.unexpected_exits, crew.unexpected_exits[:3]
        assert not crew.stop_all()
    finally:
        recovery.stop()
        crew.close()
        conn.close()


def test_parents_killed_at_concurrency_8(server: fleet.KillableRedis, tmp_path: Path, marks: Path) -> None:
    """Issue 32's concurrency kill soak: a worker of each class at -C 8, its process SIGKILLed now and then
    (a supervisor starts another). A Worker's or SpawnWorker's horses outlive their parent and record what
    they ran: no job one of them held fails after its body completed. A SimpleWorker's jobs run on its own
    threads, so they die with it (the whole group: docs/reliability.md): those are recovered as abandoned."""
    rng = random.Random(23)
    conn = redis.Redis.from_url(server.url)
    jobs = soak.enqueue(conn, marks, soak.scale(600, 1000), rng, max_seconds=0.3)
    crew = soak.Fleet(server.url, tmp_path, {'worker': {'concurrency': 8}})
    held_by_horses: set[str] = set()  # jobs in flight in a Worker or SpawnWorker when its parent was killed
    whole_group: set[str] = set()  # ... in a SimpleWorker when it was killed
    try:
        for worker_class in soak.CLASSES:
            crew.start(worker_class)
        crew.wait_registered(conn)
        for _ in range(soak.scale(6, 10)):
            time.sleep(rng.uniform(0.5, 1.5))
            crew.check_exits()
            candidates = [w for w in crew.alive() if conn.scard(keys.worker_executions_key(w.process.name))]
            if not candidates:
                continue
            victim = rng.choice(candidates)
            members = conn.smembers(keys.worker_executions_key(victim.process.name))
            victim.process.signal(signal.SIGKILL)
            victim.killed = True
            held = {m.decode().rsplit(':', 1)[0] for m in members}
            (whole_group if victim.worker_class == 'SimpleWorker' else held_by_horses).update(held)
            crew.kills[f'{victim.worker_class} worker'] += 1
            crew.start(victim.worker_class)
        done = soak.wait_terminal(conn, jobs.ids, time.monotonic() + RECOVERY_BOUND + soak.scale(180, 900), crew)
        crew.check_exits()
        result = soak.account(conn, marks, jobs)
        lost_by_horses = result.completed_then_abandoned & held_by_horses
        soak.REPORTS.append(
            result.line('kills at -C 8')
            + f'; kills {dict(crew.kills)}; completed then abandoned: {len(lost_by_horses)} of the'
            f' {len(held_by_horses)} jobs killed parents held, {len(result.completed_then_abandoned & whole_group)}'
            f' of the {len(whole_group)} killed SimpleWorkers ran'
        )
        assert done == len(jobs.ids), result.problems[:20]
        assert not result.problems, result.problems[:20]
        assert not lost_by_horses, 'a parent-only kill lost an outcome its horse had'
        assert result.completed_then_abandoned <= whole_group, result.completed_then_abandoned - whole_group
        assert not crew.unexpected_exits, crew.unexpected_exits[:3]
        assert not crew.stop_all()
    finally:
        crew.close()
        conn.close()


def fleet_kill(pid: int) -> None:
    import os

    os.kill(pid, signal.SIGKILL)


def test_redis_server_killed_and_restarted(server: fleet.KillableRedis, tmp_path: Path, marks: Path) -> None:
    rng = random.Random(12)
    conn = redis.Redis.from_url(server.url, socket_timeout=5)
    jobs = soak.enqueue(conn, marks, soak.scale(800, 3000), rng, max_seconds=0.3)
    crew = soak.Fleet(server.url, tmp_path)
    outages = []
    try:
        for worker_class in soak.CLASSES * 2:
            crew.start(worker_class)
        crew.wait_registered(conn)  # (the outages must hit running workers, not their start)
        for restart in range(soak.scale(5, 15)):
            time.sleep(rng.uniform(2, 4))
            crew.check_exits()
            outage = [1.0, 3.0, 10.0, 5.0, 7.0][restart % 5] if not soak.SOAK else rng.uniform(1, 10)
            server.kill()
            time.sleep(outage)
            crew.check_exits()
            server.start()
            outages.append(outage)
        done = soak.wait_terminal(conn, jobs.ids, time.monotonic() + soak.scale(240, 900), crew)
        crew.check_exits()
        result = soak.account(conn, marks, jobs)
        soak.REPORTS.append(result.line('redis restarts') + f'; outages (s) {[round(o, 1) for o in outages]}')
        assert done == len(jobs.ids), result.problems[:20]
        assert not result.problems, result.problems[:20]
        # no process was killed: every job ran once and finished once
        assert result.counts['finished_once'] == len(jobs.ids), (result.counts, result.failures)
        assert result.counts['ran_twice_or_more'] == 0, result.counts
        assert not crew.unexpected_exits, crew.unexpected_exits[:3]
        assert not crew.stop_all()
    finally:
        crew.close()
        conn.close()


BAD_IDS = ['a:b c', 'x:y', '*', 'z' * 600, '']


def _poison_corpus(conn: redis.Redis, marks: Path, worker_class: str) -> dict[str, str]:
    """Enqueue the corpus; returns {job id: what it is}."""
    from rqfast import Queue

    q = Queue('q', connection=conn)
    made: dict[str, str] = {}

    def add(what: str, job: object) -> None:
        made[job.id] = what  # type: ignore[attr-defined]

    bad_field = q.enqueue('chaos_jobs.mark', str(marks), 0)
    conn.hset(bad_field.key, 'retries_left', 'abc')
    add('unreadable field', bad_field)
    undecodable = q.enqueue('chaos_jobs.mark', str(marks), 0)
    conn.hset(undecodable.key, 'data', b'\x00not a pickle')
    add('undecodable data', undecodable)
    no_data = q.enqueue('chaos_jobs.mark', str(marks), 0)
    conn.hdel(no_data.key, 'data')
    add('no data', no_data)  # (issue 32: failed with a reason, no longer dropped)
    add('missing function', q.enqueue('chaos_jobs.no_such_function'))
    add('missing module', q.enqueue('no_such_module_for_chaos.f'))
    add('huge arguments', q.enqueue('chaos_jobs.poison', str(marks), 'none', 'x' * (5 << 20)))
    for kind in ('unpicklable', 'bad_repr_result', 'bad_str_exception', 'close_connection'):
        add(kind, q.enqueue('chaos_jobs.poison', str(marks), kind))
    outcomes = ['exit', 'keyboard', 'base', 'cancelled', 'raise']
    if worker_class != 'SimpleWorker':  # os._exit in a SimpleWorker's job ends the worker's own process
        outcomes.append('os_exit')
    for outcome in outcomes:
        add(outcome, q.enqueue('chaos_jobs.mark', str(marks), 0, outcome))
    conn.set('rq:job:not-a-hash', 'a string')
    conn.rpush(q.key, 'not-a-hash', *BAD_IDS)
    return made


@pytest.mark.parametrize('worker_class', soak.CLASSES)
def test_poison_corpus(redis_conn: redis.Redis, redis_url: str, tmp_path: Path, marks: Path, worker_class: str) -> None:
    from rqfast import Queue
    from rqfast.job import Job
    from rqfast.registry import FailedJobRegistry

    made = _poison_corpus(redis_conn, marks, worker_class)
    sentinel = Queue('q', connection=redis_conn).enqueue('chaos_jobs.mark', str(marks), 0)
    worker = fleet.WorkerProcess(
        redis_url, {'class': worker_class, 'work': {'burst': True}}, tmp_path / f'{worker_class}.log'
    )
    try:
        assert worker.wait(120) == 0, worker.log()[-5000:]
    finally:
        worker.stop()
    counts = {'finished': 0, 'failed_visibly': 0}
    for job_id, what in made.items():
        status = redis_conn.hget(f'rq:job:{job_id}', 'status')
        if status == b'finished':
            counts['finished'] += 1
            continue
        assert status == b'failed', (what, status)
        assert job_id in FailedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False), what
        if what == 'no data':  # (no Job.fetch: neither library loads a hash without data)
            assert redis_conn.xlen(f'rq:results:{job_id}') == 1, what
        else:
            latest = Job.fetch(job_id, connection=redis_conn).latest_result()
            assert latest is not None and latest.exc_string, what
        counts['failed_visibly'] += 1
    assert redis_conn.hget(sentinel.key, 'status') == b'finished'
    assert redis_conn.type('rq:job:not-a-hash') == b'string'
    assert sorted(k.decode() for k in redis_conn.hkeys('rq:dead-letter:q')) == sorted([*BAD_IDS, 'not-a-hash'])
    assert redis_conn.zcard('rq:wip:q') == 0 and redis_conn.llen('rq:queue:q') == 0
    soak.REPORTS.append(
        f'poison ({worker_class}): {len(made)} jobs: finished={counts["finished"]}, '
        f'failed_visibly={counts["failed_visibly"]}, lost=0, stuck=0, dropped=0; dead-lettered ids={len(BAD_IDS) + 1}; '
        'worker exit 0'
    )


@pytest.mark.parametrize('worker_class', ['Worker', 'SpawnWorker'])
def test_a_parent_killed_while_its_horses_hold_their_reports_leaves_each_outcome_to_its_horse(
    server: fleet.KillableRedis, tmp_path: Path, marks: Path, worker_class: str
) -> None:
    """Issue 32's scenario: a worker at -C 8 has recorded one job; stopped, its seven other horses end their
    bodies and report; then it is killed. Each horse was acknowledged only once its own outcome was
    recorded, so each sees its worker die and records its own outcome: 7 of 7, none left to recovery."""
    from rqfast import Queue

    conn = redis.Redis.from_url(server.url)
    queue = Queue('q', connection=conn)
    release = tmp_path / 'release'
    short = queue.enqueue('chaos_jobs.mark', str(marks), 0.05)
    long = [queue.enqueue('chaos_jobs.mark_until', str(marks), str(release)) for _ in range(7)]
    options = {'class': worker_class, 'worker': {'concurrency': 8}}
    worker = fleet.WorkerProcess(server.url, options, tmp_path / f'{worker_class}.log')
    try:
        fleet.wait_until(
            lambda: (
                conn.hget(short.key, 'status') == b'finished' and all(fleet.runs(marks, job.id)[0] == 1 for job in long)
            ),
            120,
            f'the short job recorded and the seven long ones running\n{worker.log()[-3000:]}',
        )
        worker.signal(signal.SIGSTOP)
        release.touch()  # the bodies end while their worker is stopped; each horse reports and stands by
        fleet.wait_until(lambda: all(fleet.runs(marks, job.id) == (1, 1) for job in long), 60, 'the bodies to end')
        time.sleep(1.0)  # (their reports are written)
        assert [conn.hget(job.key, 'status') for job in long] == [b'started'] * 7
        worker.signal(signal.SIGKILL)
        fleet.wait_until(
            lambda: all(conn.hget(job.key, 'status') == b'finished' for job in long),
            30,
            f'the horses to record their outcomes\n{worker.log()[-3000:]}',
        )
        assert [conn.xlen(f'rq:results:{job.id}') for job in long] == [1] * 7
        # each horse logs once it has recorded (its line may come a moment after its record)
        fleet.wait_until(lambda: worker.log().count('the horse recorded its outcome') == 7, 10, 'the horses to log it')
        assert 'is no longer its execution' not in worker.log()
        soak.REPORTS.append(f'parent killed holding 7 reports ({worker_class}): 7 of 7 recorded by their horses')
    finally:
        worker.stop()
        conn.close()


# ---------------------------------------------------------------------------------------------------
# What production Redis does (issue 32): a full memory, an evicting policy, a silent network path


def _crew(url: str, tmp_path: Path) -> soak.Fleet:
    """Every class, and a Worker at concurrency 4 (its finishes are batched: finish_jobs)."""
    crew = soak.Fleet(url, tmp_path)
    for worker_class in soak.CLASSES:
        crew.start(worker_class)
    crew.options = {'worker': {'concurrency': 4}}
    crew.start('Worker')
    crew.options = {}
    return crew


def _finished(conn: redis.Redis, ids: list[str]) -> int:
    pipe = conn.pipeline(transaction=False)
    for job_id in ids:
        pipe.hget(f'rq:job:{job_id}', 'status')
    return sum(status == b'finished' for status in pipe.execute())


def test_full_memory_under_load(server: fleet.KillableRedis, tmp_path: Path, marks: Path) -> None:
    """Redis at maxmemory (noeviction) for a while under load, then memory frees: nothing is recorded
    while it is full, nothing lost or run twice, no worker exits, and an enqueue gets RedisFullError."""
    from rqfast import Queue
    from rqfast.exceptions import RedisFullError

    rng = random.Random(13)
    conn = redis.Redis.from_url(server.url)
    jobs = soak.enqueue(conn, marks, soak.scale(600, 3000), rng, max_seconds=0.1)
    crew = _crew(server.url, tmp_path)
    full_for = soak.scale(10, 30)
    try:
        crew.wait_registered(conn)
        fleet.wait_until(lambda: _finished(conn, jobs.ids) >= 30, 120, 'some jobs to finish')
        for i in range(40):
            conn.set(f'filler:{i}', b'x' * 100_000)
        conn.config_set('maxmemory', int(conn.info('memory')['used_memory']) - 1_000_000)
        before = _finished(conn, jobs.ids)
        with pytest.raises(RedisFullError, match='Redis is full'):
            Queue('q', connection=conn).enqueue('chaos_jobs.mark', str(marks), 0)
        time.sleep(full_for)
        crew.check_exits()
        while_full = _finished(conn, jobs.ids) - before
        conn.delete(*[f'filler:{i}' for i in range(40)])  # memory frees; the limit stays
        if soak.SOAK:  # (3,000 jobs' results need more room than the fillers held: the limit goes too)
            conn.config_set('maxmemory', 0)
        freed = time.monotonic()
        done = soak.wait_terminal(conn, jobs.ids, freed + soak.scale(240, 900), crew)
        drained = time.monotonic() - freed
        crew.check_exits()
        result = soak.account(conn, marks, jobs)
        refused = sum('Redis is full' in w.process.log() for w in crew.workers)
        soak.REPORTS.append(
            result.line(f'full memory {full_for} s')
            + f'; finished while full {while_full}; drained {drained:.0f} s after; {refused} workers logged it'
        )
        assert while_full == 0
        assert done == len(jobs.ids), result.problems[:20]
        assert not result.problems, result.problems[:20]
        assert result.counts['finished_once'] == len(jobs.ids), (result.counts, result.failures)
        assert result.counts['ran_twice_or_more'] == 0, result.counts
        assert not crew.unexpected_exits, crew.unexpected_exits[:3]
        assert not crew.stop_all()
    finally:
        crew.close()
        conn.close()


def test_evicted_job_hashes_under_load(tmp_path: Path, marks: Path) -> None:
    """An evicting policy (volatile-random: the jobs' hashes, which have a TTL here) under load: each job
    ends finished or failed with a reason, or its hash was evicted: while queued (a worker dropped its id
    and logged it) or once it ran; nothing stays started; every worker warned of the policy once; no
    worker exits."""
    from rqfast import Queue

    port = fleet.free_port()
    conn = redis.Redis(port=port)
    args = ['--port', str(port), '--bind', '127.0.0.1', '--save', '', '--maxmemory-policy', 'volatile-random']
    with redis_servers.server(tmp_path / 'redis', args, conn.ping):
        q = Queue('q', connection=conn)
        ids = [q.enqueue('chaos_jobs.mark', str(marks), 0.01, ttl=600).id for _ in range(soak.scale(400, 2000))]
        crew = _crew(f'redis://127.0.0.1:{port}/0', tmp_path)
        try:
            crew.wait_registered(conn)
            for i in range(20):
                conn.set(f'filler:{i}', b'x' * 100_000)
            conn.config_set('maxmemory', int(conn.info('memory')['used_memory']) - 100_000)
            conn.ping()  # (Redis evicts before a command while over maxmemory)
            fleet.wait_until(lambda: conn.llen('rq:queue:q') == 0, 180, 'the queue to drain')
            fleet.wait_until(lambda: conn.zcard('rq:wip:q') == 0, 60, 'the jobs in flight to end')
            evicted = int(conn.info('stats')['evicted_keys'])
            crew.check_exits()
            logs = ''.join(w.process.log() for w in crew.workers)
            outcomes = {
                'finished': 0,
                'failed visibly': 0,
                'evicted queued, dropped and logged': 0,
                'evicted after it ran': 0,
            }
            for job_id in ids:
                status = conn.hget(f'rq:job:{job_id}', 'status')
                if status == b'finished':
                    outcomes['finished'] += 1
                elif status == b'failed':  # (e.g. its hash evicted while it ran: AbandonedJobError)
                    outcomes['failed visibly'] += 1
                elif (
                    status is None
                    and f'dropped job id {job_id}: it has no job hash (deleted, expired or evicted)' in logs
                ):
                    outcomes['evicted queued, dropped and logged'] += 1
                else:  # its hash evicted once it ran (a finished job's hash has a TTL too)
                    assert status is None and fleet.runs(marks, job_id)[0] >= 1, (job_id, status)
                    outcomes['evicted after it ran'] += 1
            soak.REPORTS.append(f'eviction (volatile-random): {len(ids)} jobs: {outcomes}; evicted keys {evicted}')
            assert all(w.process.log().count('maxmemory-policy is volatile-random') == 1 for w in crew.workers)
            assert evicted > 0
            assert not crew.unexpected_exits, crew.unexpected_exits[:3]
            assert not crew.stop_all()
        finally:
            crew.close()
            conn.close()


def test_silent_network_under_load(server: fleet.KillableRedis, tmp_path: Path, marks: Path) -> None:
    """The path between the workers (and a producer) and Redis goes silent, closing nothing, then comes
    back: the producer's enqueue fails with RedisNoReplyError within the bound, every worker notices,
    reconnects and drains the queue; no process hangs, nothing is lost or stuck. Silent for less than the
    jobs' heartbeat TTL (40 s) in CI: every job finishes once; the soak's 60 s may fail jobs in flight as
    abandoned (a killed worker's do the same)."""
    from rqfast import Queue
    from rqfast.defaults import REPLY_TIMEOUT
    from rqfast.exceptions import RedisNoReplyError

    rng = random.Random(14)
    conn = redis.Redis.from_url(server.url)
    proxy = SilentProxy(server.port)
    jobs = soak.enqueue(conn, marks, soak.scale(600, 3000), rng, max_seconds=0.1)
    crew = _crew(proxy.url, tmp_path)
    silent_for = soak.scale(20, 60)
    producer = redis.Redis(port=proxy.port, socket_timeout=None)
    try:
        crew.wait_registered(conn)
        fleet.wait_until(lambda: _finished(conn, jobs.ids) >= 30, 120, 'some jobs to finish')
        Queue('q', connection=producer).enqueue('chaos_jobs.mark', str(marks), 0)  # (its connection, made)
        proxy.silence()
        silenced = time.monotonic()
        with pytest.raises(RedisNoReplyError, match='is silent'):
            Queue('q', connection=producer).enqueue('chaos_jobs.mark', str(marks), 0)
        producer_error = time.monotonic() - silenced
        time.sleep(max(0.0, silent_for - (time.monotonic() - silenced)))
        crew.check_exits()
        proxy.restore()
        restored = time.monotonic()
        # (+ 120 s: an id whose blocking move lost its reply waits for maintenance to put it back)
        done = soak.wait_terminal(conn, jobs.ids, restored + soak.scale(300, 900), crew)
        drained = time.monotonic() - restored
        crew.check_exits()
        result = soak.account(conn, marks, jobs)
        noticed = sum('is silent' in w.process.log() for w in crew.workers)
        soak.REPORTS.append(
            result.line(f'silent network {silent_for} s')
            + f'; producer error after {producer_error:.1f} s; {noticed}/{len(crew.workers)} workers noticed; '
            f'drained {drained:.0f} s after the path returned; {proxy.dropped} bytes dropped'
        )
        assert producer_error <= REPLY_TIMEOUT + 10, producer_error
        assert noticed == len(crew.workers)
        assert done == len(jobs.ids), result.problems[:20]
        assert not result.problems, result.problems[:20]
        assert result.counts['lost'] == result.counts['stuck'] == result.counts['finished_twice'] == 0
        if silent_for < 40 - REPLY_TIMEOUT / 3:
            failed = (result.counts, result.failures, crew.lines_about(result.failures))
            assert result.counts['finished_once'] == len(jobs.ids), failed
        assert not crew.unexpected_exits, crew.unexpected_exits[:3]
        assert not crew.stop_all()
    finally:
        crew.close()
        proxy.close()
        conn.close()
        producer.close()
