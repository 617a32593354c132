"""The second oracle: rqfast beside RQ 3.0.0, in a virtualenv of its own.

    python -m tests.rq3 [pytest args...]     # the interop tests beside rq 3.0 (DEFAULT_TESTS)
    python -m tests.rq3 --probe [--out FILE] # re-observe RQ 3.0's layout (docs/rq-3.0-layout.md)

The virtualenv (RQFAST_RQ3_VENV, default .venv-rq3 at the repository root) is created on first use
with rq==3.0.0, rq-dashboard, the test tools and rqfast itself (editable, this checkout), and
reused while its recorded requirements match. The system's Python keeps rq 2.12 for the normal run.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get('RQFAST_RQ3_VENV', ROOT / '.venv-rq3'))
REQUIREMENTS = [
    'rq==3.0.0',
    'rq-dashboard==0.9.0',
    'redis[hiredis]>=5',
    'click>=8',
    'croniter>=1.4',
    'pytest>=8',
    'pytest-timeout',
    'fakeredis[lua]>=2.26',
    'six',
    'psutil',
    'django-rq==4.2.0',
    'prometheus_client',
    # rqfast's dashboard, reading what rq 3.0 writes (tests/rq3/test_rq3_dashboard.py)
    'starlette>=0.40',
    'uvicorn>=0.30',
    'jinja2>=3.1',
    'a2wsgi>=1.10',
    'httpx>=0.27',
]
# rq-exporter 3.1.0 (the newest) declares rq<3; installed without its requirements to check it reads
# rqfast beside rq 3.0 all the same (tests/test_ecosystem_readers.py).
NO_DEPS = ['rq-exporter==3.1.0']
STAMP = VENV / 'rqfast-rq3.json'
# tests/rq3/ (collected only beside rq 3.x), and the 2.12 interop tests that hold with rq 3.0 as the
# oracle too (rq-dashboard compared field by field with rq's own SimpleWorker; django-rq's classes and
# project on rqfast's workers).
DEFAULT_TESTS = [
    'tests/rq3',
    'tests/test_worker_dashboard.py',
    'tests/test_ecosystem_readers.py',
    'tests/test_worker_foreign_classes.py',
    'tests/test_django_rq.py',
]


def venv_python() -> Path:
    return VENV / 'bin' / 'python'


def ensure_venv() -> None:
    """Create or refresh the virtualenv when its recorded requirements (or checkout) differ."""
    wanted = {'requirements': REQUIREMENTS, 'no_deps': NO_DEPS, 'rqfast': str(ROOT)}
    digest = hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()
    if STAMP.exists() and json.loads(STAMP.read_text()).get('digest') == digest and venv_python().exists():
        return
    if not venv_python().exists():
        print(f'creating {VENV}', flush=True)
        subprocess.run([sys.executable, '-m', 'venv', str(VENV)], check=True)
    pip = [str(venv_python()), '-m', 'pip', 'install', '--disable-pip-version-check', '-q']
    subprocess.run([*pip, *REQUIREMENTS], check=True)
    subprocess.run([*pip, '--no-deps', *NO_DEPS, '-e', str(ROOT)], check=True)
    STAMP.write_text(json.dumps({'digest': digest, **wanted}, indent=1))


def main(argv: list[str]) -> int:
    ensure_venv()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if argv[:1] == ['--probe']:
        command = [str(venv_python()), '-m', 'tests.rq3.probe', *argv[1:]]
    else:
        given = any((ROOT / arg.split('::')[0]).exists() for arg in argv if not arg.startswith('-'))
        paths = [] if given else DEFAULT_TESTS
        command = [str(venv_python()), '-m', 'pytest', '-p', 'no:cacheprovider', *paths, *argv]
    return subprocess.run(command, cwd=ROOT, env=env).returncode


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
