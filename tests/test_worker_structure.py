"""The worker's shape, counted: its collaborators reach none of its private members, and its classes add few
methods of their own to RQ's API.

- Private members: every `x._name` in the package where `x` is not `self`/`cls` and `_name` is a private
  member of a worker class (its attributes and its instances'). From modules other than the worker's own
  (those defining the classes it is made of): none. The collaborators (the loop, its runners, the
  recorder, the loader, the hook caller...) are handed a read-only WorkerContext (context.py) and the
  objects they work with, never the worker's insides. Within the worker's own modules, the few places
  that act on another instance of the worker are listed with their reason.
- Methods: the methods (functions, properties, class and static methods) that rqfast's classes in
  BaseWorker's MRO define and RQ 3.0's BaseWorker lacks. 54 at c9686c3 as the issue counted them
  (50 as counted here); the budget is two thirds of that.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import fakeredis

import rqfast
from rqfast.worker import BaseWorker, SimpleWorker, SpawnWorker, Worker
from rqfast.worker.worker_classes import HerokuWorker

PACKAGE = Path(rqfast.__file__).parent

# The modules that define the worker's classes (BaseWorker, its mixins, the worker classes).
WORKER_MODULES = {
    'worker/base.py',
    'worker/hooks.py',
    'worker/reads.py',
    'worker/rq_api.py',
    'worker/signals.py',
    'worker/stepwise.py',
    'worker/declared.py',
    'worker/simple.py',
    'worker/forking.py',
    'worker/spawn.py',
    'worker/worker_classes.py',
}

# Within those modules, code that acts on another instance of the worker (not `self`), and why.
OWN_INSTANCE_ACCESSES = {
    ('worker/base.py', '_exc_handlers'): "the worker's Context reads its exception handlers (a list RQ code swaps)",
    ('worker/reads.py', '_apply'): 'find_by_key() fills the worker it made from the record it read',
    ('worker/spawn.py', '_hooks'): "a spawned child's worker (made there) runs the job through its hook caller",
}

# RQ 3.0.0's BaseWorker: its class's names (dir(), but the dunders), read from rq==3.0.0's rq/worker/base.py.
RQ30_BASEWORKER = set(
    """
_enqueue_dependents_safely _finalize_failure _finalize_success _get_state _install_signal_handlers
_ip_address_from_client_list _pubsub_exception_handler _release_slot_safely _set_connection _set_ip_address
_set_state _shutdown _start_scheduler all all_keys bootstrap check_for_suspension clean_group_registries
clean_registries cleanup_execution connection_timeout count current_execution_count death_date death_penalty_class
dequeue_job_and_maintain_ttl dequeue_timeout execute_job execution executions_key exponential_backoff_factor
find_by_key get_current_executions get_current_job get_current_job_id get_heartbeat_ttl get_redis_server_version
get_state handle_exception handle_execution_ended handle_job_failure handle_job_retry handle_job_success
handle_payload handle_warm_shutdown_request handle_work_horse_killed heartbeat horse_pid increment_failed_job_count
increment_successful_job_count increment_total_working_time is_horse job_class key kill_horse log_job_description
log_result_lifespan main_work_horse maintain_heartbeats max_connection_wait_time perform_job pop_exc_handler
prepare_execution prepare_job_execution procline pubsub_channel_name push_exc_handler queue_class queue_keys
queue_names redis_worker_namespace_prefix redis_workers_keys refresh register_birth register_death reorder_queues
request_force_stop request_stop request_stop_execution run_maintenance_tasks serialize set_shutdown_requested_date
set_state setup_work_horse_signals should_run_maintenance_tasks shutdown_requested_date state stop_scheduler
subscribe teardown unsubscribe validate_queues wait_for_horse work
""".split()
)
METHODS_AT_C9686C3 = 54  # as issue 31 counted them (this test's count then: 50)
METHOD_BUDGET = METHODS_AT_C9686C3 * 2 // 3


def worker_private_names() -> set[str]:
    names: set[str] = set()
    connection = fakeredis.FakeRedis()
    for klass in (SimpleWorker, Worker, SpawnWorker, HerokuWorker):
        names |= {name for name in dir(klass) if name.startswith('_') and not name.endswith('__')}
        instance = klass(['q'], connection=connection, prepare_for_work=False)
        names |= {name for name in vars(instance) if name.startswith('_') and not name.endswith('__')}
    return names


def private_accesses() -> dict[tuple[str, str], list[int]]:
    """(module, private member) -> the lines where something other than self/cls reaches it."""
    names = worker_private_names()
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        module = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Attribute) and node.attr in names):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ('self', 'cls'):
                continue
            if isinstance(node.value, ast.Call) and getattr(node.value.func, 'id', None) == 'super':
                continue  # super()._name(): the class's own member, reached from an override
            found.setdefault((module, node.attr), []).append(node.lineno)
    return found


def test_no_module_but_the_workers_own_reaches_its_private_members() -> None:
    accesses = private_accesses()
    elsewhere = {key: lines for key, lines in accesses.items() if key[0] not in WORKER_MODULES}
    assert elsewhere == {}, elsewhere
    assert set(accesses) == set(OWN_INSTANCE_ACCESSES), set(accesses) ^ set(OWN_INSTANCE_ACCESSES)


def test_the_count_sees_a_collaborator_that_reaches_in(tmp_path: Path) -> None:
    """(The scan itself: an access through anything but self counts; one through self does not.)"""
    names = worker_private_names()
    assert {'_recorder', '_hooks', '_runner', '_loop', '_exc_handlers', '_stop_request'} <= names
    source = 'def f(worker):\n    return worker._recorder, self._recorder, a.b._runner\n'
    tree = ast.parse(source)
    hits = [
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and n.attr in names
        and not (isinstance(n.value, ast.Name) and n.value.id in ('self', 'cls'))
    ]
    assert sorted(hits) == ['_recorder', '_runner']


def own_methods_beyond_rq() -> dict[str, str]:
    """Method name -> the rqfast class in BaseWorker's MRO that defines it, for those RQ 3.0's BaseWorker lacks."""
    own: dict[str, str] = {}
    for klass in BaseWorker.__mro__:
        if not klass.__module__.startswith('rqfast'):
            continue
        for name, value in vars(klass).items():
            if name.startswith('__') and name.endswith('__'):
                continue
            if inspect.isfunction(value) or isinstance(value, property | classmethod | staticmethod):
                own.setdefault(name, klass.__name__)
    return {name: klass for name, klass in own.items() if name not in RQ30_BASEWORKER}


def test_baseworker_adds_at_most_two_thirds_of_its_former_methods_to_rqs_api() -> None:
    beyond = own_methods_beyond_rq()
    assert len(beyond) <= METHOD_BUDGET, sorted(beyond)
    # the collaborators' work is theirs: none of it came back as a worker method
    assert not {'_claim', '_finish', '_ref', '_engine_connection', '_in_hand_for', '_record_outcome'} & set(beyond)
