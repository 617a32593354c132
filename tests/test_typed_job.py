"""`@job` keeps the decorated function's types: mypy checks `delay()` and direct calls against its parameters."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import redis

from rqfast import Queue
from rqfast.decorators import job
from rqfast.job import Job

mypy_api = pytest.importorskip('mypy.api')

ROOT = Path(__file__).resolve().parent.parent

TYPED_MODULE = """
    from redis import Redis

    from rqfast.decorators import job
    from rqfast.job import Job


    @job('default', connection=Redis())
    def add(a: int, b: int = 1) -> int:
        return a + b


    queued: Job = add.delay(1, b=2)
    also_queued: Job = add.enqueue(3)
    direct: int = add(1, 2)
    name: str = add.__name__
    {extra}
"""


EXTRA_LINE = textwrap.dedent(TYPED_MODULE).splitlines().index('{extra}') + 1


@pytest.fixture(scope='module')
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for the module's runs: rqfast is analysed once."""
    return tmp_path_factory.mktemp('mypy-cache')


def check(tmp_path: Path, cache: Path, extra: str) -> tuple[str, int]:
    """mypy's report and exit status on the typed module with `extra` appended."""
    module = tmp_path / 'typed_jobs.py'
    module.write_text(textwrap.dedent(TYPED_MODULE).format(extra=extra))
    config = tmp_path / 'mypy.ini'
    config.write_text('[mypy]\n')
    env_path = os.environ.get('MYPYPATH')
    os.environ['MYPYPATH'] = str(ROOT)  # this worktree's rqfast, whatever the install mode
    try:
        stdout, stderr, status = mypy_api.run(
            ['--strict', '--no-error-summary', '--cache-dir', str(cache), '--config-file', str(config), str(module)]
        )
    finally:
        if env_path is None:
            os.environ.pop('MYPYPATH', None)
        else:
            os.environ['MYPYPATH'] = env_path
    return stdout + stderr, status


def test_right_argument_types_pass(tmp_path: Path, cache: Path) -> None:
    report, status = check(tmp_path, cache, 'reveal_type(add.delay)')
    assert status == 0 and 'error' not in report, report
    assert 'Revealed type is "def (a: int, b: int =) -> rqfast.job.Job"' in report, report


@pytest.mark.parametrize(
    'wrong',
    [
        "add.delay('one')",
        "add.enqueue(1, b='two')",
        'add.delay(1, c=3)',
        "add('one')",
        'text: str = add(1)',
    ],
)
def test_a_wrong_argument_or_result_type_is_an_error(tmp_path: Path, cache: Path, wrong: str) -> None:
    report, status = check(tmp_path, cache, wrong)
    errors = [line for line in report.splitlines() if ': error:' in line]
    assert status == 1 and errors, report
    assert all(f'typed_jobs.py:{EXTRA_LINE}: error' in line for line in errors), report  # only the wrong line


def add(a: int, b: int) -> int:
    return a + b


def test_runtime_behaviour_is_unchanged(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    decorated = job(queue)(add)
    assert decorated is add  # the function itself, with delay and enqueue, as in RQ
    queued = decorated.delay(6, 7, job_id='six-and-seven')  # RQ's per-call options still work
    assert isinstance(queued, Job) and queued.id == 'six-and-seven' and queued.args == (6, 7)
    assert decorated.enqueue(2, 3).args == (2, 3) and decorated(2, 3) == 5
    assert queue.count == 2
