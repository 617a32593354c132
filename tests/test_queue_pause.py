"""Queue.pause()/resume(): rqfast workers skip a paused queue in the claim script itself (rq:paused-queues)."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from click.testing import CliRunner

from rqfast import Queue, SimpleWorker, engine
from rqfast.cli import main
from rqfast.job import Job
from rqfast.status import JobStatus

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def burst(connection: redis.Redis, queues: list[str], **options: object) -> SimpleWorker:
    worker = SimpleWorker(queues, connection=connection, **options)  # type: ignore[arg-type]
    worker.work(burst=True, logging_level='WARNING')
    return worker


def test_pause_resume_and_is_paused(connection: redis.Redis) -> None:
    queue, other = Queue('a', connection=connection), Queue('b', connection=connection)
    assert not queue.is_paused
    queue.pause()
    queue.pause()  # twice is once
    assert queue.is_paused and not other.is_paused
    assert connection.smembers('rq:paused-queues') == {b'a'}
    queue.resume()
    assert not queue.is_paused and not connection.exists('rq:paused-queues')
    queue.pause()
    queue.delete()
    assert not Queue('a', connection=connection).is_paused  # a deleted queue is no longer paused


def test_a_worker_skips_a_paused_queue_and_takes_it_again_after_resume(connection: redis.Redis) -> None:
    paused, other = Queue('a', connection=connection), Queue('b', connection=connection)
    paused.pause()
    held = paused.enqueue(jobs.add, 1, 2)
    done = other.enqueue(jobs.add, 3, 4)
    burst(connection, ['a', 'b'])
    assert done.get_status() == JobStatus.FINISHED
    assert held.get_status() == JobStatus.QUEUED and paused.job_ids == [held.id]
    paused.resume()
    burst(connection, ['a', 'b'])
    assert held.get_status() == JobStatus.FINISHED and held.return_value() == 3


@pytest.mark.parametrize('concurrency', [1, 4])
def test_a_queue_paused_under_load_starts_no_job_after_pause_returns(connection: redis.Redis, concurrency: int) -> None:
    paused, other = Queue('a', connection=connection), Queue('b', connection=connection)
    for _ in range(150):
        paused.enqueue(jobs.long_running, 0.005)
        other.enqueue(jobs.long_running, 0.005)
    observed: dict[str, object] = {}

    def pause_when_busy() -> None:  # the worker runs in the main thread (its death penalty uses signals)
        deadline = time.monotonic() + 30
        while paused.count > 130 and time.monotonic() < deadline:  # busy on `a` (listed first)
            time.sleep(0.005)
        paused.pause()
        observed['left'] = paused.count
        observed['late'] = paused.enqueue(jobs.long_running, 0.005)  # enqueued while paused: stays queued

    pauser = threading.Thread(target=pause_when_busy)
    pauser.start()
    SimpleWorker(['a', 'b'], connection=connection, concurrency=concurrency).work(burst=True, logging_level='WARNING')
    pauser.join(30)
    left, late = observed['left'], observed['late']
    assert isinstance(left, int) and isinstance(late, Job)
    # the claims took no `a` job after pause() returned (nor the late one)
    assert paused.count == left + 1 and paused.job_ids[-1] == late.id
    started_after = [
        job.id
        for job in Job.fetch_many(paused.job_ids, connection=connection)
        if job is not None and job.started_at is not None
    ]
    assert started_after == []
    # every `a` job claimed before pause() returned ran to the end: none was claimed after it
    assert 0 < len(paused.finished_job_registry.get_job_ids()) == 150 - left
    assert other.count == 0 and len(other.finished_job_registry.get_job_ids()) == 150  # `b` kept working


def test_an_id_a_blocking_wait_moved_from_a_queue_paused_since_goes_back(connection: redis.Redis) -> None:
    """The claim script's own check: the id goes back to the head of its queue, and other queues are claimed."""
    paused, other = Queue('a', connection=connection), Queue('b', connection=connection)
    first, second = paused.enqueue(jobs.add, 1, 2), paused.enqueue(jobs.add, 2, 3)
    elsewhere = other.enqueue(jobs.add, 3, 4)
    connection.lmove('rq:queue:a', 'rq:queue:a:intermediate', 'LEFT', 'RIGHT')  # what the Waiter's BLMOVE does
    paused.pause()
    worker = SimpleWorker(['a', 'b'], connection=connection)
    claim = engine.claim_job(connection, worker._recorder.ref(), ('a', first.id))
    assert claim.job_id == elsewhere.id
    assert paused.job_ids == [first.id, second.id] and connection.llen('rq:queue:a:intermediate') == 0
    assert first.get_status() == JobStatus.QUEUED


def test_an_idle_worker_does_not_wait_on_a_paused_queue(connection: redis.Redis) -> None:
    paused, other = Queue('a', connection=connection), Queue('b', connection=connection)
    paused.pause()
    enqueued: list[Job] = []

    def enqueue_later() -> None:
        time.sleep(0.5)  # the worker is blocking on `b` only by now
        enqueued.extend([paused.enqueue(jobs.add, 1, 2), other.enqueue(jobs.add, 3, 4)])

    producer = threading.Thread(target=enqueue_later)
    producer.start()
    SimpleWorker(['a', 'b'], connection=connection).work(max_idle_time=2, logging_level='WARNING')
    producer.join(10)
    held, done = enqueued
    assert done.get_status() == JobStatus.FINISHED
    assert held.get_status() == JobStatus.QUEUED and paused.job_ids == [held.id]
    assert connection.llen('rq:queue:a:intermediate') == 0


def test_cli_pause_unpause_and_info(redis_url: str, redis_conn: redis.Redis) -> None:
    Queue('a', connection=redis_conn).enqueue(jobs.add, 1, 2)
    Queue('b', connection=redis_conn).enqueue(jobs.add, 1, 2)
    runner = CliRunner()
    result = runner.invoke(main, ['pause', 'a', '--url', redis_url])
    assert result.exit_code == 0, result.output
    assert 'Paused queue a' in result.output and Queue('a', connection=redis_conn).is_paused
    info = runner.invoke(main, ['info', '--url', redis_url, '--only-queues'])
    lines = {line.split()[0]: line for line in info.output.splitlines() if line[:1] in 'ab'}
    assert lines['a'].startswith('a (paused)') and '(paused)' not in lines['b'], info.output
    raw = runner.invoke(main, ['info', '--url', redis_url, '--only-queues', '--raw'])
    assert 'queue a 1, 0 executing, 0 finished, 0 failed, paused' in raw.output, raw.output
    result = runner.invoke(main, ['unpause', 'a', '--url', redis_url])
    assert result.exit_code == 0 and not Queue('a', connection=redis_conn).is_paused
    assert runner.invoke(main, ['pause', '--url', redis_url]).exit_code != 0  # a queue name is needed


def test_an_idle_worker_whose_queues_are_all_paused_sleeps_instead_of_spinning(
    connection: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without leaving paused queues out of its blocking wait, the worker would move the id, have the claim
    put it back, and start over as fast as it can."""
    paused = Queue('a', connection=connection)
    held = paused.enqueue(jobs.add, 1, 2)
    paused.pause()
    claims: list[object] = []
    claim_job = engine.claim_job

    def counted(*args: object, **kwargs: object) -> engine.Claim:
        claims.append(args)
        return claim_job(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, 'claim_job', counted)
    SimpleWorker(['a'], connection=connection).work(max_idle_time=1, logging_level='WARNING')
    assert len(claims) <= 3, len(claims)
    assert held.get_status() == JobStatus.QUEUED and paused.job_ids == [held.id]


def test_a_queue_paused_while_the_worker_blocks_without_looking_keeps_its_jobs(redis_conn: redis.Redis) -> None:
    """After a job, the worker blocks at once without reading the paused queues (its finish call saw none):
    a queue paused meanwhile is seen by the claim of the id its wait moved, which puts the id back; the
    worker then reads the paused queues before it blocks again, and runs the job once resumed. (A real
    server: fakeredis' blocking move waits out its timeout.)"""
    queue = Queue('a', connection=redis_conn)
    first = queue.enqueue(jobs.add, 1, 2)
    held: list[Job] = []
    blocked = threading.Event()

    def pause_then_enqueue() -> None:
        while first.get_status() != JobStatus.FINISHED:
            time.sleep(0.01)
        time.sleep(0.3)  # the worker blocks on `a` by now, without having read the paused queues
        queue.pause()
        held.append(queue.enqueue(jobs.add, 3, 4))
        time.sleep(0.5)
        blocked.set()
        queue.resume()

    producer = threading.Thread(target=pause_then_enqueue)
    producer.start()
    worker = SimpleWorker(['a'], connection=redis_conn)
    statuses: list[object] = []
    original = worker._recorder.claim

    def watched(*args: object, **kwargs: object) -> engine.Claim:
        claim = original(*args, **kwargs)  # type: ignore[arg-type]
        if held and not blocked.is_set():
            statuses.append((claim.job_id, held[0].get_status()))
        return claim

    worker._recorder.claim = watched  # type: ignore[method-assign]
    worker.work(max_jobs=2, max_idle_time=5, logging_level='WARNING')
    producer.join(10)
    assert statuses and all(job_id is None and status == JobStatus.QUEUED for job_id, status in statuses), statuses
    assert held[0].get_status() == JobStatus.FINISHED
    assert redis_conn.llen('rq:queue:a:intermediate') == 0
