"""Queue.create_job and Queue.parse_args: an enqueue call's arguments into a Job, before anything touches Redis.

Queue (queue.py) stores what these make; this base class only builds and checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .dependents import DependentsQueue
from .enqueueing import _OPTION_NAMES, EnqueueArgs
from .job import Job, JobStatus, Retry
from .joboptions import check_priority
from .rate_limit import RateLimit, rate_limit_of
from .repeat import Repeat
from .timeouts import parse_timeout

__all__ = ['CreatingQueue']


# EnqueueArgs between func and args (job_timeout ... unique) as parse_args leaves them when none is given
_NO_OPTIONS = (None, None, None, None, None, None, None, False, None, None, None, None, None, None, None, False)


class CreatingQueue(DependentsQueue):
    """RQ's Queue.create_job and Queue.parse_args (Queue adds the enqueue calls that store the job)."""

    def create_job(
        self,
        func: Any,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        meta: dict[str, Any] | None = None,
        status: JobStatus = JobStatus.QUEUED,
        retry: Retry | None = None,
        repeat: Repeat | None = None,
        *,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        webhooks: Sequence[Any] | None = None,
        group_id: str | None = None,
        rate_limit: RateLimit | None = None,
        capture_output: bool = False,
        priority: int | None = None,
    ) -> Job:
        if not isinstance(capture_output, bool):
            raise TypeError(f'capture_output must be True or False, not {capture_output!r}')
        priority = check_priority(priority)
        timeout = parse_timeout(timeout)
        if timeout is None:
            timeout = self._default_timeout
        elif timeout == 0:
            raise ValueError('0 timeout is not allowed. Use -1 for infinite timeout')
        ttl = parse_timeout(ttl)
        if ttl is not None and ttl <= 0:
            raise ValueError('Job ttl must be greater than 0')
        job = self.job_class.create(
            func,
            args=args,
            kwargs=kwargs,
            connection=self.connection,
            result_ttl=result_ttl,
            ttl=ttl,
            failure_ttl=failure_ttl,
            status=status,
            description=description,
            depends_on=depends_on,
            timeout=timeout,
            id=job_id,
            origin=self.name,
            meta=meta,
            serializer=self.serializer,
            on_success=on_success,
            on_failure=on_failure,
            on_stopped=on_stopped,
            webhooks=webhooks,
            group_id=group_id,
        )
        if retry:
            job.retries_left, job.retry_intervals = retry.max, retry.intervals
            job.enqueue_at_front_on_retry = retry.enqueue_at_front
        if repeat:
            job.repeats_left, job.repeat_intervals = repeat.times, repeat.intervals
        if rate_limit is not None:
            rate_limit.apply_to(job)
        job.capture_output, job.priority = capture_output, priority
        job.events = self.events or job.events  # rqfast's own: Queue(events=...) (rqfast.events)
        return job

    @classmethod
    def parse_args(cls, f: Any, *args: Any, **kwargs: Any) -> EnqueueArgs:
        if not isinstance(f, str) and getattr(f, '__module__', None) == '__main__':
            raise ValueError('Functions from the __main__ module cannot be processed by workers')
        if not kwargs:  # no option and no keyword argument: every option at its default
            return EnqueueArgs(f, *_NO_OPTIONS, args, kwargs, None)
        options = {name: kwargs.pop(name, None) for name in _OPTION_NAMES}
        webhooks = kwargs.pop('webhooks', None)
        # RQ 3.0's option only when given a RateLimit; any other value stays the function's kwarg (RQ 2.12)
        rate_limit = kwargs.pop('rate_limit') if rate_limit_of(kwargs.get('rate_limit')) else None
        capture_output = kwargs.pop('capture_output', False)  # rqfast's own option (docs/features.md)
        priority = check_priority(kwargs.pop('priority', None))
        debounce, throttle = kwargs.pop('debounce', None), kwargs.pop('throttle', None)  # rqfast's own too
        if 'args' in kwargs or 'kwargs' in kwargs:
            if args:
                raise ValueError('Extra positional arguments cannot be used when using explicit args and kwargs')
            args, kwargs = kwargs.pop('args', None), kwargs.pop('kwargs', None)
        return EnqueueArgs(
            f,
            options['job_timeout'],
            options['description'],
            options['result_ttl'],
            options['ttl'],
            options['failure_ttl'],
            options['depends_on'],
            options['job_id'],
            bool(options['at_front']),
            options['meta'],
            options['retry'],
            options['repeat'],
            options['on_success'],
            options['on_failure'],
            options['on_stopped'],
            options['pipeline'],
            bool(options['unique']),
            args,
            kwargs,
            webhooks,
            rate_limit,
            capture_output,
            priority,
            debounce,
            throttle,
        )
