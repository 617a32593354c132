"""RQ's type aliases (rq.types), for annotations in code that enqueues jobs."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from redis import Redis

    from .job import Dependency, Job

# What a job's `func` may be: a dotted path, or the callable itself.
FunctionReferenceType = TypeVar('FunctionReferenceType', str, Callable[..., Any])

# What `depends_on=` takes.
JobDependencyType: TypeAlias = 'Dependency | Job | str | list[Dependency | Job | str]'

SuccessCallbackType = Callable[['Job', 'Redis', Any], Any]
FailureCallbackType = Callable[
    ['Job', 'Redis', type[BaseException] | None, BaseException | None, TracebackType | None], Any
]
