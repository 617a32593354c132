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
