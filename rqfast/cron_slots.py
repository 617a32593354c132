"""Where a cron string's runs fall: RQ 3.0 matches its fields against local time, like system cron; RQ 2.12
(rq2_compat()) matched them against UTC.

In local time a clock change makes some slots ambiguous or missing. A repeated local time (clocks fall
back) is taken at its first occurrence, so a slot in the repeated hour runs once; a skipped local time
(clocks spring forward) moves later by the size of the change (02:30 on a day that jumps from 02:00 to
03:00 runs at 03:30). Both are what `datetime.timestamp()` does with fold=0.
"""

from __future__ import annotations

from datetime import datetime, timezone

from croniter import croniter

from .defaults import rq2_compat


def _moment(local: datetime) -> datetime:
    """A naive local time as an aware UTC datetime (fold=0: a repeated time's first occurrence)."""
    return datetime.fromtimestamp(local.replace(fold=0).timestamp(), timezone.utc)


def next_run(cron: str, after: datetime) -> datetime:
    """The first run of `cron` later than `after`."""
    if rq2_compat():
        following: datetime = croniter(cron, after).get_next(datetime)
        return following
    slots = croniter(cron, after.astimezone().replace(tzinfo=None))
    while True:  # a slot in a repeated hour can map to a moment before `after`: skip it
        moment = _moment(slots.get_next(datetime))
        if moment > after:
            return moment


def previous_run(cron: str, before: datetime) -> datetime:
    """The last run of `cron` earlier than `before`."""
    if rq2_compat():
        previous: datetime = croniter(cron, before).get_prev(datetime)
        return previous
    slots = croniter(cron, before.astimezone().replace(tzinfo=None))
    while True:
        moment = _moment(slots.get_prev(datetime))
        if moment < before:
            return moment
