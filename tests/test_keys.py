"""rqfast/keys.py and lua/_common.lua (the key table the scripts include) build RQ's key names twice
(Python, Lua): they must agree."""

from __future__ import annotations

import re

import redis

from rqfast import keys
from rqfast.scriptload import _lua_dir, _source

CASES = {
    'K.queues': keys.QUEUES,
    'K.workers': keys.WORKERS,
    "K.queue('q1')": keys.queue_key('q1'),
    "K.intermediate('q1')": keys.intermediate_queue_key('q1'),
    "K.priority('q1')": keys.priority_queue_key('q1'),
    "K.job('j1')": keys.job_key('j1'),
    "K.dependents('j1')": keys.dependents_key('j1'),
    "K.dependencies('j1')": keys.dependencies_key('j1'),
    "K.results('j1')": keys.results_key('j1'),
    "K.execution('j1', 'x1')": keys.execution_key('j1', 'x1'),
    "K.executions('j1')": keys.executions_key('j1'),
    "K.started('q1')": keys.started_registry_key('q1'),
    "K.finished('q1')": keys.finished_registry_key('q1'),
    "K.failed('q1')": keys.failed_registry_key('q1'),
    "K.deferred('q1')": keys.deferred_registry_key('q1'),
    "K.scheduled('q1')": keys.scheduled_registry_key('q1'),
    "K.canceled('q1')": keys.canceled_registry_key('q1'),
    "K.ready('q1')": keys.ready_registry_key('q1'),
    "K.worker('w1')": keys.worker_key('w1'),
    "K.worker_executions('w1')": keys.worker_executions_key('w1'),
    "K.workers_by_queue('q1')": keys.workers_by_queue_key('q1'),
    "K.group('g1')": keys.group_key('g1'),
    'K.groups': keys.GROUPS,
    'K.cron_jobs': keys.CRON_JOBS,
    "K.cron_job_history('c1')": keys.cron_job_history_key('c1'),
    "K.dead_letter('q1')": keys.dead_letter_key('q1'),
    "K.events('q1')": keys.events_key('q1'),
    'K.rl_keys': keys.RATE_LIMIT_KEYS,
    'K.paused_queues': keys.PAUSED_QUEUES,
    "K.rl('r1')": keys.rate_limit_config_key('r1'),
    "K.rl_allowed('r1')": keys.rate_limit_allowed_key('r1'),
    "K.rl_waiting('r1')": keys.rate_limit_waiting_key('r1'),
    "K.debounce('d1')": keys.debounce_key('d1'),
    "K.throttle('t1')": keys.throttle_key('t1'),
    "K.rl_window('r1')": keys.rate_limit_window_key('r1'),
}


def test_lua_key_table_matches_keys_module(connection: redis.Redis) -> None:
    prelude = _source(_lua_dir(), '_common')
    expressions = list(CASES)
    script = prelude + '\nreturn {' + ', '.join(expressions) + '}'
    names = [name.decode() for name in connection.eval(script, 0, keys.PREFIX)]
    assert dict(zip(expressions, names, strict=True)) == CASES


def test_lua_priority_lane_width_matches_keys_module(connection: redis.Redis) -> None:
    prelude = _source(_lua_dir(), '_lanes')  # (with the files it includes)
    width = connection.eval(prelude + "\nreturn string.format('%.0f', PRIORITY_LANE)", 0, keys.PREFIX)
    assert int(width) == keys.PRIORITY_LANE


def test_layout_matches_rq() -> None:
    """The few names RQ spells unusually: the double colon, the composite started registry key."""
    from rq.job import Job as RQJob
    from rq.queue import Queue as RQQueue
    from rq.registry import FailedJobRegistry, StartedJobRegistry

    conn = redis.Redis()  # never used to talk to a server
    job = RQJob('j1', connection=conn)
    assert keys.dependencies_key('j1') == job.dependencies_key
    assert keys.dependents_key('j1') == job.dependents_key
    queue = RQQueue('q1', connection=conn)
    assert keys.queue_key('q1') == queue.key
    assert keys.intermediate_queue_key('q1') == queue.intermediate_queue_key
    assert keys.started_registry_key('q1') == StartedJobRegistry('q1', connection=conn).key
    assert keys.failed_registry_key('q1') == FailedJobRegistry('q1', connection=conn).key


def test_lua_scripts_name_no_prefix_and_no_tunable_number() -> None:
    """Key names come from the prefix argument, numbers (TTLs, limits) from rqfast/defaults.py via ARGV:
    in the scripts and in the files they include (lua/_*.lua)."""
    paths = sorted(_lua_dir().glob('*.lua'))
    assert {'_common.lua', '_lanes.lua', '_finish.lua', 'finish_job.lua'} <= {path.name for path in paths}
    for path in paths:
        text = path.read_text()
        assert 'rq:' not in text, path.name
        code = '\n'.join(line.split('--')[0] for line in text.splitlines())
        assert re.findall(r'\b\d{2,}\b', code) == [], path.name
