"""The deployment examples of docs/operations.md (examples/deploy/): the systemd unit, the Dockerfile,
docker-compose.yml and the Kubernetes manifest.

No Docker engine or cluster here: the files are checked for what the operations guide promises
(a warm shutdown given enough time, the liveness probe, `rqfast worker` as the command), YAML is
parsed when PyYAML is installed (the docs extra brings it) and otherwise read line by line, and
`systemd-analyze verify` checks the unit where systemd is installed. The commands the files run
are run here: `rqfast worker-alive` against a live worker is tests/test_cli_alive.py.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rqfast.cli import main
from rqfast.defaults import DEFAULT_QUEUE_TIMEOUT

DEPLOY = Path(__file__).resolve().parent.parent / 'examples' / 'deploy'
UNIT = DEPLOY / 'rqfast-worker@.service'
PROBE = ['rqfast', 'worker-alive', '--max-age', '60']

try:
    import yaml
except ImportError:  # not in the test extra
    yaml = None


def unit_sections(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit as {section: {key: [values]}} (a key may repeat); comments and blanks skipped."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(('#', ';')):
            continue
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None and '=' in line, f'{UNIT.name}:{number}: not a key=value line in a section'
        key, value = line.split('=', 1)
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def seconds(value: str) -> float:
    """A systemd time span ('210', '210s', '3min 30s') in seconds."""
    units = {'': 1, 's': 1, 'sec': 1, 'min': 60, 'm': 60, 'h': 3600}
    return sum(float(n) * units[u] for n, u in re.findall(r'(\d+(?:\.\d+)?)\s*([a-z]*)', value))


def test_the_systemd_unit_stops_the_worker_warmly_and_restarts_it() -> None:
    service = unit_sections(UNIT.read_text())['Service']
    [exec_start] = service['ExecStart']
    argv = shlex.split(exec_start)
    assert Path(argv[0]).name == 'rqfast' and argv[1] == 'worker', exec_start
    assert service['KillSignal'] == ['SIGTERM']  # the worker's warm shutdown
    assert service['KillMode'] == ['mixed']  # SIGTERM to the worker only: a horse would die of it
    [timeout] = service['TimeoutStopSec']
    assert seconds(timeout) > DEFAULT_QUEUE_TIMEOUT  # the longest job, with the default job timeout
    assert service['Restart'] in (['always'], ['on-failure'])
    assert 'WantedBy' in unit_sections(UNIT.read_text())['Install']


def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    analyze = shutil.which('systemd-analyze')
    if analyze is None:
        pytest.skip('systemd-analyze is not installed: only the textual checks of the unit ran')
    # verify wants ExecStart's binary to exist: point it at this environment's rqfast script
    rqfast = Path(sys.executable).parent / 'rqfast'
    text = UNIT.read_text().replace('/srv/app/venv/bin/rqfast', str(rqfast)).replace('/srv/app', str(tmp_path))
    assert str(rqfast) in text
    unit = tmp_path / UNIT.name
    unit.write_text(text)
    result = subprocess.run([analyze, 'verify', str(unit)], capture_output=True, text=True, timeout=60)
    # an unknown key or a bad value is only a warning, exit status 0: any output is a finding
    assert (result.returncode, result.stdout + result.stderr) == (0, ''), result.stdout + result.stderr


def dockerfile_instructions(text: str) -> list[str]:
    """One string per instruction: comments and blanks dropped, continued lines joined."""
    instructions, pending = [], ''
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.endswith('\\'):
            pending += line[:-1].strip() + ' '
            continue
        instructions.append(pending + line)
        pending = ''
    assert not pending, 'the last instruction ends with a continuation'
    return instructions


def test_the_dockerfile_runs_rqfast_worker_with_a_heartbeat_healthcheck() -> None:
    instructions = dockerfile_instructions((DEPLOY / 'Dockerfile').read_text())
    assert instructions[0].startswith('FROM python:3.'), instructions[0]
    [cmd] = [line for line in instructions if line.startswith('CMD ')]
    assert cmd.startswith('CMD ["rqfast", "worker"'), cmd  # exec form: the worker is PID 1 and gets SIGTERM
    assert 'STOPSIGNAL SIGTERM' in instructions
    [healthcheck] = [line for line in instructions if line.startswith('HEALTHCHECK ')]
    assert healthcheck.endswith(' CMD ["rqfast", "worker-alive", "--max-age", "60"]'), healthcheck
    assert any(line.startswith('RUN python -m pip install /src/rqfast') for line in instructions)
    ignored = (DEPLOY / 'Dockerfile.dockerignore').read_text().split()
    assert '.git' in ignored and '.venv*' in ignored


def load_yaml(path: Path) -> list[Any] | None:
    """Every document of a YAML file, or None without PyYAML."""
    if yaml is None:
        return None
    return list(yaml.safe_load_all(path.read_text()))


def test_docker_compose_has_redis_and_workers_with_a_grace_period() -> None:
    path = DEPLOY / 'docker-compose.yml'
    text = path.read_text()
    assert '\t' not in text
    for needed in ('services:', '  redis:', '  worker:', 'stop_grace_period: 210s', 'init: true'):
        assert needed in text.splitlines() or f'    {needed}' in text.splitlines(), needed
    documents = load_yaml(path)
    if documents is None:
        return
    [compose] = documents
    worker, redis_service = compose['services']['worker'], compose['services']['redis']
    assert redis_service['image'].startswith('redis:')
    assert worker['command'][:2] == ['rqfast', 'worker']
    assert worker['build']['dockerfile'] == 'examples/deploy/Dockerfile'
    assert (DEPLOY / worker['build']['context'] / worker['build']['dockerfile']).exists()
    assert worker['environment']['REDIS_URL'] == 'redis://redis:6379/0'
    assert worker['stop_signal'] == 'SIGTERM' and worker['init'] is True
    assert int(worker['stop_grace_period'].rstrip('s')) > DEFAULT_QUEUE_TIMEOUT
    assert worker['healthcheck']['test'] == ['CMD', *PROBE]
    assert worker['depends_on']['redis']['condition'] == 'service_healthy'


def test_the_kubernetes_deployment_has_a_heartbeat_liveness_probe_and_a_grace_period() -> None:
    path = DEPLOY / 'kubernetes.yaml'
    text = path.read_text()
    assert '\t' not in text
    assert re.search(r'^kind: Deployment$', text, flags=re.MULTILINE)
    [grace] = re.findall(r'^\s+terminationGracePeriodSeconds: (\d+)$', text, flags=re.MULTILINE)
    assert int(grace) > DEFAULT_QUEUE_TIMEOUT
    assert 'command: ["rqfast", "worker-alive", "--max-age", "60"]' in text
    documents = load_yaml(path)
    if documents is None:
        return
    [deployment] = documents
    assert (deployment['apiVersion'], deployment['kind']) == ('apps/v1', 'Deployment')
    spec = deployment['spec']
    assert spec['selector']['matchLabels'] == spec['template']['metadata']['labels']
    pod = spec['template']['spec']
    assert pod['terminationGracePeriodSeconds'] > DEFAULT_QUEUE_TIMEOUT
    [container] = pod['containers']
    assert container['command'][:2] == ['rqfast', 'worker']
    assert container['livenessProbe']['exec']['command'] == PROBE
    assert container['startupProbe']['exec']['command'] == PROBE
    assert container['env'][0]['name'] == 'REDIS_URL'


def test_the_commands_the_examples_run_exist() -> None:
    """`rqfast worker` and `rqfast worker-alive` with the options the files give them."""
    assert {'worker', 'worker-alive', 'worker-pool'} <= set(main.commands)
    alive_options = {opt for param in main.commands['worker-alive'].params for opt in param.opts}
    assert '--max-age' in alive_options
    worker_options = {opt for param in main.commands['worker'].params for opt in param.opts}
    assert '--with-scheduler' in worker_options
