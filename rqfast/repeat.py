"""Repeat: run a job again after it succeeds, `times` more times, RQ's way."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from .dates import now
from .defaults import rq2_compat


class Repeat:
    def __init__(self, times: int, interval: int | Iterable[int] | None = 0):
        if times < 1:
            raise ValueError('times: please enter a value greater than 0')
        if isinstance(interval, int):
            intervals = [interval]
        elif isinstance(interval, Iterable):
            intervals = list(interval)
        else:
            raise TypeError('intervals must be an int or iterable of ints')
        if any(i < 0 for i in intervals):
            raise ValueError('intervals: negative numbers are not allowed')
        self.times = times
        self.intervals = intervals

    def __repr__(self) -> str:
        return f'Repeat(times={self.times}, intervals={self.intervals})'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Repeat) and (self.times, self.intervals) == (other.times, other.intervals)

    @classmethod
    def get_interval(cls, count: int, intervals: list[int]) -> int:
        return intervals[-1] if count >= len(intervals) else intervals[count]

    @classmethod
    def next_interval(cls, repeats_left: int, intervals: list[int] | None) -> tuple[int, list[int] | None]:
        """The interval before the next repeat, and the intervals the job keeps for the ones after.

        RQ 3.0 takes them in order, the last one for every repeat beyond them (the job keeps the rest);
        RQ 2.12 (rq2_compat()) indexes them by the repeats left after this one, so they run backwards.
        """
        if not intervals:
            return 0, intervals
        if rq2_compat():
            return cls.get_interval(repeats_left - 1, intervals), intervals
        return intervals[0], intervals[1:] if len(intervals) > 1 else intervals

    @classmethod
    def schedule(cls, job: Any, queue: Any, pipeline: Any = None) -> datetime | None:
        """RQ's: use up one repeat of `job` and put it back on `queue`, now or after its interval; when
        it will run (None: now).

        ValueError when the job has no repeats left. `job` is a Job and `queue` a Queue (a layer above).
        """
        if job.repeats_left is None or job.repeats_left <= 0:
            raise ValueError(f'Cannot schedule job {job.id}: no repeats left')
        interval, job.repeat_intervals = cls.next_interval(job.repeats_left, job.repeat_intervals)
        job.repeats_left -= 1
        if interval == 0:
            queue.enqueue_job(job, pipeline=pipeline)
            return None
        scheduled_time = now() + timedelta(seconds=interval)
        queue.schedule_job(job, scheduled_time, pipeline=pipeline)
        return scheduled_time
