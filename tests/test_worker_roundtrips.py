"""Round-trip budgets of the worker, counted, not timed.

Every socket write of redis-py goes through `Connection.send_packed_command`, so the number of calls is
the number of round trips. A burst run of N jobs and one of N + K jobs differ only by K jobs in the
steady state (startup and teardown cancel out), so (cost(N + K) - cost(N)) / K is the cost of one job.
Writes from the side threads (heartbeat, maintenance, the command listener) and connection set-ups
(a handshake per new pooled connection) are left out: they are costs per interval and per connection.
RQ's SimpleWorker spends 18 round trips on a successful job and 20 on a failed one; rqfast's budget
is 1 and at most 2.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import redis
import redis.connection

import rqfast
from rqfast.registry import FailedJobRegistry, FinishedJobRegistry
from rqfast.worker import SimpleWorker

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

COMMAND_RE = re.compile(rb'\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n')
N, K = 10, 40
CONNECTION_SETUP = {'HELLO', 'CLIENT', 'SCRIPT', 'SUBSCRIBE', 'AUTH', 'SELECT'}


class Counter:
    def __init__(self) -> None:
        self.commands: list[str] = []

    @property
    def count(self) -> int:
        return len(self.commands)

    @property
    def steady(self) -> int:
        """Without connection set-ups: a side thread holding a pooled connection makes the main thread open
        one more now and then (HELLO, CLIENT SETINFO), a cost per connection, not per job."""
        return sum(c.split()[0] not in CONNECTION_SETUP for c in self.commands)


@pytest.fixture
def count_round_trips(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], Any]], Counter]:
    """count_round_trips(fn) runs fn and returns the socket writes it made on the main thread.

    The side threads (heartbeat, maintenance, the pub/sub listener) work on a clock, not per job.
    """
    original = redis.connection.Connection.send_packed_command
    active: list[Counter] = []

    def counting(self: Any, command: Any, check_health: bool = True) -> Any:
        if threading.current_thread() is threading.main_thread():
            packed = b''.join(bytes(p) for p in command) if isinstance(command, (list, tuple)) else bytes(command)
            for counter in active:
                counter.commands.append(' '.join(m.decode() for m in COMMAND_RE.findall(packed)[:3]))
        return original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, 'send_packed_command', counting)

    def run(fn: Callable[[], Any]) -> Counter:
        counter = Counter()
        active.append(counter)
        try:
            fn()
        finally:
            active.remove(counter)
        return counter

    return run


def burst(conn: redis.Redis, queues: list[str], worker_class: type = SimpleWorker, **work: Any) -> Callable[[], Any]:
    def run() -> None:
        worker = worker_class(queues, connection=conn)
        worker.work(burst=True, logging_level='WARNING', **work)

    return run


def per_job(
    conn: redis.Redis,
    count_round_trips: Any,
    enqueue: Callable[[int], None],
    queues: list[str] | None = None,
    worker_class: type = SimpleWorker,
) -> tuple[float, Counter, Counter]:
    """The steady-state round trips of one job: two burst runs, N and N + K jobs."""
    queues = queues or ['q']
    conn.flushdb()
    enqueue(2)
    burst(conn, queues, worker_class)()  # scripts loaded, connections made
    costs = []
    for n in (N, N + K):
        conn.flushdb()
        enqueue(n)
        costs.append(count_round_trips(burst(conn, queues, worker_class)))
        assert sum(rqfast.Queue(q, connection=conn).count for q in queues) == 0
    return (costs[1].steady - costs[0].steady) / K, costs[0], costs[1]


def test_successful_job_costs_one_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    cost, small, large = per_job(
        redis_conn, count_round_trips, lambda n: q.enqueue_many([q.prepare_data(jobs.add, (i, 1)) for i in range(n)])
    )
    print(f'round trips per successful job: {cost}')
    assert cost == 1, (small.commands, large.commands)
    assert FinishedJobRegistry('q', connection=redis_conn).count == N + K


def test_failed_job_costs_at_most_two_round_trips(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    cost, small, large = per_job(
        redis_conn, count_round_trips, lambda n: q.enqueue_many([q.prepare_data(jobs.div_by_zero) for _ in range(n)])
    )
    print(f'round trips per failed job: {cost}')
    assert cost <= 2, (small.commands, large.commands)
    assert FailedJobRegistry('q', connection=redis_conn).count == N + K


class HookedWorker(SimpleWorker):
    """RQ's hooks replaced, each calling the default: every job goes through execute_job, perform_job and
    handle_job_success, whose record is the one call that also claims the next job."""

    def execute(self, job: Any, claim: Any, now: Any = None) -> Any:
        return super().execute(job, claim, now)

    def perform_job(self, job: Any, queue: Any, execution: Any = None) -> bool:
        return super().perform_job(job, queue, execution)

    def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any = None, execution: Any = None) -> None:
        super().handle_job_success(job, queue, started_job_registry, execution)


def test_a_worker_with_rqs_hooks_replaced_costs_one_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    cost, small, large = per_job(
        redis_conn,
        count_round_trips,
        lambda n: q.enqueue_many([q.prepare_data(jobs.add, (i, 1)) for i in range(n)]),
        worker_class=HookedWorker,
    )
    print(f'round trips per successful job, hooks replaced: {cost}')
    assert cost == 1, (small.commands, large.commands)
    assert FinishedJobRegistry('q', connection=redis_conn).count == N + K


def test_jobs_with_options_cost_one_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    """Result TTLs, meta, callbacks and timeouts add no round trip."""
    q = rqfast.Queue('q', connection=redis_conn)

    def enqueue(n: int) -> None:
        for i in range(n):
            q.enqueue(
                jobs.add,
                i,
                1,
                result_ttl=[0, -1, 100, None][i % 4],
                job_timeout=30,
                meta={'i': i},
                on_success=rqfast.Callback(jobs.success_callback),
            )

    cost, small, large = per_job(redis_conn, count_round_trips, enqueue)
    assert cost == 1, (small.commands, large.commands)


def test_releasing_dependents_costs_no_extra_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    """Each parent releases a child in its finishing script; the child is one more job of 1 round trip."""
    q = rqfast.Queue('q', connection=redis_conn)

    def enqueue(n: int) -> None:
        for _ in range(n // 2):
            parent = q.enqueue(jobs.noop)
            q.enqueue(jobs.noop, depends_on=parent)

    cost, small, large = per_job(redis_conn, count_round_trips, enqueue)
    assert cost == 1, (small.commands, large.commands)
    assert FinishedJobRegistry('q', connection=redis_conn).count == N + K


def test_retried_job_costs_one_round_trip_per_run(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    """A job with Retry(max=1) that always fails runs twice: 2 runs, each at most 2 round trips."""
    q = rqfast.Queue('q', connection=redis_conn)

    def enqueue(n: int) -> None:
        for _ in range(n // 2):
            q.enqueue(jobs.div_by_zero, retry=rqfast.Retry(max=1))

    cost, small, large = per_job(redis_conn, count_round_trips, enqueue)
    assert cost <= 2, (small.commands, large.commands)


def test_several_queues_cost_one_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    queues = ['high', 'default', 'low']

    def enqueue(n: int) -> None:
        for i in range(n):
            rqfast.Queue(queues[i % 3], connection=redis_conn).enqueue(jobs.noop)

    cost, small, large = per_job(redis_conn, count_round_trips, enqueue, queues)
    assert cost == 1, (small.commands, large.commands)


@pytest.mark.parametrize('strategy', ['round_robin', 'random'])
def test_dequeue_strategies_cost_one_round_trip(redis_conn: redis.Redis, count_round_trips: Any, strategy: str) -> None:
    queues = ['a', 'b']
    burst(redis_conn, queues)()
    costs = []
    for n in (N, N + K):
        redis_conn.flushdb()
        for i in range(n):
            rqfast.Queue(queues[i % 2], connection=redis_conn).enqueue(jobs.noop)
        costs.append(count_round_trips(burst(redis_conn, queues, dequeue_strategy=strategy)).steady)
    assert (costs[1] - costs[0]) / K == 1, costs


def test_worker_startup_and_teardown_are_few_round_trips(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    """RQ needs about 20 to start and 2 to stop; an empty burst run of rqfast stays well under that."""
    burst(redis_conn, ['q'])()
    counted = count_round_trips(burst(redis_conn, ['q']))
    assert counted.count <= 12, counted.commands


def test_an_idle_worker_blocks_instead_of_polling(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    """Idle for 1 s or for 2 s, the worker sends the same commands: one blocking move, no polling loop."""
    burst(redis_conn, ['q'])()
    costs = []
    for idle in (1, 2):
        worker = SimpleWorker(['q'], connection=redis_conn)
        costs.append(count_round_trips(partial(worker.work, max_idle_time=idle, logging_level='WARNING')))
    work = [[c for c in cost.commands if c.split()[0] not in CONNECTION_SETUP] for cost in costs]
    assert work[0] == work[1], work
    assert work[0].count('BLMOVE') == 1


def test_each_step_is_one_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    """step() runs the claim in hand and claims the next in its one finish call: one round trip per step."""
    q = rqfast.Queue('q', connection=redis_conn)
    q.enqueue_many([q.prepare_data(jobs.add, (i, 1)) for i in range(K + 1)])
    worker = SimpleWorker(['q'], connection=redis_conn)
    assert worker.step()  # the first claim, with the scripts loaded and the connection made
    cost = count_round_trips(lambda: [worker.step() for _ in range(K)])
    assert cost.steady == K, cost.commands
    assert FinishedJobRegistry('q', connection=redis_conn).count == K + 1


def blocked_on_queue(conn: redis.Redis) -> bool:
    """Whether a client is blocked in a BLMOVE (the idle worker's wait)."""
    return any(client.get('cmd') == 'blmove' and 'b' in client.get('flags', '') for client in conn.client_list())


def one_at_a_time(conn: redis.Redis, count: int) -> Callable[[], Any]:
    """A worker that is idle, blocked on its queue, whenever a job comes: each job is enqueued (from another
    thread, not counted) once the worker's wait blocks, so every job takes the idle path."""

    def run() -> None:
        queue = rqfast.Queue('q', connection=redis.Redis(connection_pool=conn.connection_pool))

        def produce() -> None:
            for i in range(count):
                while not blocked_on_queue(conn):
                    threading.Event().wait(0.002)
                queue.enqueue(jobs.add, i, 1)

        producer = threading.Thread(target=produce)
        producer.start()
        SimpleWorker(['q'], connection=conn).work(max_jobs=count, logging_level='WARNING')
        producer.join(30)

    return run


def test_a_job_that_finds_the_worker_idle_costs_three_round_trips(
    redis_conn: redis.Redis, count_round_trips: Any
) -> None:
    """The idle path: the blocking wait returns the job's id, one claim call starts it, its finish call
    records it and finds the queue empty, and the worker blocks again at once (no claim of its own, no
    read of the paused queues): BLMOVE + 2 script calls per job (it was 5: a claim after the finish, and
    SMEMBERS of the paused queues before each wait)."""
    one_at_a_time(redis_conn, 2)()
    costs = []
    for n in (5, 5 + 10):
        redis_conn.flushdb()
        costs.append(count_round_trips(one_at_a_time(redis_conn, n)))
        assert FinishedJobRegistry('q', connection=redis_conn).count == n
    per_job = (costs[1].steady - costs[0].steady) / 10
    steady = [[c.split()[0] for c in cost.commands if c.split()[0] not in CONNECTION_SETUP] for cost in costs]
    extra = {name: (steady[1].count(name) - steady[0].count(name)) / 10 for name in set(steady[1])}
    extra = {('script call' if name in ('FCALL', 'EVALSHA') else name): n for name, n in extra.items() if n}
    print(f'round trips per job on the idle path: {per_job} {extra}')
    assert per_job == 3, extra
    assert extra == {'BLMOVE': 1, 'script call': 2}, extra
