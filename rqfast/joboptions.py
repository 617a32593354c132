"""Retry and Callback: two of the options Job.create() takes (`from rqfast.job import ...` re-exports them).

Values that name no job; Dependency, which names jobs, is jobspec.py's, next to the job it checks for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import BuiltinFunctionType, FunctionType
from typing import Any

from .defaults import CALLBACK_TIMEOUT
from .imports import function_reference
from .timeouts import parse_timeout

__all__ = ['Callback', 'Retry']


class Retry:
    def __init__(self, max: int, interval: int | Iterable[int] = 0, enqueue_at_front: bool = False):
        if max < 1:
            raise ValueError('max: please enter a value greater than 0')
        intervals = [interval] if isinstance(interval, int) else list(interval)
        if any(i < 0 for i in intervals):
            raise ValueError('interval: negative numbers are not allowed')
        self.max = max
        self.intervals = intervals
        self.enqueue_at_front = enqueue_at_front

    def __repr__(self) -> str:
        interval = self.intervals[0] if len(self.intervals) == 1 else self.intervals
        return f'Retry(max={self.max}, interval={interval!r}, enqueue_at_front={self.enqueue_at_front!r})'

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
