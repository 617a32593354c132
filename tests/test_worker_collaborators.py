"""The worker's collaborators on their own, without a worker: each is handed a WorkerContext (here a stub)
and the objects it works with, as BaseWorker hands them its own.

The recorder (claims, the jobs held in flight, the worker's state, the record of each end), the loader
(a claimed job from its hash), the runner (a job run in this process, hooks or not), the hook caller's
`replaced()` and the inline runner (load, run, record and claim the next: one call).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import pytest
import redis

from rqfast import Queue, engine
from rqfast.job import Job
from rqfast.outcome import Outcome, OutcomeKind
from rqfast.security import is_sealed
from rqfast.serializers import resolve_serializer
from rqfast.status import JobStatus, WorkerStatus
from rqfast.timeouts import NoDeathPenalty, UnixSignalDeathPenalty
from rqfast.worker.calling import HookCaller, own_hooks, replaced
from rqfast.worker.inline import Inline
from rqfast.worker.joblog import JobLog
from rqfast.worker.loading import JobLoader
from rqfast.worker.order import QueueOrder
from rqfast.worker.recorder import Recorder
from rqfast.worker.runner import Runner
from rqfast.worker.running import Running
from rqfast.worker.stopping import StopRequest
from rqfast.worker.workerhash import WorkerHash

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(30)

LOG = logging.getLogger('rqfast.worker')


class StubContext:
    """A WorkerContext with no worker behind it: settings as attributes, the counters kept as a list."""

    def __init__(self, connection: redis.Redis, **settings: Any) -> None:
        self.name = 'solo'
        self.log = LOG
        self.connection = connection
        self.job_class = Job
        self.queue_class = Queue
        self.serializer = resolve_serializer(None)
        self.job_policy = None
        self.exception_handlers: list[Any] = []
        self.death_penalty_class = UnixSignalDeathPenalty
        self.default_result_ttl = 500
        self.disable_default_exception_handler = False
        self.job_monitoring_interval = 30
        self.worker_ttl = 420
        self.heartbeat_grace = 30
        self.dequeue_timeout = 1
        self.log_job_description = True
        self.log_result_lifespan = True
        self.job_observer = None
        self.tallied: list[tuple[OutcomeKind, float]] = []
        vars(self).update(settings)

    def queue_names(self) -> list[str]:
        return ['q']

    def queue_named(self, name: str) -> Any:
        return Queue(name, connection=self.connection)

    def tally(self, outcome: Outcome, working_time: float) -> None:
        self.tallied.append((outcome.kind, working_time))


class NoHooks:
    """What the hook caller calls back when no hook is replaced: nothing."""


class Parts:
    """The collaborators a worker would make, wired as BaseWorker wires them, around a stub context."""

    def __init__(self, connection: redis.Redis, hooks_of: Any = None, **settings: Any) -> None:
        self.context = context = StubContext(connection, **settings)
        self.joblog = JobLog(context)
        self.recorder = Recorder(context, WorkerHash(connection, context.name, LOG), QueueOrder(['q']), self.joblog)
        self.loader = JobLoader(context, self.joblog, in_process=True)
        self.hooks = HookCaller(hooks_of if hooks_of is not None else NoHooks(), context, self.recorder, self.joblog)
        self.hooks.look()
        self.runner = Runner(None, context, self.hooks, self.joblog)


def test_the_recorder_is_what_holds_the_jobs_in_flight_and_the_state(connection: redis.Redis) -> None:
    parts = Parts(connection)
    recorder = parts.recorder
    assert recorder.state is WorkerStatus.STARTED and recorder.in_flight == {}
    claim = engine.Claim('j1', 'q', 'e1')
    recorder.hold(claim)
    assert recorder.in_flight == {'j1': claim} and recorder.state is WorkerStatus.BUSY
    assert recorder.busy_since is not None
    assert recorder.local_execution() is not None and recorder.local_execution().id == 'e1'  # type: ignore[union-attr]
    assert recorder.release('j1') is True and recorder.release('j1') is False
    recorder.idle()
    assert recorder.state is WorkerStatus.IDLE and recorder.busy_since is None
    recorder.set_state(WorkerStatus.SUSPENDED, write=False)  # (a state read back: nothing written)
    assert recorder.state is WorkerStatus.SUSPENDED and not connection.exists('rq:worker:solo')


def test_the_recorder_claims_and_records_with_one_call_that_claims_the_next(connection: redis.Redis) -> None:
    parts = Parts(connection)
    queue = Queue('q', connection=connection)
    first, second = queue.enqueue(jobs.add, 1, 2), queue.enqueue(jobs.add, 3, 4)
    claim = parts.recorder.claim()
    assert claim.job_id == first.id and connection.hget(first.key, 'status') == b'started'
    parts.recorder.hold(claim)
    job, poison = parts.loader.load(claim)
    assert poison is None and job.args == (1, 2)
    following = parts.recorder.record(Running(claim, job), Outcome(OutcomeKind.SUCCESS, 3), claim_next=True)
    assert following.job_id == second.id and following.recorded
    assert Job.fetch(first.id, connection=connection).return_value() == 3
    assert parts.recorder.in_flight == {} and parts.recorder.state is WorkerStatus.BUSY
    assert [kind for kind, _ in parts.context.tallied] == [OutcomeKind.SUCCESS]


def test_the_loader_names_what_it_cannot_load_and_seals_what_it_must_not_read(connection: redis.Redis) -> None:
    parts = Parts(connection)
    queue = Queue('q', connection=connection)
    bad = queue.enqueue(jobs.add, 1, 2)
    connection.hset(bad.key, 'retries_left', 'abc')
    claim = parts.recorder.claim()
    job, poison = parts.loader.load(claim)
    assert poison is not None and poison.kind is OutcomeKind.POISON and 'retries_left' in poison.exc_string
    assert job.id == bad.id and job.worker_name == 'solo'

    sealed_loader = JobLoader(parts.context, parts.joblog, in_process=False)  # (a worker whose horses run jobs)
    queue.enqueue(jobs.add, 5, 6)
    job, poison = sealed_loader.load(parts.recorder.claim())
    assert poison is None and is_sealed(job)


def test_the_runner_runs_a_job_here_and_logs_its_exception_where_it_raised(
    connection: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    parts = Parts(connection)
    assert not parts.hooks.hooked  # (nothing to go through: the short way)
    queue = Queue('q', connection=connection)
    queue.enqueue(jobs.add, 2, 2)
    queue.enqueue(jobs.div_by_zero)
    outcomes = []
    for _ in range(2):
        claim = parts.recorder.claim()
        job, _ = parts.loader.load(claim)
        running = Running(claim, job)
        running.penalty = NoDeathPenalty  # (a slot thread's: no SIGALRM off the main thread)
        with caplog.at_level(logging.ERROR, logger='rqfast.worker'):
            outcomes.append(parts.runner.run(running))
    assert [o.kind for o in outcomes if o is not None] == [OutcomeKind.SUCCESS, OutcomeKind.FAILURE]
    assert outcomes[0] is not None and outcomes[0].value == 4
    assert 'ZeroDivisionError' in caplog.text and 'exception raised while executing' in caplog.text


def test_the_inline_runner_loads_runs_and_records_each_job_claiming_the_next(connection: redis.Redis) -> None:
    parts = Parts(connection)
    stop = StopRequest(connection, 'solo', LOG)
    inline = Inline(parts.context, parts.recorder, parts.loader, parts.runner, stop)
    queue = Queue('q', connection=connection)
    ids = [queue.enqueue(jobs.add, i, 1).id for i in range(3)]
    claim = parts.recorder.claim()
    ran = []
    while claim:
        ran.append(claim.job_id)
        claim = inline.run(claim, claim_next=True, now=None)
    assert ran == ids
    assert [Job.fetch(job_id, connection=connection).get_status() for job_id in ids] == [JobStatus.FINISHED] * 3
    assert parts.recorder.state is WorkerStatus.IDLE and parts.recorder.in_flight == {}
    stop.request()  # a warm shutdown: the record claims no next job
    queue.enqueue(jobs.add, 9, 9)
    queue.enqueue(jobs.add, 9, 9)
    assert not inline.run(parts.recorder.claim(), claim_next=True, now=None)


def test_a_hook_counts_as_replaced_by_identity_whatever_wraps_it() -> None:
    @own_hooks
    class Base:
        def perform_job(self, job: Any, queue: Any) -> bool:
            return True

    class Plain(Base):
        pass

    class Overriding(Base):
        def perform_job(self, job: Any, queue: Any) -> bool:
            return False

    class Wrapped(Base):
        perform_job = functools.wraps(Base.perform_job)(lambda self, job, queue: True)

    assert Wrapped.perform_job.__module__ == Base.perform_job.__module__  # (what a module check would take as own)
    assert not replaced(Plain(), 'perform_job')
    assert replaced(Overriding(), 'perform_job') and replaced(Wrapped(), 'perform_job')
    patched = Plain()
    patched.perform_job = lambda job, queue: True  # type: ignore[method-assign]
    assert replaced(patched, 'perform_job')
