"""Named subsets of the tests: `python -m pytest --subset NAME` (tests/conftest.py) runs only these files.

- quick: a first try (a minute or two): the engine and its scripts, enqueue, the three worker classes.
- python: what CI's compatibility matrix runs on the Pythons other than the one that runs everything
  (docs/compatibility.md): every rqfast module imported and exercised, every worker class, the CLI.
- redis-py: what it runs on each redis-py major: the engine, enqueue, the three worker classes, Redis
  Cluster and TLS.
- server: what it runs on another server (Valkey): the engine, the scripts, the worker classes, a
  3-master cluster and the chaos smoke (a redis-server killed and restarted under work; the poison corpus).
- quiet: the tests that measure time itself and need a quiet machine (`make test-quiet`); the default run
  leaves them out (conftest.py's QUIET marker, setup.cfg's addopts).

A file listed with keywords runs only its tests whose node id contains one of them.
"""

from __future__ import annotations

# The engine and its scripts, enqueue, and one file per worker class.
_CORE = {
    'test_scripts.py': (),
    'test_keys.py': (),
    'test_plan.py': (),
    'test_enqueue_api.py': (),
    'test_worker_roundtrips.py': (),
    'test_worker_execution.py': (),  # SimpleWorker
    'test_worker_forking.py': (),  # Worker
    'test_worker_spawn.py': (),  # SpawnWorker
}

# Of the cluster tests (a 3-master cluster per module), the ones through every worker class, the
# scheduler, retries, dependencies, pipelines and a failover; the rest run in the whole suite.
_CLUSTER_SLOT = (
    'test_400_jobs',
    'test_cli_worker_scheduler_retry',
    'test_every_script_call_declares_the_slot_key',
    'test_a_failover_of_the_slots_master',
)
_CLUSTER_SHARDED = ('test_400_jobs', 'test_scheduler_retry_dependency_and_pipelines', 'test_dependencies_within')

SUBSETS: dict[str, dict[str, tuple[str, ...]]] = {
    'quick': _CORE,
    'python': {
        **_CORE,
        'test_layers.py': (),  # every module imported, each alone in a fresh interpreter too
        'test_surface.py': (),  # RQ 2.12's public surface: every module and name
        'test_local.py': (),
        'test_dependency_module.py': (),
        'test_compat_dependents.py': (),
        'test_cli_alive.py': (),  # python -m rqfast
        'test_cli.py': (),
        'test_concurrency.py': (),  # SimpleWorker at concurrency > 1: threads and one event loop
        'test_worker_pool_processes.py': (),
        'test_scheduler.py': (),
        'test_cron.py': (),
        'test_maintenance.py': (),
        'test_capture_output.py': (),
        'test_rate_limit.py': (),
        'test_metrics.py': (),
        'test_tracing.py': (),
        'test_async_producer.py': (),  # rqfast.asyncio (redis.asyncio, asyncio's own behaviour by Python)
        'test_async_examples.py': (),
    },
    'redis-py': {
        **_CORE,
        'test_roundtrips_enqueue.py': (),
        'test_pipeline.py': (),
        'test_cluster.py': _CLUSTER_SLOT,
        'test_cluster_sharded.py': _CLUSTER_SHARDED,
        'test_connection_security.py': ('test_tls_rediss_url', 'test_the_acl_user', 'test_sentinel'),
        'test_async_producer.py': (),  # redis.asyncio differs most between redis-py majors
        'test_async_cluster.py': (),
    },
    'server': {
        **_CORE,
        'test_lua_includes.py': (),
        'test_maintenance.py': (),
        'test_scheduler.py': (),
        'test_cluster.py': _CLUSTER_SLOT,
        'test_cluster_sharded.py': _CLUSTER_SHARDED,
        'test_async_producer.py': (),
        'chaos/test_chaos.py': ('test_redis_server_killed_and_restarted', 'test_poison_corpus[SpawnWorker]'),
    },
}


def selects(subset: str, relative: str, nodeid: str | None = None) -> bool:
    """Whether `subset` runs the test file `relative` (a path under tests/, with /), or its test `nodeid`."""
    files = SUBSETS[subset]
    if relative not in files:
        return False
    words = files[relative]
    return nodeid is None or not words or any(word in nodeid for word in words)
