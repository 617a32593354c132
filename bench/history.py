"""The counted rows with the dashboard's history sampler beside the worker (issue 36): what history costs
the worker per job, measured the way bench/counting.py measures it without.

The sampler runs in the run's own process, on a connection that counts the commands it sends; they are
taken out of the server's INFO commandstats count (the window of each counted run: from reset_stats()
to command_counts()), so what is left is the worker's. rqfast's dashboard samples any RQ-layout Redis:
the rq column is measured the same way.
"""

from __future__ import annotations

import threading
from typing import Any

import redis

from bench import counting
from bench.child import NotAvailable
from bench.libs import Lib
from bench.redis_server import Target

INTERVAL = 1.0  # seconds between two samples (a dashboard's default is 5: this is five times the cost)


class CountingConnection(redis.Connection):
    """A connection that counts the commands it sends (MULTI/EXEC apart, as the counted rows do)."""

    sent = 0

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        CountingConnection.sent += _counted(args)
        super().send_command(*args, **kwargs)

    def pack_commands(self, commands: Any) -> Any:
        CountingConnection.sent += sum(_counted(command) for command in commands)
        return super().pack_commands(commands)


def _counted(command: Any) -> int:
    name = command[0].decode() if isinstance(command[0], bytes) else str(command[0])
    return 0 if name.upper() in ('MULTI', 'EXEC') else 1


def counting_client(url: str) -> redis.Redis:
    return redis.Redis(connection_pool=redis.ConnectionPool.from_url(url, connection_class=CountingConnection))


class LessTheSampler(Target):
    """The measured server, its command counts less what the sampler sent in the counted window."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.mark = 0
        self.taken = 0  # the sampler's commands taken out, over the runs

    def reset_stats(self) -> None:
        super().reset_stats()
        self.mark = CountingConnection.sent

    def command_counts(self) -> Any:
        counts = super().command_counts()
        sent = CountingConnection.sent - self.mark
        counts.data -= sent
        self.taken += sent
        return counts


class SamplerThread:
    """A dashboard's history sampler, every INTERVAL seconds, on a counting connection of its own."""

    def __init__(self, url: str, interval: float = INTERVAL) -> None:
        try:
            from rqfast.dashboard.catalog import Catalog
            from rqfast.dashboard.sampler import Sampler
        except ImportError as exc:
            raise NotAvailable(f"the dashboard's extra is not installed: {exc}") from None
        self.connection = counting_client(url)
        self.sampler = Sampler(self.connection, Catalog(self.connection), interval=interval)
        self.interval = interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            self.sampler.tick()

    def __enter__(self) -> SamplerThread:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def per_job_beside_sampler(lib: Lib, url: str, count: int, timeout: float) -> dict[str, float]:
    """counting.rq_per_job for a SimpleWorker, with a sampler running beside it; and how many samples."""
    if lib.deferred:
        raise NotAvailable("the sampler is the working tree's rqfast: it does not run beside a baseline's")
    target = LessTheSampler(url)
    with SamplerThread(url) as sampler:
        found = counting.rq_per_job(lib, target, 'SimpleWorker', count, timeout)
    return {**found, 'samples': sampler.sampler.samples, 'sampler_commands': target.taken}
