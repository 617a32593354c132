"""What the ecosystem project tests share: running a scenario in a fresh interpreter, the worker classes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

WORKER_CLASSES = ['SimpleWorker', 'Worker', 'SpawnWorker']
CONCURRENCIES = [1, 4]


def run_scenario(
    source: str, *, as_rq: bool, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 240
) -> Any:
    """Run `source` (its last stdout line is JSON) in a fresh interpreter, with the switch on or off."""
    environment = {k: v for k, v in os.environ.items() if k not in ('RQFAST_AS_RQ', 'RQFAST_COMPAT')}
    environment['PYTHONPATH'] = os.pathsep.join([str(HERE), str(ROOT)])
    if as_rq:
        environment['RQFAST_AS_RQ'] = '1'
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(source)],
        cwd=cwd or HERE,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f'scenario failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}'
    lines = done.stdout.strip().splitlines()
    assert lines, f'scenario printed nothing:\n{done.stderr[-3000:]}'
    return json.loads(lines[-1])
