"""`rqfast rate-limits`: every rate-limit key and where its jobs stand (rqfast's own command).

A key of RQ 3.0's `RateLimit(key, concurrency=N)` (registered in `rq:rl-keys`) shows its slots: the
jobs holding one and the jobs waiting for one. A key of a window limit, `RateLimit(key, rate=N,
per=s)`, shows its log (`rq:rl:<key>:window`): the starts it remembers, the latest, and the jobs
planned for a later turn with the next one's time. A key may have both. Reads only.
"""

from __future__ import annotations

from typing import Any, cast

import click

from .. import keys
from ..dates import current_timestamp
from ..rate_limit import RateLimitRegistry
from ..text import as_text
from .config import CliConfig, pass_cli_config


def window_keys(connection: Any) -> list[str]:
    """The keys that have a window log (a SCAN: window limits keep no index of their keys)."""
    head, tail = keys.rate_limit_window_key('\0').split('\0')
    found = {as_text(name)[len(head) : -len(tail)] for name in connection.scan_iter(match=f'{head}*{tail}')}
    return sorted(found)


def describe_key(registry: RateLimitRegistry, now: float) -> str:
    """One line, e.g. `api: concurrency 5, running 5, waiting 12; window log: 10 starts, latest 0.2 s ago;
    30 planned, next in 0.8 s`."""
    parts = []
    if registry.concurrency:
        holding, waiting = registry.get_allowed_job_count(), registry.get_rate_limited_job_count()
        parts.append(f'concurrency {registry.concurrency}: {holding} holding a slot, {waiting} waiting')
    log = cast(list[tuple[bytes, float]], registry.connection.zrange(registry.window_key, 0, -1, withscores=True))
    if log:
        starts = [score for member, score in log if b':' in member]
        planned = [score for member, score in log if b':' not in member]
        window = f'window log: {len(starts)} starts'
        if starts:
            window += f', latest {max(now - max(starts), 0):.1f} s ago'
        window += f'; {len(planned)} planned'
        if planned:
            window += f', next in {max(min(planned) - now, 0):.1f} s'
        parts.append(window)
    return f'{registry.key}: ' + ('; '.join(parts) or 'no jobs')


@click.command('rate-limits')
@pass_cli_config
def rate_limits(cli_config: CliConfig) -> None:
    """Show every rate-limit key: its concurrency slots, and its window's starts and planned jobs."""
    connection = cli_config.connection
    names = {registry.key for registry in RateLimitRegistry.all(connection)} | set(window_keys(connection))
    if not names:
        click.echo('No rate-limit keys.')
        return
    now = current_timestamp()
    for name in sorted(names):
        click.echo(describe_key(RateLimitRegistry(name, connection), now))
