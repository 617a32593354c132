"""Runs one worker in a process of its own, for the tests that send it signals or cut its connection.

    python tests/worker_process.py <redis url> <json options>

options: `queues`, `name`, `worker` (constructor keywords), `work` (work() keywords), `impl` ('rqfast' or
'rq'), `idle_wakeup` (seconds an idle rqfast worker blocks between looks at suspension). The worker logs
to stderr; the exit code is 0 when work() returned.
"""

from __future__ import annotations

import json
import os
import sys

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    url, options = sys.argv[1], json.loads(sys.argv[2])
    connection = redis.Redis.from_url(url)
    if options.get('impl', 'rqfast') == 'rq':
        from rq.worker import SimpleWorker
    else:
        from rqfast.worker import SimpleWorker
    worker = SimpleWorker(
        options.get('queues', ['q']), name=options.get('name'), connection=connection, **options.get('worker', {})
    )
    if 'idle_wakeup' in options and options.get('impl', 'rqfast') != 'rq':
        worker.dequeue_timeout = options['idle_wakeup']
    worker.work(**{'logging_level': 'INFO', **options.get('work', {})})


if __name__ == '__main__':
    main()
