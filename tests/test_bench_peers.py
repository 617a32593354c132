"""bench --peers: the plumbing of the peers rows (python -m bench --peers runs the real thing).

None of the peers is needed here (CI does not install the .[peers] extra): a peer is stood in for by a
module of this file's own making, which the harness times and checks like any other.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest
import redis

from bench import __main__ as bench_main
from bench import async_producers, counting, jobs, peers, report
from bench.child import MeasurementError
from bench.libs import load_lib
from bench.peers import harness, tally
from bench.peers import rows as peer_rows
from bench.redis_server import Target
from bench.runner import Cell, Participant, run_scenario
from bench.scales import QUICK
from bench.scenarios import Row, Scenario, build

PEER_MODULES = ('dramatiq', 'celery', 'kombu', 'huey', 'arq', 'saq', 'taskiq', 'taskiq_redis')


class NoFlush:
    """A Target for run_scenario that has no server: the rows below never reach one."""

    def flush(self) -> None:
        pass


def test_peers_option_picks_peers_in_table_order() -> None:
    assert [p.name for p in peers.parse('all')] == ['dramatiq', 'celery', 'huey', 'arq', 'saq', 'taskiq']
    assert [p.name for p in peers.parse('arq, Dramatiq')] == ['dramatiq', 'arq']
    with pytest.raises(ValueError, match='unknown rabbit'):
        peers.parse('arq,rabbit')
    assert bench_main.parse_args(['--peers', 'saq']).peer_list == [peers.BY_NAME['saq']]
    assert bench_main.parse_args(['--peers']).peer_list == list(peers.PEERS)
    with pytest.raises(SystemExit):
        bench_main.parse_args(['--peers', 'rabbit'])


def test_default_run_keeps_out_the_peers_rows_and_peers_keeps_to_them() -> None:
    target = SimpleNamespace(url='redis://127.0.0.1:1/0')
    everything = build(QUICK, target) + peer_rows.build(QUICK, target, list(peers.PEERS))  # type: ignore[arg-type]
    default = bench_main.selected(everything, None)
    assert default and not any(bench_main.is_peers_row(s) for s in default)
    assert 'noop-simple' in [s.name for s in default]
    with_peers = bench_main.selected(everything, None, with_peers=True)
    assert [s.name for s in with_peers] == [
        'peers-noop-1',
        'peers-noop-10',
        'peers-io-50',
        'peers-aio-50',
        'peers-io-redis-50',
        'peers-aio-redis-50',
        'peers-single',
        'peers-bulk',
        'peers-latency-200',
        'peers-latency-half',
        'peers-latency-fork',
    ]
    assert [s.name for s in bench_main.selected(everything, 'peers-noop')] == ['peers-noop-1', 'peers-noop-10']
    # Each workload's job goes to the libraries that run that kind of job; the rest get no figure ('—').
    io, aio = with_peers[2], with_peers[3]
    assert sorted(io.others) == ['celery', 'dramatiq', 'huey'] and io.bull is None and io.rq is not None
    assert sorted(aio.others) == ['arq', 'saq', 'taskiq'] and aio.bull is not None and aio.rq is not None
    assert [row.key for row in io.rows] == ['peers-io-50', 'peers-io-50-cpu', 'peers-io-50-cmd', 'peers-io-50-lua']
    assert io.floor is not None and with_peers[-1].floor is not None and with_peers[7].floor is None  # (bulk: none)
    latency = with_peers[8]
    assert sorted(latency.others) == sorted(p.name for p in peers.PEERS) and latency.bull is not None


def test_the_quick_run_imports_no_peer() -> None:
    # CI runs `python -m bench --quick` without the extra: building every row must not need a peer.
    code = (
        'import sys\n'
        'from types import SimpleNamespace\n'
        'from bench import __main__ as m, peers\n'
        'from bench.peers import rows\n'
        'from bench.scales import QUICK\n'
        "t = SimpleNamespace(url='redis://127.0.0.1:1/0')\n"
        "args = m.parse_args(['--quick'])\n"
        'assert args.peers is None\n'
        'scenarios = m.build(QUICK, t) + rows.build(QUICK, t, args.peer_list)\n'
        'assert not any(m.is_peers_row(s) for s in m.selected(scenarios, None))\n'
        '[peers.missing(p) for p in peers.PEERS]\n'
        f'loaded = [name for name in {PEER_MODULES!r} if name in sys.modules]\n'
        'assert not loaded, loaded\n'
    )
    done = subprocess.run([sys.executable, '-c', code], cwd=counting.REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_peer_that_is_not_installed_says_so_in_every_cell() -> None:
    ghost = peers.Peer('ghost', ('no_such_module_for_the_bench',), ('no-such-dist',), 'thread', 'none')
    why = peers.missing(ghost)
    assert why is not None and why.startswith('not installed: no module no_such_module_for_the_bench')
    assert peers.version(ghost) == 'no-such-dist not installed'
    ran = []
    rows = [Row('peers-x', 'x', 'jobs/s ↑'), Row('peers-x-cpu', 'x cpu', 'Redis µs/job ↓', False)]
    scenario = Scenario('peers-x', rows, None, others={'ghost': lambda: ran.append(1)})
    people = [Participant('rq', load_lib('rq', 'rq')), Participant('ghost', missing=why, peer=True)]
    results = run_scenario(scenario, people, 3, NoFlush(), 10)  # type: ignore[arg-type]
    assert ran == []
    assert results['peers-x']['ghost'].note == why and results['peers-x-cpu']['ghost'].note == why
    table = report.table([scenario], results, people)
    assert table.splitlines()[2].split(' | ')[-2] == 'not installed'
    assert report.notes([scenario], results, people) == [f'- ghost (peers-x): {why}']


def test_the_table_compares_rqfast_with_the_best_peer() -> None:
    rq, ours = load_lib('rq', 'rq'), load_lib('rqfast', 'rqfast')
    people = [Participant('rq', rq), Participant('rqfast', ours), Participant('bullmq')]
    people += [Participant('dramatiq', peer=True), Participant('huey', peer=True)]
    rate = Row('peers-noop-1', 'no-op', 'jobs/s ↑')
    cpu = Row('peers-noop-1-cpu', 'cpu', 'Redis µs/job ↓', False)
    results = {
        'peers-noop-1': {
            'rq': Cell([100.0]),
            'rqfast': Cell([300.0]),
            'bullmq': Cell([900.0]),  # not a peer: never the best peer
            'dramatiq': Cell([150.0, 200.0, 250.0]),
            'huey': Cell(note='n/a: no such thing'),
        },
        'peers-noop-1-cpu': {
            'rq': Cell([400.0]),
            'rqfast': Cell([90.0]),
            'bullmq': Cell([10.0]),
            'dramatiq': Cell([120.0]),
            'huey': Cell([60.0]),
        },
    }
    header, _, first, second = report.table([Scenario('peers-noop-1', [rate, cpu], None)], results, people).splitlines()
    assert header.split(' | ')[2:] == [
        'rq',
        'rqfast',
        'rqfast / rq',
        'BullMQ',
        'BullMQ / rq',
        'dramatiq',
        'huey',
        'rqfast / best peer |',
    ]
    assert first.split(' | ')[-4:] == ['9.00×', '200 (150–250)', 'n/a', '1.50× (dramatiq) |']
    assert second.split(' | ')[-1] == '1.50× (huey) |'


class FakeSide:
    """A peer of threads that runs each queued job once (or drops one, or runs one twice)."""

    def __init__(self, url: str, drop: int = 0, twice: int = 0) -> None:
        self.url, self.drop, self.twice = url, drop, twice
        self.queue: list[str] = []

    def enqueue(self, url: str, job: str, count: int) -> None:
        assert url == self.url
        self.queue += [job] * count

    def queued(self, url: str) -> int:
        return len(self.queue)

    def insert(self, url: str, job: str, count: int, bulk: bool) -> float:
        start = time.monotonic()
        self.enqueue(url, job, count - self.drop)
        return time.monotonic() - start

    def work(self, url: str, job: str, count: int, concurrency: int, timeout: float) -> float:
        todo = self.queue[self.drop :] + self.queue[: self.twice]
        start = time.monotonic()
        with ThreadPoolExecutor(concurrency) as pool:
            for name in todo:
                pool.submit(tally.counted(name))
            tally.CURRENT.wait(timeout)
        return start


@pytest.fixture
def bench_target(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Target:
    monkeypatch.setenv(jobs.REDIS_URL_VARIABLE, redis_url)
    redis.Redis.from_url(redis_url).delete(jobs.INCR_KEY)
    return Target(redis_url)


def test_a_peer_run_gives_jobs_per_second_and_redis_cpu_per_job(
    bench_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSide(bench_target.url)
    monkeypatch.setattr(harness, 'side', lambda peer: fake)
    before = bench_target.cpu_seconds()
    rate, cpu, commands, scripts = harness.peer_work(peers.BY_NAME['huey'], bench_target, 'io_sleep_redis', 40, 10, 30)
    assert bench_target.cpu_seconds() > before
    assert 0 < rate < 10 * 100  # 10 at a time, 10 ms each
    assert cpu > 0
    assert commands > 0 and scripts == 0  # (the stand-in's LPUSH/BRPOP/INCRs; no script)
    assert int(bench_target.client.get(jobs.INCR_KEY)) == 40


def test_a_peer_run_that_lost_or_repeated_a_job_is_an_error(
    bench_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSide(bench_target.url, twice=1)
    monkeypatch.setattr(harness, 'side', lambda peer: fake)
    with pytest.raises(MeasurementError, match='21 jobs ran, 20 were enqueued'):
        harness.peer_work(peers.BY_NAME['huey'], bench_target, 'noop', 20, 4, 30)
    fake = FakeSide(bench_target.url, drop=1)
    with pytest.raises(MeasurementError, match='19 of 20 jobs done after'):
        harness.peer_work(peers.BY_NAME['huey'], bench_target, 'noop', 20, 4, 1)


def test_a_job_that_skipped_its_redis_call_is_an_error(bench_target: Target) -> None:
    bench_target.client.set(jobs.INCR_KEY, 19)
    with pytest.raises(MeasurementError, match='19 of 20 jobs made their Redis call'):
        harness.check_incr(bench_target.client, 'io_async_redis', 20)
    harness.check_incr(bench_target.client, 'noop', 20)  # no Redis call in that job: nothing to check


def test_the_tally_wakes_an_event_loop_from_a_job_thread() -> None:
    import asyncio

    run = tally.start(3)
    marks = threading.Thread(target=lambda: [tally.counted('noop')() for _ in range(3)])

    async def main() -> None:
        marks.start()
        await run.wait_async(10)

    asyncio.run(main())
    marks.join()
    assert run.done.is_set() and run.finished_at > 0 and run.total() == 3
    late = tally.start(2)
    with pytest.raises(MeasurementError, match='1 of 2 jobs done after 0 s'):
        tally.counted('noop')()
        late.wait(0.05)


def test_rqfast_in_a_peers_row_reads_redis_cpu_around_its_worker(bench_target: Target) -> None:
    bench_target.flush()
    lib = load_lib('rqfast', 'rqfast')
    rate, cpu, commands, scripts = harness.rq_work(lib, bench_target, 'io_sleep_redis', 20, 5, 60)
    assert rate > 0 and cpu > 0
    assert scripts > commands > 0  # (its script calls' time holds their commands')
    assert int(bench_target.client.get(jobs.INCR_KEY)) == 20


def test_an_enqueue_run_reads_back_what_the_library_holds(
    bench_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSide(bench_target.url)
    monkeypatch.setattr(harness, 'side', lambda peer: fake)
    rate, cpu, *_ = harness.peer_insert(peers.BY_NAME['saq'], bench_target, 'noop_async', 50, bulk=False)
    assert rate > 0 and cpu >= 0 and fake.queued(bench_target.url) == 50
    fake = FakeSide(bench_target.url, drop=1)
    with pytest.raises(MeasurementError, match='49 of 50 jobs are queued'):
        harness.peer_insert(peers.BY_NAME['saq'], bench_target, 'noop_async', 50, bulk=True)


def test_a_latency_run_measures_each_job_from_its_enqueue_to_its_start(
    bench_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench import latency

    bench_target.flush()
    monkeypatch.setattr(latency, 'WARM_AT', 0.3)
    steps = latency.plan(100, 20, 0.5)
    assert [tag for _, tag in steps] == ['w', 'i'] + ['p'] * 20
    assert steps[2][0] - steps[1][0] == latency.AFTER_IDLE and steps[3][0] - steps[2][0] == pytest.approx(0.01)
    found = latency.rq_latency(load_lib('rqfast', 'rqfast'), bench_target, 'SimpleWorker', 100, 20, 0.5, 30)
    assert 0 < found['p50'] <= found['p99'] < 1000 and 0 < found['idle'] < 1000  # ms
    assert redis.Redis.from_url(bench_target.url).zcard('rq:finished:bench_rqfast') == 22


def test_a_latency_run_that_lost_a_job_is_an_error(tmp_path: Any) -> None:
    from bench import latency

    path = tmp_path / 'pickups'
    path.write_text('w 0.001\ni 0.002\np 0.003\n')
    with pytest.raises(MeasurementError, match='1 of 2 paced jobs'):
        latency._figures(str(path), 2)


def test_the_floors_are_measured(bench_target: Target) -> None:
    from bench import floors

    bench_target.flush()
    assert floors.script_rate(bench_target, 20) > 0
    rate, commands = floors.enqueue_floor(bench_target, 20)
    assert rate > 0 and commands > 0
    assert floors.fork_rate(5) > 0
    assert 0 < floors.sleep_rate(bench_target, 20, 10, with_redis=True) < 10 * 100
    assert floors.layout_commands_us(bench_target, 20, 1) > commands  # (a job's whole life, enqueue included)
    assert set(floors.rq_record()) >= {'data', 'created_at', 'enqueued_at', 'description', 'origin', 'timeout'}


# --- the async producer rows (bench/async_producers.py): arq, saq and taskiq as columns


class FakeAsyncSide:
    """A peer with an async producer: LPUSH on a redis.asyncio client (dropping one job if told)."""

    KEY = 'bench:fake-async'

    def __init__(self, drop: int = 0) -> None:
        self.drop = drop
        self.connections = 0

    async def async_producer(self, url: str, job: str, callers: int) -> tuple[Any, Any]:
        import redis.asyncio

        client = redis.asyncio.Redis.from_url(url)
        await asyncio.gather(*(client.ping() for _ in range(callers)))
        self.connections = len(client.connection_pool._available_connections)
        sent = 0

        async def send() -> None:
            nonlocal sent
            sent += 1
            if sent > self.drop:
                await client.lpush(self.KEY, job)

        return send, client.aclose

    def queued(self, url: str) -> int:
        return int(redis.Redis.from_url(url).llen(self.KEY))


def test_an_async_peer_column_counts_what_its_producer_left_in_redis(
    bench_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench_target.flush()
    fake = FakeAsyncSide()
    monkeypatch.setattr(async_producers, 'side', lambda peer: fake)
    found = async_producers.peer(peers.BY_NAME['saq'], bench_target, 60, 7)
    assert list(found) == ['async-7'] and found['async-7'] > 0
    assert fake.connections == 7  # opened before the clock started
    assert fake.queued(bench_target.url) == 61  # (and the warm-up job)
    bench_target.flush()
    monkeypatch.setattr(async_producers, 'side', lambda peer: FakeAsyncSide(drop=2))
    with pytest.raises(MeasurementError, match='59 jobs queued, 60 were enqueued'):
        async_producers.peer(peers.BY_NAME['saq'], bench_target, 60, 7)


def test_rqfast_async_row_enqueues_every_job(bench_target: Target) -> None:
    bench_target.flush()
    found = async_producers.measure(load_lib('rqfast', 'rqfast'), bench_target, 40, 10)
    assert set(found) == {'async-10', 'async-10-threads'} and min(found.values()) > 0


def test_only_async_brings_the_async_peers_as_columns_and_a_default_run_does_not() -> None:
    target = SimpleNamespace(url='redis://127.0.0.1:1/0')
    everything = build(QUICK, target) + peer_rows.build(QUICK, target, list(peers.PEERS))  # type: ignore[arg-type]
    args = bench_main.parse_args(['--only', 'async'])
    chosen = bench_main.selected(everything, args.only)
    assert [s.name for s in chosen] == ['async-10', 'async-100']
    assert all(sorted(s.others) == ['arq', 'saq', 'taskiq'] for s in chosen)
    assert [p.name for p in bench_main.peer_columns(args, chosen)] == ['arq', 'saq', 'taskiq']
    args = bench_main.parse_args(['--only', 'async', '--peers', 'saq,huey'])
    assert [p.name for p in bench_main.peer_columns(args, chosen)] == ['saq']
    args = bench_main.parse_args([])
    assert bench_main.peer_columns(args, bench_main.selected(everything, None)) == []
