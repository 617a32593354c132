"""Job functions the tests enqueue, importable by producers and workers alike (RQ's tests/fixtures.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any


def _current_job() -> Any:
    """The running job, whichever library runs it: rqfast first, RQ as the reference."""
    try:
        from rqfast import get_current_job
    except ImportError:
        pass
    else:
        job = get_current_job()
        if job is not None:
            return job
    from rq import get_current_job as rq_get_current_job

    return rq_get_current_job()


class CustomError(Exception):
    """Raised by `raise_custom_error`, so failures can be told from library errors."""


def say_hello(name: str = 'Stranger') -> str:
    return f'Hi there, {name}!'


def add(a: Any, b: Any) -> Any:
    return a + b


def noop() -> None:
    return None


def div_by_zero() -> float:
    return 1 / 0


def long_running(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def echo(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


async def async_add(a: Any, b: Any) -> Any:
    await asyncio.sleep(0)
    return a + b


def raise_custom_error(message: str = 'something went wrong') -> None:
    raise CustomError(message)


def return_unpicklable() -> Any:
    """A value neither pickle nor JSON can encode."""
    return threading.Lock()


def save_meta_from_inside(key: str = 'touched', value: Any = True) -> str:
    """Writes job.meta from inside the job, through get_current_job()."""
    job = _current_job()
    job.meta[key] = value
    job.save_meta()
    return job.id


def current_job_id() -> str | None:
    job = _current_job()
    return job.id if job is not None else None


class Number:
    """Enqueued as a bound method: data holds (instance, 'div')."""

    def __init__(self, value: int) -> None:
        self.value = value

    def div(self, y: int) -> float:
        return self.value / y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Number) and other.value == self.value

    def __hash__(self) -> int:
        return hash(('Number', self.value))

    def __repr__(self) -> str:
        return f'Number({self.value!r})'


class CallableAdder:
    """Enqueued as a callable instance: data holds (instance, '__call__')."""

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset

    def __call__(self, a: int, b: int = 0) -> int:
        return self.offset + a + b

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CallableAdder) and other.offset == self.offset

    def __hash__(self) -> int:
        return hash(('CallableAdder', self.offset))

    def __repr__(self) -> str:
        return f'CallableAdder({self.offset!r})'


callable_adder = CallableAdder(10)

CALLBACK_CALLS: list[tuple[str, str, Any]] = []


def success_callback(job: Any, connection: Any, result: Any) -> None:
    CALLBACK_CALLS.append(('success', job.id, result))


def failure_callback(job: Any, connection: Any, type: Any, value: Any, tb: Any) -> None:
    CALLBACK_CALLS.append(('failure', job.id, type))


def stopped_callback(job: Any, connection: Any) -> None:
    CALLBACK_CALLS.append(('stopped', job.id, None))


# Callbacks that note in Redis what they were given and the job's stored status at that moment (a
# forking worker runs them in its horse): the hash callback:<job id>.
def noting_success_callback(job: Any, connection: Any, result: Any) -> None:
    status = connection.hget(job.key, 'status')
    connection.hset(f'callback:{job.id}', mapping={'kind': 'success', 'result': repr(result), 'status': status})


def noting_failure_callback(job: Any, connection: Any, type: Any, value: Any, tb: Any) -> None:
    status = connection.hget(job.key, 'status')
    fields = {'kind': 'failure', 'type': type.__name__, 'value': repr(value), 'tb': tb.__class__.__name__}
    connection.hset(f'callback:{job.id}', mapping={**fields, 'status': status})


def raising_callback(job: Any, connection: Any, *args: Any) -> None:
    raise RuntimeError('callback broke')


async def coroutine_callback(job: Any, connection: Any, *args: Any) -> None:
    return None


def print_lines(count: int = 2, text: str = 'line', to_stderr: bool = False) -> int:
    """Prints `count` numbered lines (to stderr too when asked); for capture_output."""
    import sys

    for i in range(count):
        print(f'{text} {i}')
        if to_stderr:
            print(f'{text} {i} on stderr', file=sys.stderr)
    return count


def print_then_fail(text: str = 'about to fail') -> None:
    print(text)
    raise CustomError(text)


def print_slowly(name: str, count: int) -> int:
    """Prints `count` lines with short sleeps, so concurrent jobs' prints interleave."""
    for i in range(count):
        print(name, i)
        time.sleep(0.002)
    return count


async def async_print_slowly(name: str, count: int) -> int:
    """print_slowly as a coroutine: concurrent tasks on one event loop interleave their prints."""
    for i in range(count):
        print(name, i)
        await asyncio.sleep(0.002)
    return count


def report_progress(*values: Any) -> int:
    """Calls set_progress with each value in turn, from inside the job; returns how many."""
    job = _current_job()
    for value in values:
        job.set_progress(value)
    return len(values)


RUNS_KEY = 'test:runs'  # record_run's list in Redis


def record_run(*args: Any) -> list[Any]:
    """Appends [args, the time it ran] to RUNS_KEY in the job's Redis: which runs happened, and when."""
    import json

    job = _current_job()
    job.connection.rpush(RUNS_KEY, json.dumps([list(args), time.time()]))
    return list(args)
