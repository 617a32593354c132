"""Round-trip budgets of the enqueue paths, counted, not timed.

Every socket write of redis-py goes through `Connection.send_packed_command` (a pipeline sends all its
commands in one call), so the number of calls is the number of round trips. RQ 2.12 needs 2 per
enqueue, 5-6 with dependencies; rqfast's budget is one script call per state change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import redis.connection

try:
    import jobs
    from snapshot import UNDER_TEST, implementation
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import UNDER_TEST, implementation  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

# The command names in a packed RESP request (`*N\r\n$len\r\nNAME\r\n`), for failure messages.
COMMAND_RE = re.compile(rb'\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n')


class RoundTrips:
    def __init__(self) -> None:
        self.count = 0
        self.commands: list[str] = []

    def __repr__(self) -> str:
        return f'{self.count} round trips: {self.commands!r}'


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """`with round_trips() as counted:` counts the socket writes made inside the block."""
    original = redis.connection.Connection.send_packed_command
    active: list[RoundTrips] = []

    def counting(self: Any, command: Any, check_health: bool = True) -> Any:
        for counter in active:
            counter.count += 1
            packed = b''.join(bytes(part) for part in command) if isinstance(command, (list, tuple)) else command
            counter.commands.append(' '.join(m.decode() for m in COMMAND_RE.findall(bytes(packed))[:8]))
        return original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, 'send_packed_command', counting)

    @contextmanager
    def counter() -> Iterator[RoundTrips]:
        counted = RoundTrips()
        active.append(counted)
        try:
            yield counted
        finally:
            active.remove(counted)

    yield counter


@pytest.fixture
def impl() -> Any:
    return implementation(UNDER_TEST)


@pytest.fixture
def queue(impl: Any, redis_conn: redis.Redis) -> Any:
    """A queue whose connection is warm: scripts loaded, server version known."""
    q = impl.Queue('q', connection=redis_conn)
    q.enqueue(jobs.noop)
    q.enqueue(jobs.noop, job_id='warm-unique', unique=True)
    q.enqueue_in(timedelta(seconds=30), jobs.noop)
    q.enqueue(jobs.noop, depends_on='warm-unique')
    q.enqueue_many([impl.Queue.prepare_data(jobs.noop)])
    return q


def test_enqueue_is_one_round_trip(queue: Any, round_trips: Any) -> None:
    with round_trips() as counted:
        job = queue.enqueue(jobs.add, 1, 2)
    assert counted.count == 1, counted
    assert job.id in queue.job_ids


def test_enqueue_with_options_is_one_round_trip(impl: Any, queue: Any, round_trips: Any) -> None:
    with round_trips() as counted:
        queue.enqueue(
            jobs.echo,
            1,
            job_timeout='2m',
            result_ttl=5,
            failure_ttl=6,
            ttl=70,
            meta={'m': 1},
            at_front=True,
            retry=impl.Retry(max=2, interval=[1, 2]),
            repeat=impl.Repeat(times=2, interval=3),
            on_success=impl.Callback(jobs.success_callback),
        )
    assert counted.count == 1, counted


def test_enqueue_with_met_dependency_is_one_round_trip(
    impl: Any, queue: Any, redis_conn: redis.Redis, round_trips: Any
) -> None:
    parent = impl.Queue('sync', connection=redis_conn, is_async=False).enqueue(jobs.noop)
    assert parent.is_finished
    with round_trips() as counted:
        child = queue.enqueue(jobs.add, 1, 2, depends_on=parent)
    assert counted.count == 1, counted
    assert child.get_status() == 'queued'


def test_enqueue_with_unmet_dependency_is_one_round_trip(queue: Any, round_trips: Any) -> None:
    parent = queue.enqueue(jobs.noop)
    with round_trips() as counted:
        child = queue.enqueue(jobs.add, 1, 2, depends_on=[parent, 'missing-id'])
    assert counted.count == 1, counted
    assert child.get_status() == 'deferred'


def test_enqueue_with_missing_dependency_is_one_round_trip(queue: Any, round_trips: Any) -> None:
    with round_trips() as counted:
        child = queue.enqueue(jobs.add, 1, 2, depends_on='no-such-job')
    assert counted.count == 1, counted
    assert child.get_status() == 'queued'


def test_enqueue_at_is_one_round_trip(queue: Any, round_trips: Any) -> None:
    with round_trips() as counted:
        job = queue.enqueue_at(datetime.now(timezone.utc) + timedelta(minutes=5), jobs.add, 1, 2)
    assert counted.count == 1, counted
    with round_trips() as counted_in:
        queue.enqueue_in(timedelta(seconds=10), jobs.add, 1, 2)
    assert counted_in.count == 1, counted_in
    assert job.get_status() == 'scheduled'


def test_unique_enqueue_is_one_round_trip(impl: Any, queue: Any, round_trips: Any) -> None:
    with round_trips() as counted:
        queue.enqueue(jobs.add, 1, 2, job_id='unique-1', unique=True)
    assert counted.count == 1, counted
    with round_trips() as duplicate:
        with pytest.raises(impl.exceptions.DuplicateJobError):
            queue.enqueue(jobs.add, 1, 2, job_id='unique-1', unique=True)
    assert duplicate.count == 1, duplicate


def test_enqueue_many_is_one_round_trip_per_thousand(impl: Any, queue: Any, round_trips: Any) -> None:
    n = 2500
    datas = [impl.Queue.prepare_data(jobs.add, (i, i)) for i in range(n)]
    before = queue.count
    with round_trips() as counted:
        enqueued = queue.enqueue_many(datas)
    assert 1 <= counted.count <= math.ceil(n / 1000), counted.count
    assert len(enqueued) == n
    assert queue.count == before + n


def test_small_enqueue_many_is_one_round_trip(impl: Any, queue: Any, round_trips: Any) -> None:
    datas = [impl.Queue.prepare_data(jobs.add, (i, i), job_id=f'small-{i}') for i in range(10)]
    with round_trips() as counted:
        queue.enqueue_many(datas)
    assert counted.count == 1, counted
