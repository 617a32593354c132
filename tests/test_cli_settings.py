"""A bad setting in the environment (read when rqfast is imported) is one line naming what to change, for
every way of running the `rqfast` command and every command, `--help` included; a program that imports
rqfast gets a SettingError (a ValueError) it can catch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rqfast.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / 'rqfast'

# (the environment, what the one line must name)
BAD = {
    'sharding': ({'RQFAST_SHARDING': 'slot'}, 'RQFAST_SHARDING'),
    'compat': ({'RQFAST_COMPAT': '2.11'}, 'RQFAST_COMPAT'),
    'braces': ({'RQFAST_SHARDING': 'queue', 'RQ_KEY_PREFIX': '{rq}'}, 'set RQ_KEY_PREFIX=rq'),
    'prefix': ({'RQ_KEY_PREFIX': 'app%s'}, 'RQ_KEY_PREFIX'),
}
RUNS = {
    'script --help': [str(SCRIPT), '--help'],
    '-m rqfast worker --help': [sys.executable, '-m', 'rqfast', 'worker', '--help'],
    '-m rqfast.cli info': [sys.executable, '-m', 'rqfast.cli', 'info', '-u', 'redis://127.0.0.1:1'],
}


def run(argv: list[str], extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ('RQFAST_SHARDING', 'RQFAST_COMPAT', 'RQ_KEY_PREFIX')}
    env = {**clean, **extra, 'PYTHONPATH': str(ROOT)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize('how', list(RUNS))
@pytest.mark.parametrize('bad', list(BAD))
def test_a_bad_setting_is_one_line_for_every_command(bad: str, how: str) -> None:
    extra, names = BAD[bad]
    out = run(RUNS[how], extra)
    assert out.returncode == 1, out
    assert out.stdout == '', out.stdout
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith('Error: ') and names in lines[0], out.stderr


def test_a_program_importing_rqfast_gets_a_setting_error() -> None:
    code = 'import sys\ntry:\n    import rqfast\nexcept ValueError as exc:\n    sys.exit(type(exc).__name__)'
    out = run([sys.executable, '-c', code], BAD['compat'][0])
    assert out.stderr.strip() == 'SettingError'
    assert run([sys.executable, '-c', 'import rqfast'], {}).returncode == 0


BAD_FLAGS = [
    ('worker', '--worker-ttl', '0'),
    ('worker', '--job-monitoring-interval', '0'),
    ('worker', '--maintenance-interval', '-5'),
    ('worker', '--max-jobs', '-1'),
    ('worker', '--max-idle-time', '-1'),
    ('worker', '--concurrency', '0'),
    ('worker', '--metrics-port', '99999'),
    ('info', '--interval', '-1'),
]


@pytest.mark.parametrize(('command', 'flag', 'value'), BAD_FLAGS, ids=lambda v: str(v))
def test_a_bad_flag_value_is_refused_before_anything_runs(command: str, flag: str, value: str) -> None:
    result = CliRunner().invoke(main, [command, flag, value, '-u', 'redis://127.0.0.1:1'])
    assert result.exit_code == 2, result.output
    [error] = [line for line in result.output.splitlines() if line.startswith('Error:')]
    assert flag in error and 'Traceback' not in result.output, result.output
