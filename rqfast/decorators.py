"""The `@job` decorator: `f.delay(...)` enqueues a call of f, as in RQ."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast

from redis import Redis

from .defaults import DEFAULT_RESULT_TTL, rq2_compat
from .job import Job, Retry
from .options import DECORATOR, check_values, options_of
from .queue import Queue

# The decorator's options every delay() passes as they are; delay() itself decides these four (RQ's per-call ones)
_PER_DELAY = ('depends_on', 'at_front', 'debounce', 'throttle')
_DECORATED = [option.name for option in options_of(DECORATOR) if option.name not in _PER_DELAY]

P = ParamSpec('P')
R = TypeVar('R')
R_co = TypeVar('R_co', covariant=True)


class JobFunction(Protocol, Generic[P, R_co]):
    """What `@job` returns for type checkers: the function itself, and `delay`/`enqueue` taking its parameters.

    At run time it is the decorated function with two attributes, as in RQ. `delay` also takes RQ's
    per-call `job_id=`, `depends_on=`, `at_front=` (and rqfast's `debounce=`, `throttle=`); a type checker
    sees only the function's own parameters there (pass those options through `Queue.enqueue` instead to
    keep them checked).
    """

    __name__: str
    __qualname__: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def delay(self, *args: P.args, **kwargs: P.kwargs) -> Job: ...

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job: ...


class job:  # noqa: N801 - RQ's name
    queue_class = Queue

    def __init__(
        self,
        queue: Queue | str,
        connection: Redis | None = None,
        timeout: Any = None,
        result_ttl: int | None = None,
        ttl: int | None = None,
        queue_class: type[Queue] | None = None,
        depends_on: Any = None,
        at_front: bool = False,
        meta: dict[str, Any] | None = None,
        description: str | None = None,
        failure_ttl: int | None = None,
        retry: Retry | None = None,
        on_failure: Any = None,
        on_success: Any = None,
        on_stopped: Any = None,
        webhooks: Any = None,
        capture_output: bool = False,
        priority: int | None = None,
        debounce: Any = None,
        throttle: Any = None,
    ):
        given = locals()  # (its options by name: rqfast.options' table says which these are)
        self.queue, self.connection = queue, connection
        self.queue_class = queue_class or Queue
        self.options = {name: given[name] for name in _DECORATED}  # every delay()'s
        check_values(self.options)  # a bad option raises at the decorator, not at each delay()
        self.depends_on, self.at_front = depends_on, at_front
        self.debounce, self.throttle = debounce, throttle  # rqfast's own (rqfast.debounce): delay() may override

    def __call__(self, f: Callable[P, R]) -> JobFunction[P, R]:
        @wraps(f)
        def delay(*args: Any, **kwargs: Any) -> Job:
            queue = self.queue
            if isinstance(queue, str):
                queue = self.queue_class(name=queue, connection=self.connection)
            depends_on = kwargs.pop('depends_on', None) or self.depends_on
            job_id = kwargs.pop('job_id', None)
            debounce, throttle = kwargs.pop('debounce', None), kwargs.pop('throttle', None)
            if debounce is None and throttle is None:
                debounce, throttle = self.debounce, self.throttle
            options = dict(self.options)
            if rq2_compat():  # RQ 2.12: the decorator's result_ttl is 500 unless given; at_front=False never overrides
                options['result_ttl'] = DEFAULT_RESULT_TTL if options['result_ttl'] is None else options['result_ttl']
                at_front = kwargs.pop('at_front', False) or self.at_front
            else:  # RQ 3.0: no result_ttl leaves the worker's default_result_ttl; at_front= overrides the decorator's
                at_front = kwargs.pop('at_front', None)
                at_front = self.at_front if at_front is None else at_front
            return queue.enqueue_call(
                f,
                args=args,
                kwargs=kwargs,
                depends_on=depends_on,
                job_id=job_id,
                at_front=at_front,
                debounce=debounce,
                throttle=throttle,
                **options,
            )

        f.delay = delay  # type: ignore[attr-defined]
        f.enqueue = delay  # type: ignore[attr-defined]
        return cast(JobFunction[P, R], f)
