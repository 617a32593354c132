"""Runs one worker in a process of its own, for the tests that send it signals or cut its connection.

    python tests/worker_process.py <redis url> <json options>

options: `queues`, `name`, `worker` (constructor keywords), `work` (work() keywords), `impl` ('rqfast' or
'rq'), `idle_wakeup` (seconds an idle rqfast worker blocks between looks at suspension), `class`
('SimpleWorker', 'Worker' or 'SpawnWorker'), `attrs` (attributes set on the worker before it works, e.g.
heartbeat_grace). The worker logs to stderr; the exit code is 0 when work() returned.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'chaos'))


def main() -> None:
    url, options = sys.argv[1], json.loads(sys.argv[2])
    connection = redis.Redis.from_url(url)
    module = importlib.import_module('rq.worker' if options.get('impl', 'rqfast') == 'rq' else 'rqfast.worker')
    name = options.get('class', 'SimpleWorker')
    if '.' in name:  # a worker class of the tests' own, by dotted path
        module_name, _, name = name.rpartition('.')
        module = importlib.import_module(module_name)
    worker_class = getattr(module, name)
    worker = worker_class(
        options.get('queues', ['q']), name=options.get('name'), connection=connection, **options.get('worker', {})
    )
    if 'idle_wakeup' in options and options.get('impl', 'rqfast') != 'rq':
        worker.dequeue_timeout = options['idle_wakeup']
    for name, value in options.get('attrs', {}).items():
        setattr(worker, name, value)
    worker.work(**{'logging_level': 'INFO', **options.get('work', {})})


if __name__ == '__main__':
    main()
