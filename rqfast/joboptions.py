"""Retry and Callback: two of the options Job.create() takes (`from rqfast.job import ...` re-exports them).

Values that name no job; Dependency, which names jobs, is jobspec.py's, next to the job it checks for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import BuiltinFunctionType, FunctionType
from typing import Any

from .defaults import CALLBACK_TIMEOUT, RETRY_EXPONENTIAL_CAP
from .imports import function_reference
from .timeouts import parse_timeout

__all__ = ['Callback', 'PRIORITIES', 'Retry', 'check_priority']

PRIORITIES = range(10)  # a job's priority lanes (rqfast's own option): 0 runs first, 9 last


def check_priority(priority: Any) -> int | None:
    """`priority` as given when it is None or an int from 0 (runs first) to 9; ValueError otherwise."""
    if priority is None:
        return None
    if isinstance(priority, bool) or not isinstance(priority, int) or priority not in PRIORITIES:
        raise ValueError(f'priority must be an int from 0 (runs first) to 9, or None; not {priority!r}')
    return int(priority)


def _is_number(value: object) -> bool:
    """An int or a float, not a bool (a user's `max=True` is a mistake, not 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


class Retry:
    def __init__(self, max: int, interval: int | Iterable[int] = 0, enqueue_at_front: bool = False):
        if max < 1:
            raise ValueError('max: please enter a value greater than 0')
        intervals = [interval] if isinstance(interval, int) else list(interval)
        if any(i < 0 for i in intervals):
            raise ValueError('interval: negative numbers are not allowed')
        self.max = max
        self._intervals = intervals
        self.jitter = 0.0
        self.enqueue_at_front = enqueue_at_front

    @property
    def intervals(self) -> list[int]:
        """The delays a job enqueued now stores in `retry_intervals`: with jitter, drawn afresh per job."""
        if not self.jitter:
            return self._intervals
        import random

        return [round(random.uniform(delay * (1 - self.jitter), delay)) for delay in self._intervals]

    @intervals.setter
    def intervals(self, value: list[int]) -> None:
        self._intervals = value

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with `intervals` as an attribute, as before the property: older readers load it as it was."""
        state = dict(self.__dict__)
        state['intervals'] = state.pop('_intervals')
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state['_intervals'] = state.pop('intervals', state.get('_intervals', []))
        state.setdefault('jitter', 0.0)
        self.__dict__.update(state)

    @classmethod
    def exponential(
        cls,
        max: int,
        base: float = 1,
        cap: float = RETRY_EXPONENTIAL_CAP,
        jitter: float | bool = 0.0,
        enqueue_at_front: bool = False,
    ) -> Retry:
        """`max` retries after base, 2*base, 4*base ... seconds (never more than `cap`), as a plain interval list.

        jitter: a fraction in [0, 1] (True = 1): each delay is drawn at enqueue from [delay * (1 - jitter),
        delay], so the job's stored `retry_intervals` stay a list of ints that RQ's workers follow too.
        """
        if not _is_number(max) or not isinstance(max, int) or max < 1:
            raise ValueError(f'max: an int greater than 0 is needed, got {max!r}')
        if not _is_number(base) or not base > 0:
            raise ValueError(f'base: a number of seconds greater than 0 is needed, got {base!r}')
        if not _is_number(cap) or not cap >= base:
            raise ValueError(f'cap: a number of seconds no smaller than base ({base!r}) is needed, got {cap!r}')
        fraction = float(jitter) if isinstance(jitter, bool) else jitter
        if not _is_number(fraction) or not 0 <= fraction <= 1:
            raise ValueError(f'jitter: a fraction between 0 and 1 (or True, False) is needed, got {jitter!r}')
        delays: list[float] = []
        delay = float(base)
        for _ in range(max):
            delays.append(min(delay, cap))
            delay = min(delay * 2, cap)  # capped as it doubles: no overflow however large max is
        retry = cls(max, [round(d) for d in delays], enqueue_at_front=enqueue_at_front)
        retry.jitter = float(fraction)
        return retry

    def __repr__(self) -> str:
        interval = self._intervals[0] if len(self._intervals) == 1 else self._intervals
        jitter = f', jitter={self.jitter!r}' if self.jitter else ''
        return f'Retry(max={self.max}, interval={interval!r}, enqueue_at_front={self.enqueue_at_front!r}{jitter})'

    @classmethod
    def get_interval(cls, count: int, intervals: int | list[int] | None) -> int:
        if isinstance(intervals, int):
            return intervals
        if not intervals:
            return 0
        return intervals[min(len(intervals) - 1, count)]


class Callback:
    def __init__(self, func: str | Callable[..., Any], timeout: Any | None = None):
        if not isinstance(func, str | FunctionType | BuiltinFunctionType):  # inspect.isfunction, isbuiltin
            raise ValueError('Callback `func` must be a string or function')
        self.func = func
        self.timeout = parse_timeout(timeout) if timeout else CALLBACK_TIMEOUT

    @property
    def name(self) -> str:
        return self.func if isinstance(self.func, str) else function_reference(self.func)[1]
