"""Jobs and payloads for the security tests (tests/test_security_*.py).

`Marker(path)` unpickles by calling `mark_pid(path)`: the pid of every process that deserializes
it is appended to `path`. `marker_module` writes a file when it is imported.
"""

from __future__ import annotations

import os
import pickle
import warnings
from typing import Any


def mark_pid(path: str, value: Any = None) -> Any:
    """Append this process's pid to `path`; `value` is what the unpickled object becomes."""
    with open(path, 'a') as file:
        file.write(f'{os.getpid()}\n')
    return {} if value is None else value


class Marker:
    def __init__(self, path: str, value: Any = None) -> None:
        self.path = path
        self.value = value

    def __reduce__(self) -> Any:
        return (mark_pid, (self.path, self.value))


def marker_pickle(path: str, value: Any = None) -> bytes:
    return pickle.dumps(Marker(path, value), protocol=pickle.HIGHEST_PROTOCOL)


def pids(path: str) -> list[int]:
    try:
        with open(path) as file:
            return [int(line) for line in file if line.strip()]
    except FileNotFoundError:
        return []


def noop(*args: Any, **kwargs: Any) -> str:
    return 'ok'


def fail() -> None:
    raise ValueError('boom')


def sleep(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def on_callback(job: Any, connection: Any, *args: Any) -> None:
    connection.rpush(f'security-callbacks:{job.id}', 'ran')


def read_back() -> list[str]:
    """Read back every pickled field a job can reach (its meta, its own and its dependency's results and
    meta, the dependency's exc_info) and save meta of its own: what each read gave, by kind."""
    from rqfast import get_current_job

    job = get_current_job()
    assert job is not None
    seen = []
    reads = {
        'meta': lambda: job.get_meta(),
        'own result': lambda: job.return_value(refresh=True),
        'dependency result': lambda: job.dependency.return_value(refresh=True),  # type: ignore[union-attr]
        'dependency meta': lambda: job.dependency.get_meta(),  # type: ignore[union-attr]
        'dependency exc_info': lambda: job.dependency.exc_info,  # type: ignore[union-attr]
        'dependency result field': lambda: job.dependency.result,  # type: ignore[union-attr]
    }
    for name, read in reads.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', DeprecationWarning)  # (job.result)
                value = read()
            seen.append(f'{name}: {type(value).__name__}')
        except Exception as exc:
            seen.append(f'{name}: {type(exc).__name__}')
    job.meta = {'saved': 'by the job', 'when': 1}
    job.save_meta()
    seen.append(f'saved meta: {job.get_meta()!r}')
    return seen
