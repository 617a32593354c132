"""The worker's small parts on their own: queue order, the worker hash, command parsing, the upkeep threads."""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest
import redis

from rqfast import SimpleWorker, keys
from rqfast.command import parse_payload
from rqfast.status import WorkerStatus
from rqfast.worker import workerhash
from rqfast.worker.order import DequeueStrategy, QueueOrder
from rqfast.worker.threads import Threads
from rqfast.worker.upkeep import Upkeep, heartbeat_interval

pytestmark = pytest.mark.timeout(30)

BIRTH = datetime(2031, 2, 3, 4, 5, 6, 789012, tzinfo=timezone.utc)


def test_default_order_is_the_queues_as_given() -> None:
    order = QueueOrder(['a', 'b', 'c'])
    order.claimed_from('b')
    assert order.next() == ['a', 'b', 'c']


def test_round_robin_puts_the_queue_after_the_last_claim_first() -> None:
    order = QueueOrder(['a', 'b', 'c'], DequeueStrategy.ROUND_ROBIN)
    order.claimed_from('a')
    assert order.next() == ['b', 'c', 'a']
    order.claimed_from('c')
    assert order.next() == ['a', 'b', 'c']
    order.claimed_from('elsewhere')
    assert order.next() == ['a', 'b', 'c']


def test_random_order_shuffles_a_copy() -> None:
    order = QueueOrder(['a', 'b', 'c'], DequeueStrategy.RANDOM)
    seen = {tuple(order.next()) for _ in range(200)}
    assert len(seen) > 1 and all(sorted(s) == ['a', 'b', 'c'] for s in seen)
    assert order.names == ['a', 'b', 'c']


def test_the_worker_hash_reads_back_as_written(connection: redis.Redis) -> None:
    about = {'pid': 42, 'hostname': 'box', 'ip_address': '?', 'version': '1', 'python_version': '3'}
    workerhash.write_birth(connection, 'w1', 480, BIRTH, ['a', 'b'], about, WorkerStatus.STARTED)
    assert workerhash.worker_keys(connection) == [keys.worker_key('w1')]
    assert workerhash.worker_keys(connection, 'b') == [keys.worker_key('w1')]
    assert workerhash.worker_keys(connection, 'c') == []
    record = workerhash.read(connection, keys.worker_key('w1'))
    assert record == workerhash.WorkerRecord(
        'w1', ['a', 'b'], WorkerStatus.STARTED, BIRTH, BIRTH, 42, 'box', ip_address='?', version='1', python_version='3'
    )
    workerhash.write_state(connection, 'w1', WorkerStatus.BUSY)
    assert workerhash.read(connection, keys.worker_key('w1')).state == WorkerStatus.BUSY  # type: ignore[union-attr]
    with pytest.raises(ValueError, match='w1'):
        workerhash.write_birth(connection, 'w1', 480, BIRTH, ['a'], about)
    workerhash.write_death(connection, 'w1', BIRTH, ['a', 'b'])
    assert workerhash.worker_keys(connection) == []
    workerhash.write_birth(connection, 'w2', 480, BIRTH, ['a'], about)  # register_birth() by hand: no state (RQ 3.0)
    assert workerhash.read(connection, keys.worker_key('w2')).state == '?'  # type: ignore[union-attr]


def test_reading_a_worker_whose_hash_is_gone_drops_its_key(connection: redis.Redis) -> None:
    connection.sadd(keys.WORKERS, keys.worker_key('ghost'))
    assert workerhash.read(connection, keys.worker_key('ghost')) is None
    assert workerhash.worker_keys(connection) == []


def test_parse_payload_takes_rqs_command_messages_and_rejects_the_rest() -> None:
    assert parse_payload({'data': b'{"command": "stop-job", "job_id": "x"}'}) == {'command': 'stop-job', 'job_id': 'x'}
    for message in ({'data': b'not json'}, {'data': b'[1, 2]'}):
        with pytest.raises(ValueError):
            parse_payload(message)
    with pytest.raises(KeyError):
        parse_payload({})


def test_heartbeat_interval_is_a_third_of_the_shorter_of_monitoring_and_half_the_ttl() -> None:
    assert heartbeat_interval(30, 420) == 10
    assert heartbeat_interval(30, 24) == 4
    assert heartbeat_interval(1, 420) == 1.0


def test_upkeep_runs_the_recovery_pass_between_maintenance_passes() -> None:
    maintained, recovered = threading.Semaphore(0), threading.Semaphore(0)
    upkeep = Upkeep('w')
    upkeep.start(lambda: None, 3600, maintained.release, 3600, recovered.release, 0.5)
    assert maintained.acquire(timeout=5)  # at once
    assert recovered.acquire(timeout=5) and recovered.acquire(timeout=5)
    assert not maintained.acquire(timeout=0)  # the full pass waits for its own interval
    upkeep.stop()


def test_upkeep_maintains_at_once_and_beats_until_stopped() -> None:
    beats, maintained = threading.Semaphore(0), threading.Event()
    upkeep = Upkeep('w')
    upkeep.start(beats.release, 0.01, maintained.set, 3600)
    assert maintained.wait(5)
    assert beats.acquire(timeout=5) and beats.acquire(timeout=5)
    upkeep.stop()
    assert upkeep.stopped.is_set()


def test_a_stop_job_reaches_a_job_claimed_but_not_yet_taken_in(connection: redis.Redis) -> None:
    """The claim script marks the job started and indexes the execution; until the loop takes the reply in, the
    job is in no in-flight table: a stop-job sent then (once ignored: CI saw the job run to its end) counts."""
    worker = SimpleWorker(['q'], connection=connection, name='w-stop')
    connection.sadd(keys.worker_executions_key('w-stop'), 'job[1]*:x1', 'other:x2')
    assert worker.is_working_on('job[1]*') and worker.is_working_on('other')
    assert not worker.is_working_on('job') and not worker.is_working_on('job[1]') and not worker.is_working_on('oth')


def test_closed_job_threads_end_free_ones_at_once_and_busy_ones_after_their_job() -> None:
    reported: list[object] = []
    quick_done, running, release = threading.Event(), threading.Event(), threading.Event()
    threads = Threads('w', lambda token, done: (reported.append(token), quick_done.set()))

    def slow() -> str:
        running.set()
        release.wait(10)
        return 'done'

    before = set(threading.enumerate())
    threads.submit('slow', slow)
    assert running.wait(5)
    threads.submit('quick', lambda: 'done')  # a second thread: the first is busy
    assert quick_done.wait(5)
    ours = set(threading.enumerate()) - before
    assert len(ours) == 2
    threads.close()  # one thread free, one still running `slow`
    release.set()
    for thread in ours:
        thread.join(5)
    assert not any(thread.is_alive() for thread in ours), 'a job thread outlived its closed pool'
    assert sorted(map(str, reported)) == ['quick', 'slow']
