"""RQ's two time encodings: UTC text in hashes, float/int epochs in streams and zsets."""

from __future__ import annotations

import math
import time
from datetime import datetime, timedelta, timezone

from .defaults import rq2_compat

_FORMAT = '%Y-%m-%dT%H:%M:%S.%fZ'


def now() -> datetime:
    return datetime.now(timezone.utc)


def utcformat(dt: datetime) -> str:
    """`2026-11-21T07:35:07.354946Z`: always six fractional digits and a literal Z."""
    if dt.tzinfo is timezone.utc:  # the common case, and isoformat is several times faster than strftime
        return dt.isoformat(timespec='microseconds')[:-6] + 'Z'
    return dt.strftime(_FORMAT)


def utcparse(text: str | bytes) -> datetime:
    """Parse RQ's UTC text (with or without the fraction); ValueError for anything else."""
    if isinstance(text, bytes):
        text = text.decode()
    if not text.endswith('Z') or len(text) not in (20, 27):
        raise ValueError(f'not an RQ UTC timestamp: {text!r}')
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SECOND = timedelta(seconds=1)


def epoch_seconds(dt: datetime) -> int:
    """Integer epoch of a datetime; a naive one is taken as local time, as RQ's scheduler does: at the UTC
    offset in effect on its date (RQ 3.0), or at the zone's daylight-saving offset whatever the date when the
    zone has one (RQ 2.12's, under RQFAST_COMPAT=2.12)."""
    if dt.tzinfo is timezone.utc:  # the common case (every time rqfast takes itself), twice per job
        return math.floor(dt.timestamp())
    if dt.tzinfo is None:
        if rq2_compat():
            offset = -(time.timezone if time.daylight == 0 else time.altzone)
            dt = dt.replace(tzinfo=timezone(timedelta(seconds=offset)))
        else:
            dt = dt.astimezone()
    return (dt - _EPOCH) // _SECOND  # (calendar.timegm would import locale into a spawned child)


def from_epoch(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=timezone.utc)


def current_timestamp() -> int:
    """Now as an integer UTC epoch."""
    return (now() - _EPOCH) // _SECOND


def str_to_date(text: str | bytes) -> datetime:
    """utcparse for a stored value; ValueError for an empty one."""
    if not text:
        raise ValueError('Empty string or bytestring provided')
    return utcparse(text)
