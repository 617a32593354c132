"""Runs one cron scheduler (rq's or rqfast's) in a process of its own, until SIGTERM, for tests/test_cron_fleet.py.

    python tests/cron_fleet_process.py <rq|rqfast> <redis url> <tag>

It registers FLEET_JOBS and records the id of every job it enqueues in the set `fleet:<tag>` (right after
the enqueue, for the test to tell whose run each history entry is; the scheduler itself is unchanged).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import redis

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (function, queue, options): intervals of 1 and 2 seconds sharing one history (the same function, other
# arguments), and cron strings with a seconds field (croniter's sixth), every 2 and every 3 seconds.
FLEET_JOBS: list[tuple[str, str, dict[str, Any]]] = [
    ('say_hello', 'fleet', {'args': ('every 1s',), 'interval': 1}),
    ('say_hello', 'fleet', {'args': ('every 2s',), 'interval': 2}),
    ('noop', 'fleet', {'cron': '* * * * * */2', 'name': 'cron-2s'}),
    ('echo', 'fleet', {'args': ('cron 3s',), 'cron': '* * * * * */3', 'name': 'cron-3s'}),
]


def main() -> None:
    impl, url, tag = sys.argv[1:4]
    connection = redis.Redis.from_url(url)
    from tests import jobs

    if impl == 'rq':
        import rq.cron as cron

        original = cron.CronJob.enqueue

        def recording(self: Any, conn: Any) -> Any:
            job = original(self, conn)
            conn.sadd(f'fleet:{tag}', job.id)
            return job

        cron.CronJob.enqueue = recording  # type: ignore[method-assign]
    else:
        import rqfast.cron as cron  # type: ignore[no-redef]

        original_run = cron.CronJob.enqueue_run

        def recording_run(self: Any, conn: Any, due: Any, own: Any = ()) -> Any:
            job, other = original_run(self, conn, due, own)
            if job is not None:
                conn.sadd(f'fleet:{tag}', job.id)
            return job, other

        cron.CronJob.enqueue_run = recording_run  # type: ignore[method-assign]
    scheduler = cron.CronScheduler(connection=connection, name=f'fleet-{tag}')
    for func, queue, options in FLEET_JOBS:
        scheduler.register(getattr(jobs, func), queue, **options)
    scheduler.start()


if __name__ == '__main__':
    main()
