"""Runs RQ's ecosystem (django-rq's, rq-dashboard's and rq-scheduler's own test suites, and rqfast's tests of
Sentry, OpenTelemetry and django-rq projects) against rqfast, and compares the outcome with expectations.

    python -m tests.ecosystem                          # every suite, every mode
    python -m tests.ecosystem --ci                     # CI's subset: all but the rq baselines (pinned: they
                                                       # change only with the suites' versions)
    python -m tests.ecosystem django-rq                # one suite, its modes (rq, as-rq, worker-class)
    python -m tests.ecosystem django-rq --mode as-rq   # one mode
    python -m tests.ecosystem project -- -k sentry     # rqfast's own tests, pytest arguments after --
    python -m tests.ecosystem --update                 # run, then rewrite expectations.txt from the outcome

Each suite has a virtualenv of its own (RQFAST_ECOSYSTEM_VENVS, default .venv-ecosystem/<suite>) with its
pinned requirements from the package index and rqfast (editable, this checkout), created on first use and
reused while its requirements match. A suite's tests come from its sdist (pip download) or, where the
sdist has none, its GitHub archive at a pinned commit, downloaded once into RQFAST_ECOSYSTEM_CACHE
(default ~/.cache/rqfast/ecosystem; without network to github.com put the archive there by hand: the error
says which). The suites run against a private redis-server (injected/sitecustomize.py sends their
localhost:6379 there), one pytest process per suite and mode.

expectations.txt lists every test that does not pass, per suite and mode, with its reason; the run fails
when the outcome differs either way. tests/ecosystem/test_expectations.py holds the file to the judge:
with the switch on, no test that passes on rq may be listed (worker-class: only those that assert rq's
own default classes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

from .expectations import Outcome, compare, format_expectations, parse_expectations
from .suites import SUITES, GitHubArchive, Sdist, Suite

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INJECTED = HERE / 'injected'
EXPECTATIONS = HERE / 'expectations.txt'
VENVS = Path(os.environ.get('RQFAST_ECOSYSTEM_VENVS', ROOT / '.venv-ecosystem'))
CACHE = Path(os.environ.get('RQFAST_ECOSYSTEM_CACHE', Path.home() / '.cache' / 'rqfast' / 'ecosystem'))
PER_TEST_TIMEOUT = 120  # seconds (pytest-timeout)
RUN_LIMIT = 20 * 60  # seconds for one suite in one mode
# Environment a run must not inherit: the switch, rqfast's settings, another run's redirect.
SCRUBBED = ('RQFAST_AS_RQ', 'RQFAST_COMPAT', 'RQ_KEY_PREFIX', 'RQFAST_SHARDING', 'DJANGO_SETTINGS_MODULE')


def log(message: str = '') -> None:
    print(message, flush=True)


# --- virtualenvs


def venv_python(suite: Suite) -> Path:
    return VENVS / suite.name / 'bin' / 'python'


def ensure_venv(suite: Suite) -> Path:
    """The suite's virtualenv, created or refreshed when its recorded requirements (or checkout) differ."""
    folder = VENVS / suite.name
    stamp = folder / 'rqfast-ecosystem.json'
    wanted = {'requirements': suite.requirements, 'rqfast': str(ROOT)}
    digest = hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()
    python = venv_python(suite)
    if stamp.exists() and json.loads(stamp.read_text()).get('digest') == digest and python.exists():
        return python
    if not python.exists():
        log(f'creating {folder}')
        subprocess.run([sys.executable, '-m', 'venv', str(folder)], check=True)
    pip = [str(python), '-m', 'pip', 'install', '--disable-pip-version-check', '-q']
    for command in ([*pip, *suite.requirements], [*pip, '--no-deps', '-e', str(ROOT)]):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f'{" ".join(command)} failed:\n{done.stdout}{done.stderr}')
    stamp.write_text(json.dumps({'digest': digest, **wanted}, indent=1))
    return python


# --- sources


def source_archive(suite: Suite) -> Path:
    """The suite's source archive in the cache, downloaded on first use."""
    source = suite.source
    assert source is not None
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / source.filename
    if isinstance(source, Sdist):
        if not path.exists():
            subprocess.run(
                [sys.executable, '-m', 'pip', 'download', '--disable-pip-version-check', '-q', '--no-deps']
                + ['--no-binary', ':all:', '-d', str(CACHE), f'{source.name}=={source.version}'],
                check=True,
            )
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != source.sha256:
            raise SystemExit(f'{path}: sha256 {digest}, expected {source.sha256} (delete it to download again)')
        return path
    if not path.exists():
        _download_archive(source, path)
    return path


class ArchiveUnavailable(SystemExit):
    """A suite's GitHub archive is neither cached nor downloadable (a machine without network to github.com)."""


def _download_archive(source: GitHubArchive, path: Path) -> None:
    log(f'downloading {source.url}')
    try:
        with urllib.request.urlopen(source.url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        raise ArchiveUnavailable(
            f'cannot download {source.repo}@{source.commit[:12]} ({exc}). Put its GitHub archive at {path}:\n'
            f'  curl -L -o {path} {source.url}\n'
            f'or, from a clone: git -C <clone> archive --prefix={source.repo.split("/")[1]}-{source.commit}/ '
            f'-o {path} {source.commit}'
        ) from None
    tmp = path.with_suffix('.part')
    tmp.write_bytes(data)
    tmp.rename(path)


def extract(suite: Suite, folder: Path) -> None:
    """The suite's `copy` folders from its archive into `folder`, then its own files."""
    if suite.source is not None:
        archive = source_archive(suite)
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            top = members[0].name.split('/')[0]
            wanted = [m for m in members if any(m.name.startswith(f'{top}/{c}/') for c in suite.copy)]
            for member in wanted:
                member.name = member.name[len(top) + 1 :]
            tar.extractall(folder, members=wanted, filter='data')
        for name in suite.copy:
            if not (folder / name).exists():
                raise SystemExit(f'{archive} has no {name}/ at its top level')
    for name, text in suite.files.items():
        (folder / name).write_text(text)


# --- running


def redis_server(workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    from tests.redis_servers import binary, free_port

    port = free_port()
    proc = subprocess.Popen(
        [binary(), '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
        + ['--dir', str(workdir), '--logfile', str(workdir / 'redis.log')],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    import redis

    deadline = time.monotonic() + 10
    while True:
        try:
            redis.Redis(port=port).ping()
            return proc, port
        except redis.ConnectionError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                text = (workdir / 'redis.log').read_text()[-2000:]
                raise RuntimeError(f'redis-server did not start: {text}') from exc
            time.sleep(0.05)


def run_mode(suite: Suite, mode: str, python: Path, folder: Path, port: int, extra: list[str]) -> dict[str, Outcome]:
    """One pytest run of the suite in `mode`: each test's outcome."""
    import redis

    redis.Redis(port=port).flushall()  # the private server: each mode starts from an empty one
    report = folder / f'report-{mode}.jsonl'
    report.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith('RQFAST_ECOSYSTEM')}
    pythonpath = [str(INJECTED), str(folder)] + ([str(ROOT)] if suite.source is None else [])
    env.update(
        PYTHONPATH=os.pathsep.join(pythonpath),
        RQFAST_ECOSYSTEM_REDIS_PORT=str(port),
        RQFAST_ECOSYSTEM_REPORT=str(report),
        RQFAST_ECOSYSTEM='1',
    )
    env.pop('PYTHONDONTWRITEBYTECODE', None)  # every worker subprocess would compile rqfast and Django again
    if mode == 'as-rq':
        env['RQFAST_AS_RQ'] = '1'
    env.update(suite.mode_env.get(mode, {}))
    command = [str(python), '-m', 'pytest', '-p', 'no:cacheprovider', '-p', 'ecosystem_report', '-q']
    command += ['--continue-on-collection-errors']  # a module that cannot be imported is its own outcome
    paths = [] if any(not arg.startswith('-') for arg in extra) else suite.pytest_args  # tests named after --
    command += ['--timeout', str(PER_TEST_TIMEOUT), '--timeout-method', 'thread', *paths, *extra]
    cwd = ROOT if suite.source is None else folder
    started = time.monotonic()
    log(f'--- {suite.name} [{mode}]: {" ".join(command[1:])}')
    try:
        done = subprocess.run(command, cwd=cwd, env=env, timeout=RUN_LIMIT, capture_output=True, text=True)
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        if done.returncode not in (0, 1):  # (1: some tests failed) interrupted, an internal or usage error
            raise SystemExit(f'{suite.name} [{mode}]: pytest exited {done.returncode}:\n{done.stdout[-3000:]}')
    except subprocess.TimeoutExpired:
        tail = [f'killed after {RUN_LIMIT} s']
    serving, outcomes = read_report(report)
    wanted = 'rqfast' if mode == 'as-rq' else 'rq'
    if suite.source is not None and serving != wanted:
        raise SystemExit(f'{suite.name} [{mode}]: `import rq` gave {serving or "nothing"} in the run, not {wanted}')
    counts = {kind: sum(o.kind == kind for o in outcomes.values()) for kind in ('passed', 'failed', 'skipped', 'error')}
    log(f'    {counts} in {time.monotonic() - started:.0f} s; pytest said: {" / ".join(tail)}')
    return outcomes


def read_report(path: Path) -> tuple[str, dict[str, Outcome]]:
    """Who served `import rq` in the run, and each test's outcome."""
    serving, outcomes = '', {}
    if path.exists():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if 'serving' in entry:
                serving = entry['serving']
            else:
                outcomes[entry['nodeid']] = Outcome(entry['outcome'], entry['message'])
    return serving, outcomes


def run_suite(suite: Suite, modes: list[str], extra: list[str]) -> dict[str, dict[str, Outcome]]:
    python = ensure_venv(suite)
    with tempfile.TemporaryDirectory(prefix=f'rqfast-eco-{suite.name}-') as tmp:
        folder = Path(tmp)
        extract(suite, folder)
        proc, port = redis_server(folder)
        try:
            return {mode: run_mode(suite, mode, python, folder, port, extra) for mode in modes}
        finally:
            proc.kill()
            proc.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m tests.ecosystem', description=__doc__.split('\n\n')[0])
    parser.add_argument('suites', nargs='*', choices=[[], *SUITES], help='default: all')
    parser.add_argument('--mode', action='append', help="a suite's mode (repeatable); default: all its modes")
    parser.add_argument('--update', action='store_true', help='rewrite expectations.txt from this run')
    parser.add_argument('--ci', action='store_true', help="skip the `rq` baseline modes (CI's subset)")
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index('--') + 1 :] if '--' in argv else []
    args = parser.parse_args(argv[: argv.index('--')] if '--' in argv else argv)
    names = args.suites or list(SUITES)
    expected = parse_expectations(EXPECTATIONS.read_text()) if EXPECTATIONS.exists() else {}
    seen: dict[tuple[str, str], dict[str, Outcome]] = {}
    started = time.monotonic()
    unavailable: list[str] = []
    for name in names:
        suite = SUITES[name]
        modes = [m for m in suite.modes if (not args.mode or m in args.mode) and not (args.ci and m == 'rq')]
        try:
            ran = run_suite(suite, modes, extra)
        except ArchiveUnavailable as exc:
            # CI's machines reach the package index only: --ci runs the suites it can get and says loudly
            # which it could not (RQFAST_ECOSYSTEM_REQUIRE_ALL=1 makes that a failure, as outside --ci).
            if not args.ci or os.environ.get('RQFAST_ECOSYSTEM_REQUIRE_ALL'):
                raise
            log(f'\n!!! {name}: NOT RUN, its tests are not on this machine:\n{exc}\n')
            unavailable.append(name)
            continue
        for mode, outcomes in ran.items():
            seen[(name, mode)] = outcomes
    log(f'\nran in {time.monotonic() - started:.0f} s')
    if args.update:
        if extra:
            raise SystemExit('--update takes whole runs: no pytest arguments')
        merged = {key: value for key, value in expected.items() if key not in seen}
        merged.update(
            {key: {nodeid: o for nodeid, o in outcomes.items() if o.kind != 'passed'} for key, outcomes in seen.items()}
        )
        reasons = {(key, nodeid): o.reason for key, tests in expected.items() for nodeid, o in tests.items()}
        EXPECTATIONS.write_text(format_expectations(merged, reasons))
        log(f'wrote {EXPECTATIONS.relative_to(ROOT)}')
        return 0
    failed = False
    for key, outcomes in seen.items():
        comparison = compare(expected.get(key, {}), outcomes, partial=bool(extra))
        log(comparison.summary(*key))
        failed = failed or not comparison.ok
    if unavailable:
        log(f'!!! not run (no archive, no network to github.com): {", ".join(unavailable)}; {CACHE} takes them')
    return 1 if failed else 0
