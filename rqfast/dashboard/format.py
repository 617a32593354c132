"""How the pages write numbers, times and durations (Jinja2 filters)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any


def num(value: float | None) -> str:
    """12,345; 0.5; – for nothing."""
    if value is None:
        return '–'
    if float(value).is_integer():
        return f'{int(value):,}'
    return f'{value:,.1f}' if abs(value) >= 10 else f'{value:.2g}'


def per_second(value: float | None) -> str:
    return '–' if value is None else f'{value:,.1f}/s' if value >= 10 or value == 0 else f'{value:.2g}/s'


def percent(value: float | None) -> str:
    return '–' if value is None else f'{value * 100:.1f}%'


def seconds(value: float | None) -> str:
    """A duration: 850 µs, 12 ms, 3.4 s, 5 min, 2.1 h, 3.0 d."""
    if value is None:
        return '–'
    value = float(value)
    if value < 0.001:
        return f'{value * 1e6:.0f} µs'
    if value < 1:
        return f'{value * 1000:.0f} ms'
    if value < 60:
        return f'{value:.1f} s'
    if value < 3600:
        return f'{value / 60:.0f} min'
    if value < 86400:
        return f'{value / 3600:.1f} h'
    return f'{value / 86400:.1f} d'


def _epoch(value: datetime | float | None) -> float | None:
    if value is None:
        return None
    return value.timestamp() if isinstance(value, datetime) else float(value)


def ago(value: datetime | float | None) -> str:
    """How long ago (or, for a time to come, in how long)."""
    epoch = _epoch(value)
    if epoch is None:
        return '–'
    delta = time.time() - epoch
    return f'{seconds(delta)} ago' if delta >= 0 else f'in {seconds(-delta)}'


def when(value: datetime | float | None) -> str:
    """2026-11-27 10:22:03 UTC."""
    epoch = _epoch(value)
    if epoch is None or epoch in (float('inf'), float('-inf')):
        return '–'
    return time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(epoch))


def short(value: Any, length: int = 80) -> str:
    text = '' if value is None else str(value)
    return text if len(text) <= length else text[: length - 1] + '…'


FILTERS: dict[str, Callable[..., str]] = {
    'num': num,
    'per_second': per_second,
    'percent': percent,
    'seconds': seconds,
    'ago': ago,
    'when': when,
    'short': short,
}
