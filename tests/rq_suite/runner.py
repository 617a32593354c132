"""Runs RQ's own test suite (2.12.0 or 3.0.0) against rqfast and compares the outcome with expectations.

    python -m tests.rq_suite                 # RQ 2.12.0's whole suite (RQFAST_COMPAT=2.12), expectations.txt
    python -m tests.rq_suite --rq 3.0.0      # RQ 3.0.0's, compared with expectations-3.0.txt
    python -m tests.rq_suite test_job test_queue
    python -m tests.rq_suite --update        # run, then rewrite expectations.txt from the outcome
    python -m tests.rq_suite --last --update # rewrite it from the last run, without running
    python -m tests.rq_suite --reference     # the same harness on RQ itself (checks the harness)

Steps: pip downloads RQ's sdist once into the cache (RQ_SUITE_CACHE, default ~/.cache/rqfast/rq-suite),
its tests/ is extracted into a temporary folder and rewritten to import rqfast (rewrite.py: RQ's helper
modules too, and `import rq` is blocked in the run, so RQ never stands in), a private redis-server is
started on a free loopback port, and each test module runs in its own pytest process.

Why a pytest process per module, watched by this runner, rather than one pytest run:
- RQ's tests start workers (in the test process and with multiprocessing) and wait for them to exit. A
  worker that does not exit hangs its test. pytest-timeout's `signal` method stops most such tests and the
  module goes on, but not all: RQ's job timeouts use SIGALRM too, so a test that ran a job in process has
  lost pytest-timeout's alarm, and a worker loop may swallow the exception. pytest-timeout's `thread` method
  would end the whole pytest process at the first hang. So the runner also watches each test through the
  events the plugin writes: a test still running 15 s after its pytest-timeout is killed with its pytest
  process, recorded as a timeout, and the module resumes from the next test. One hang costs one test.
- A module that cannot be imported, crashes or leaves a signal handler or monkeypatch behind does so in
  its own process: its outcome is its own.
- The plugin kills what a test leaves running once the test has ended (a worker that did not exit on its
  shutdown command would otherwise take later tests' jobs) and the runner kills whatever is left after
  each module and at the end: every process of the run carries RQ_SUITE_MARKER in its environment.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .census import census_lines, rq_module_names, take_census
from .expectations import (
    Comparison,
    Outcome,
    compare,
    format_expectations,
    module_of,
    one_line,
    parse_expectations,
    updated_expectations,
)
from .injected.rq_suite_procs import MARKER_VAR, kill_marked
from .rewrite import RewriteStats, rewrite_source

# The RQ releases whose suites the runner knows: PyPI's sdist sha256 (checked on reuse) and the file
# suffix of their expectations. 2.12's files keep their old names; its run sets RQFAST_COMPAT=2.12, as
# an app that wants 2.12's behaviour would.
VERSIONS = {
    '2.12.0': ('78116d0c860f6285817b52d7d6d0b16a726372073ce8ea1d229732ce74ef9378', '', '2.12'),
    '3.0.0': ('b41e39b3c36ec3faf9e2402c638a0b25fe18ebb93a1cb15193bc69694f054618', '-3.0', ''),
}
DEFAULT_VERSION = '2.12.0'
RQ_VERSION = DEFAULT_VERSION
SDIST = f'rq-{RQ_VERSION}.tar.gz'
SDIST_SHA256, _SUFFIX, COMPAT = VERSIONS[RQ_VERSION]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INJECTED = HERE / 'injected'
EXPECTATIONS = HERE / 'expectations.txt'
REFERENCE_EXPECTATIONS = HERE / 'expectations-reference.txt'


def select_version(version: str) -> None:
    """Points the runner at one RQ release's sdist, expectations and compatibility setting."""
    global RQ_VERSION, SDIST, SDIST_SHA256, COMPAT, EXPECTATIONS, REFERENCE_EXPECTATIONS
    if version not in VERSIONS:
        raise SystemExit(f'unknown RQ version {version}: one of {", ".join(VERSIONS)}')
    RQ_VERSION = version
    SDIST = f'rq-{version}.tar.gz'
    SDIST_SHA256, suffix, COMPAT = VERSIONS[version]
    EXPECTATIONS = HERE / f'expectations{suffix}.txt'
    REFERENCE_EXPECTATIONS = HERE / f'expectations-reference{suffix}.txt'


# RQ features rqfast does not have yet; reported apart (the issue counts the suite outside them).
FEATURE_MODULES = ('test_cron', 'test_group', 'test_webhooks', 'test_worker_pool', 'test_cli')

DEFAULT_TIMEOUT = 30  # seconds per test (pytest-timeout); RQ's slowest test takes 11 s on a 2-core VM
HARD_GRACE = 15  # seconds after that before the runner kills the pytest process
COLLECT_LIMIT = 120  # seconds for a module to be collected
MAX_RESTARTS = 25  # per module: a module this broken is not worth the time
RERUN_LIMIT = 20  # unexpected outcomes rerun once (timing-dependent tests); more than this are no flakes
DEFAULT_MAX_MINUTES = 30  # the whole run

# RQ's pyproject.toml [tool.pytest.ini_options]: the configuration its suite runs with.
PYTEST_INI = """[pytest]
addopts = --strict-markers
markers =
    slow
    ssl_test
"""
# RQ's console scripts are on PATH wherever rq is installed (here: the project's test dependencies). RQ's
# tests run `rqworker` in three places; in an rqfast run RQ's own worker would do the work, so both runs hide
# them, as on a machine without rq, where those three tests fail.
HIDDEN_COMMANDS = ('rq', 'rqworker')
HIDDEN_SCRIPT = """#!/bin/sh
echo "$(basename "$0"): RQ's command is hidden in RQ-suite runs (tests/rq_suite)" >&2
exit 127
"""
HEADER = """RQ {version}'s test suite run against {target} by `python -m tests.rq_suite{flag}`:
every test that does not pass, one line each: <pytest node id>  # <why, in one line>
The run fails when a listed test passes or an unlisted test does not: change this file in the commit that
changes the outcome. `python -m tests.rq_suite{flag} --update` rewrites it from a run, keeping the reasons of
tests still listed (a reason that is an error message is replaced when the error's kind changes).
Reasons say why: an intentional difference docs/switching.md documents, an RQ internal rqfast does not have, or,
until someone writes one of those, the error the test ends with."""


def log(message: str = '') -> None:
    print(message, flush=True)


def is_feature_module(module: str) -> bool:
    return module.startswith(FEATURE_MODULES[0]) or module in FEATURE_MODULES


# ---------------------------------------------------------------------------------------------- sdist


def cache_dir() -> Path:
    if os.environ.get('RQ_SUITE_CACHE'):
        return Path(os.environ['RQ_SUITE_CACHE'])
    base = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(base) / 'rqfast' / 'rq-suite'


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ensure_sdist(cache: Path) -> Path:
    """RQ's sdist from the cache, or from PyPI with pip (once)."""
    path = cache / SDIST
    if path.exists() and _sha256(path) == SDIST_SHA256:
        log(f'sdist: {path} (cached)')
        return path
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        cmd = [sys.executable, '-m', 'pip', 'download', f'rq=={RQ_VERSION}', '--no-deps', '--no-binary', ':all:']
        log(f'sdist: {" ".join(cmd[2:])} (once; about a minute: pip prepares its metadata)')
        subprocess.run([*cmd, '--disable-pip-version-check', '-q', '-d', tmp], check=True)
        downloaded = Path(tmp) / SDIST
        digest = _sha256(downloaded)
        if digest != SDIST_SHA256:
            raise SystemExit(f'{SDIST} from pip has sha256 {digest}, expected {SDIST_SHA256}')
        downloaded.replace(path)
    log(f'sdist: {path}')
    return path


def extract(sdist: Path, dest: Path, parts: Iterable[str]) -> Path:
    """Extracts the sdist's top-level folders `parts` (e.g. tests, rq) into dest; returns dest."""
    prefix = f'rq-{RQ_VERSION}/'
    wanted = tuple(f'{prefix}{part}/' for part in parts)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as tar:
        members = []
        for member in tar.getmembers():
            if member.name.startswith(wanted):
                member.name = member.name[len(prefix) :]
                members.append(member)
        tar.extractall(dest, members=members, filter='data')
    return dest


def rewrite_tree(tests: Path) -> dict[str, RewriteStats]:
    """Rewrites every .py file under tests/ in place; returns what changed, per file."""
    stats: dict[str, RewriteStats] = {}
    for path in sorted(tests.rglob('*.py')):
        file_stats = RewriteStats()
        source = path.read_text(encoding='utf-8')
        new = rewrite_source(source, file_stats)
        if new != source:
            path.write_text(new, encoding='utf-8')
        stats[str(path.relative_to(tests.parent))] = file_stats
    return stats


def print_rewrite_summary(stats: dict[str, RewriteStats]) -> None:
    total = RewriteStats()
    log('rewrite: rq -> rqfast in the extracted tests/ (imports / other code / dotted paths in strings):')
    for name, file_stats in stats.items():
        total.merge(file_stats)
        if file_stats.changes:
            strings = sum(file_stats.strings.values())
            log(f'  {name:<40} {file_stats.import_names:>3} / {file_stats.code_names:>3} / {strings:>3}')
    unchanged = [name for name, s in stats.items() if not s.changes]
    log(f'  unchanged: {", ".join(unchanged) or "none"}')
    log(f'  dotted paths rewritten in strings ({sum(total.strings.values())}):')
    for (old, new), count in sorted(total.strings.items()):
        log(f'    {count:>2} x {old} -> {new}')
    kept = ', '.join(f'{k!r} x{v}' for k, v in sorted(total.kept_strings.items())) or 'none'
    log(f'  left alone: file names {kept}; {total.redis_keys} strings with `rq:` Redis keys; `rqworker`, comments')


# ---------------------------------------------------------------------------------------------- redis


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


@contextmanager
def private_redis(workdir: Path) -> Iterator[int]:
    """A redis-server of the run's own on a free loopback port, persistence off; yields its port."""
    import redis

    binary = shutil.which('redis-server')
    if binary is None:
        raise SystemExit('redis-server is not on PATH (apt-get install -y redis-server)')
    workdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    if port == 6379:
        raise SystemExit('got port 6379 for the private redis-server; try again')
    proc = subprocess.Popen(
        [binary, '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
         '--dir', str(workdir), '--logfile', str(workdir / 'redis.log')],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    try:
        while True:
            try:
                version = client.info('server')['redis_version']
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit('the private redis-server did not start') from None
                time.sleep(0.05)
        log(f'redis: private redis-server {version} on 127.0.0.1:{port} (every 127.0.0.1:6379 goes there)')
        yield port
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def flush_private(port: int) -> None:
    import redis

    with redis.Redis(port=port) as client:
        client.flushall()


# ---------------------------------------------------------------------------------------------- runs


@dataclass
class Suite:
    """One prepared suite: where it is and how its pytest processes are started."""

    mode: str  # 'rqfast' or 'reference'
    root: Path  # holds tests/ (and rq/ for the reference)
    work: Path
    env: dict[str, str]
    marker: str
    timeout: int
    deadline: float  # time.monotonic() by which the whole run ends
    hard_grace: float = HARD_GRACE

    def modules(self) -> list[str]:
        return sorted(p.stem for p in (self.root / 'tests').glob('test_*.py'))


@dataclass
class ModuleResult:
    module: str
    outcomes: list[Outcome] = field(default_factory=list)
    leaks: list[tuple[str, list[str]]] = field(default_factory=list)  # (test, processes it left running)
    killed: list[str] = field(default_factory=list)  # tests the runner killed (hung past pytest-timeout)
    restarts: int = 0
    seconds: float = 0.0
    imported: dict[str, str | None] = field(default_factory=dict)  # rqfast / rq origin, from the plugin
    flaky: list[tuple[str, str, str]] = field(default_factory=list)  # (test, first outcome, rerun outcome)
    foreign: list[str] = field(default_factory=list)  # rqfast modules loaded from outside the project root


@dataclass
class Attempt:
    """What one pytest process reported through the plugin's events."""

    collected: list[str] | None = None
    collect_errors: list[tuple[str, str]] = field(default_factory=list)
    reports: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    finished: set[str] = field(default_factory=set)
    leaks: list[tuple[str, list[str]]] = field(default_factory=list)
    session: dict[str, Any] = field(default_factory=dict)
    current: str | None = None  # started, not finished
    current_since: float = 0.0
    rqfast_files: dict[str, str] = field(default_factory=dict)  # rqfast modules loaded, and their files
    returncode: int | None = None
    ended: bool = False  # the session ended normally

    def apply(self, event: dict[str, Any]) -> None:
        kind = event['event']
        if kind == 'session':
            self.session = event
        elif kind == 'collected':
            self.collected = event['nodeids']
        elif kind == 'collecterror':
            self.collect_errors.append((event['nodeid'], event['message']))
        elif kind == 'start':
            self.current, self.current_since = event['nodeid'], event['t']
        elif kind == 'report':
            self.reports[event['nodeid']].append(event)
        elif kind == 'leak':
            self.leaks.append((event['nodeid'], event['procs']))
        elif kind == 'finish':
            self.finished.add(event['nodeid'])
            self.current = None
        elif kind == 'modules':
            self.rqfast_files = event['rqfast']
        elif kind == 'end':
            self.ended = True


def outcome_from_reports(nodeid: str, reports: list[dict[str, Any]], replacements: dict[str, str]) -> Outcome:
    """A test's outcome from its setup / call / teardown reports."""
    duration = sum(r['duration'] for r in reports)
    by_phase = {r['when']: r for r in reports}
    for report in reports:
        if report['outcome'] == 'failed':
            kind = 'failed' if report['when'] == 'call' else 'error'
            return Outcome(nodeid, kind, one_line(report['message'], replacements), duration)
    for phase in ('setup', 'call'):
        skipped = by_phase.get(phase)
        if skipped is not None and skipped['outcome'] == 'skipped':
            kind = 'xfailed' if skipped['xfail'] else 'skipped'
            return Outcome(nodeid, kind, one_line(skipped['message'], replacements), duration)
    call = by_phase.get('call')
    if call is not None and call['outcome'] == 'passed':
        return Outcome(nodeid, 'xpassed' if call['xfail'] else 'passed', '', duration)
    return Outcome(nodeid, 'crashed', 'ended before its call phase reported', duration)


def _read_events(path: Path, position: int) -> tuple[list[dict[str, Any]], int]:
    try:
        with path.open('rb') as handle:
            handle.seek(position)
            data = handle.read()
    except FileNotFoundError:
        return [], position
    end = data.rfind(b'\n') + 1  # a line still being written waits for the next read
    events = [json.loads(line) for line in data[:end].splitlines() if line.strip()]
    return events, position + end


class ModuleRunner:
    """Runs one module's tests, in as many pytest processes as hangs and crashes make necessary."""

    def __init__(self, suite: Suite, module: str, known: list[str] | None):
        self.suite = suite
        self.module = module
        self.known = known  # the module's tests as RQ's suite has them, for when it cannot be collected
        self.replacements = {str(suite.root) + os.sep: '', str(ROOT) + os.sep: '', str(Path.home()): '~'}
        self.result = ModuleResult(module)
        self.results: dict[str, Outcome] = {}

    def run(self, nodeids: list[str] | None = None) -> ModuleResult:
        """Runs the module's tests (or these of them)."""
        began = time.monotonic()
        targets = nodeids or [f'tests/{self.module}.py']
        collected: list[str] | None = None
        for attempt_number in range(MAX_RESTARTS + 1):
            attempt, ending = self._attempt(targets, attempt_number, rerun=nodeids is not None)
            collected = collected if collected is not None else attempt.collected
            self._record(attempt, ending)
            remaining = [n for n in collected or [] if n not in self.results]
            if not remaining or ending == 'deadline' or collected is None:
                break
            if ending == 'exited' and not attempt.finished:  # pytest stopped on its own without progress
                self._not_run(remaining, f'not run: pytest ended (exit code {attempt.returncode}) before it')
                break
            self.result.restarts += 1
            targets = remaining
        else:
            self._not_run(remaining, f'not run: the module hung or crashed {MAX_RESTARTS + 1} times')
        if ending == 'deadline':
            self._not_run(
                [n for n in collected or self.known or [] if n not in self.results], 'the run ran out of time'
            )
        if not collected and not self.results:  # with a collection error pytest reports no tests at all
            self._collect_failed(attempt, ending)
        self.result.outcomes = list(self.results.values())
        self.result.seconds = time.monotonic() - began
        return self.result

    def _attempt(self, targets: list[str], number: int, rerun: bool = False) -> tuple[Attempt, str]:
        """One pytest process; returns its events and how it ended: exited, hung, crashed or deadline."""
        suite = self.suite
        events = suite.work / 'events' / f'{self.module}.{"rerun." if rerun else ""}{number}.jsonl'
        events.parent.mkdir(exist_ok=True)
        logfile = suite.work / 'logs' / f'{self.module}.log'
        logfile.parent.mkdir(exist_ok=True)
        env = {**suite.env, 'RQ_SUITE_EVENTS': str(events)}
        cmd = [
            sys.executable, '-m', 'pytest', '-c', str(suite.root / 'pytest.ini'), '--rootdir', str(suite.root),
            '-p', 'pytest_timeout', '-p', 'rq_suite_plugin', '-p', 'no:cacheprovider',
            f'--timeout={suite.timeout}', '--timeout-method=signal', '-q', '-rfE', '--no-header', *targets,
        ]  # fmt: skip
        attempt = Attempt()
        position = 0
        ending = 'exited'
        with logfile.open('ab') as out:
            out.write(f'\n=== {" ".join(cmd[3:])}\n'.encode())
            out.flush()
            proc = subprocess.Popen(
                cmd, cwd=suite.root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            started = time.time()
            while proc.poll() is None:
                new, position = _read_events(events, position)
                for event in new:
                    attempt.apply(event)
                now = time.time()
                if attempt.current is not None and now - attempt.current_since > suite.timeout + suite.hard_grace:
                    ending = 'hung'
                elif attempt.collected is None and now - started > COLLECT_LIMIT:
                    ending = 'hung'
                elif time.monotonic() > suite.deadline:
                    ending = 'deadline'
                if ending != 'exited':
                    _kill_group(proc)
                    break
                time.sleep(0.2)
            proc.wait()
        new, position = _read_events(events, position)
        for event in new:
            attempt.apply(event)
        kill_marked(suite.marker)  # whatever the process left behind
        if ending == 'exited' and attempt.current is not None:
            ending = 'crashed'
        attempt.returncode = proc.returncode
        return attempt, ending

    def _record(self, attempt: Attempt, ending: str) -> None:
        if attempt.session:
            self.result.imported = {'rqfast': attempt.session.get('rqfast'), 'rq': attempt.session.get('rq')}
        self.result.leaks.extend(attempt.leaks)
        if self.suite.mode == 'rqfast':
            for name, file in sorted(attempt.rqfast_files.items()):
                entry = f'{name} ({file})'
                if not Path(file).resolve().is_relative_to(ROOT) and entry not in self.result.foreign:
                    self.result.foreign.append(entry)
        for nodeid, reports in attempt.reports.items():
            if nodeid in attempt.finished:
                self.results[nodeid] = outcome_from_reports(nodeid, reports, self.replacements)
        current = attempt.current
        if current is None:
            return
        if ending == 'hung':
            limit = self.suite.timeout + self.suite.hard_grace
            reason = f'Timeout: still running {limit:g} s after it started (pytest-timeout did not stop it); killed'
            self.results[current] = Outcome(current, 'timeout', reason, float(limit))
            self.result.killed.append(current)
        elif ending == 'crashed':
            reason = f'the pytest process ended (exit code {attempt.returncode}) during this test'
            self.results[current] = Outcome(current, 'crashed', reason)
        elif ending == 'deadline':
            self.results[current] = Outcome(current, 'not run', 'the run ran out of time during this test')

    def _not_run(self, nodeids: list[str], reason: str) -> None:
        for nodeid in nodeids:
            self.results.setdefault(nodeid, Outcome(nodeid, 'not run', reason))

    def _collect_failed(self, attempt: Attempt, ending: str) -> None:
        """The module could not be collected (typically: an import fails): each of its tests is an error."""
        if ending == 'hung':
            message = f'Timeout: collecting the module took over {COLLECT_LIMIT} s; killed'
        elif attempt.collect_errors:
            message = one_line(attempt.collect_errors[-1][1], self.replacements)
        else:
            message = f'pytest collected nothing (exit code {attempt.returncode})'
        nodeids = self.known or [f'tests/{self.module}.py']
        for nodeid in nodeids:
            self.results[nodeid] = Outcome(nodeid, 'error', message)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def rerun_unexpected(suite: Suite, port: int | None, results: list[ModuleResult], expected: dict[str, str]) -> None:
    """Runs each test whose outcome does not match the expectations once more, alone in its module's process,
    and keeps the second outcome. Some of RQ's tests depend on timing (a worker given 0.5 s to subscribe before
    a shutdown command): on a loaded machine they fail now and then, RQ itself included. Every test that ends
    differently the second time is reported as flaky."""
    comparison = compare([o for r in results for o in r.outcomes], expected, [r.module for r in results])
    unexpected = comparison.unexpected_failures + comparison.unexpected_passes
    if not unexpected or len(unexpected) > RERUN_LIMIT:
        return
    log(f'rerunning the {len(unexpected)} tests whose outcome does not match the expectations, once each')
    by_module: dict[str, list[str]] = defaultdict(list)
    for outcome in unexpected:
        by_module[module_of(outcome.nodeid)].append(outcome.nodeid)
    for result in results:
        nodeids = by_module.get(result.module)
        if not nodeids or time.monotonic() > suite.deadline:
            continue
        if port is not None:
            flush_private(port)
        second = {o.nodeid: o for o in ModuleRunner(suite, result.module, None).run(nodeids).outcomes}
        for index, first in enumerate(result.outcomes):
            again = second.get(first.nodeid)
            if again is None:
                continue
            if again.passed != first.passed:
                result.flaky.append((first.nodeid, first.outcome, again.outcome))
            result.outcomes[index] = again


def collect_reference_ids(suite: Suite) -> dict[str, list[str]]:
    """RQ's own test ids per module (collected against RQ): an rqfast module that cannot be imported still
    counts each of its tests, as an error."""
    events = suite.work / 'events' / 'reference-collect.jsonl'
    events.parent.mkdir(exist_ok=True)
    cmd = [
        sys.executable, '-m', 'pytest', '-c', str(suite.root / 'pytest.ini'), '--rootdir', str(suite.root),
        '-p', 'rq_suite_plugin', '-p', 'no:cacheprovider', '--collect-only', '-q', 'tests',
    ]  # fmt: skip
    subprocess.run(
        cmd, cwd=suite.root, env={**suite.env, 'RQ_SUITE_EVENTS': str(events)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, timeout=COLLECT_LIMIT, check=False,
    )  # fmt: skip
    kill_marked(suite.marker)
    attempt = Attempt()
    for event in _read_events(events, 0)[0]:
        attempt.apply(event)
    ids: dict[str, list[str]] = defaultdict(list)
    for nodeid in attempt.collected or []:
        ids[module_of(nodeid)].append(nodeid)
    return ids


def prepare(mode: str, sdist: Path, work: Path, redis_port: int, marker: str, timeout: int, deadline: float) -> Suite:
    """Extracts (and for rqfast rewrites) the suite; returns it with the environment its processes get."""
    root = work / mode
    extract(sdist, root, ('tests', 'rq') if mode == 'reference' else ('tests',))
    (root / 'pytest.ini').write_text(PYTEST_INI)
    hidden = work / 'hidden-bin'
    hidden.mkdir(exist_ok=True)
    for name in HIDDEN_COMMANDS:
        script = hidden / name
        script.write_text(HIDDEN_SCRIPT)
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(('PYTEST_', 'RUN_SLOW', 'RUN_SSL', 'RQ_SUITE'))}
    pythonpath = [str(INJECTED), str(root)] + ([] if mode == 'reference' else [str(ROOT)])
    env.update(
        PYTHONPATH=os.pathsep.join(pythonpath),
        PATH=os.pathsep.join([str(hidden), env.get('PATH', '')]),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD='1',  # the same plugins wherever it runs: -p pytest_timeout, ours
        PYTHONDONTWRITEBYTECODE='1',
        RQ_SUITE_REDIS_PORT=str(redis_port),
        **{MARKER_VAR: marker},
    )
    env.pop('RQFAST_COMPAT', None)
    if COMPAT:
        env['RQFAST_COMPAT'] = COMPAT
    if mode == 'rqfast':
        env['RQ_SUITE_BLOCK_RQ'] = '1'
        env['RQ_SUITE_RQFAST_ROOT'] = str(ROOT)  # and not another checkout's editable install
        print_rewrite_summary(rewrite_tree(root / 'tests'))
    return Suite(mode, root, work, env, marker, timeout, deadline)


# ---------------------------------------------------------------------------------------------- report


def _row(name: str, outcomes: list[Outcome], expected: dict[str, str], comparison: Comparison | None) -> str:
    passed = sum(o.passed for o in outcomes)
    failed = sum(o.failed for o in outcomes)
    skipped = sum(o.neutral for o in outcomes)
    listed = sum(o.failed and o.nodeid in expected for o in outcomes)
    mismatches = 0
    if comparison is not None:
        ids = {o.nodeid for o in outcomes}
        bad = comparison.unexpected_failures + comparison.unexpected_passes
        mismatches = sum(o.nodeid in ids for o in bad)
    return f'{name:<30} {len(outcomes):>6} {passed:>7} {failed:>7} {skipped:>8} {listed:>9} {mismatches:>9}'


def print_table(results: list[ModuleResult], expected: dict[str, str], comparison: Comparison | None) -> None:
    log(f'{"module":<30} {"tests":>6} {"passed":>7} {"failed":>7} {"skipped":>8} {"exp-fail":>9} {"mismatch":>9}')
    everything: list[Outcome] = []
    core: list[Outcome] = []
    for result in results:
        log(_row(result.module, result.outcomes, expected, comparison))
        everything.extend(result.outcomes)
        if not is_feature_module(result.module):
            core.extend(result.outcomes)
    log('-' * 84)
    log(_row('total', everything, expected, comparison))
    log(_row('  outside feature modules', core, expected, comparison))
    log('(failed: failed, error, timeout, crashed or not run; exp-fail: of those, listed in the expectations;')
    log(f' feature modules: {", ".join(m + ("*" if m == "test_cron" else "") for m in FEATURE_MODULES)})')


def print_causes(outcomes: list[Outcome], limit: int = 30) -> None:
    """The reasons tests do not pass, most frequent first, with the modules they hit."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.failed:
            groups[outcome.reason or outcome.outcome].append(outcome)
    if not groups:
        return
    log(f'\nwhy tests do not pass ({len(groups)} distinct reasons; the {min(limit, len(groups))} most frequent):')
    for reason, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:limit]:
        modules = Counter(module_of(o.nodeid) for o in members)
        where = ', '.join(f'{m} {n}' for m, n in modules.most_common(6)) + (', ...' if len(modules) > 6 else '')
        log(f'  {len(members):>4}  {reason}\n        [{where}]')


def compare_with_reference(results: list[ModuleResult], reference: dict[str, Any] | None) -> None:
    """rqfast's passes among the tests RQ itself passes (the last whole --reference run in the cache)."""
    if not reference:
        log('\n(no --reference run in the cache: run `python -m tests.rq_suite --reference` for the comparison)')
        return
    ref_passed = {o['nodeid'] for o in reference['outcomes'] if o['outcome'] in ('passed', 'xpassed')}
    ours = {o.nodeid: o for r in results for o in r.outcomes}
    for label, keep in (('outside feature modules', lambda m: not is_feature_module(m)), ('all', lambda m: True)):
        base = {n for n in ref_passed if keep(module_of(n)) and module_of(n) in {r.module for r in results}}
        passing = sum(1 for n in base if n in ours and ours[n].passed)
        log(f'of the {len(base)} tests RQ {RQ_VERSION} passes ({label}), rqfast passes {passing}')


def print_unexpected_failures(outcomes: list[Outcome], verbose: bool, limit: int = 40) -> None:
    """Each one; or, when there are many, grouped by reason with a few examples each."""
    if verbose or len(outcomes) <= limit:
        for outcome in outcomes:
            log(f'  {outcome.nodeid}  # {outcome.outcome}: {outcome.reason}')
        return
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[f'{outcome.outcome}: {outcome.reason}'].append(outcome)
    for reason, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        log(f'  {len(members):>4} x {reason}')
        for outcome in members[:3]:
            log(f'         {outcome.nodeid}')
        if len(members) > 3:
            log(f'         ... and {len(members) - 3} more')
    log('  (all of them: --verbose)')


def report(
    suite_mode: str,
    results: list[ModuleResult],
    expected: dict[str, str],
    comparison: Comparison,
    seconds: float,
    verbose: bool = False,
) -> None:
    outcomes = [o for r in results for o in r.outcomes]
    log('')
    print_table(results, expected, comparison)
    package = 'rq' if suite_mode == 'reference' else 'rqfast'
    origin = next((r.imported[package] for r in results if r.imported.get(package)), None)
    log(f'\n{package} imported from {origin} (as the pytest processes found it)')
    leaks = [(r.module, test, procs) for r in results for test, procs in r.leaks]
    if leaks:
        log(f'\n{len(leaks)} tests left processes running after they ended (killed 1 s after the test):')
        for _module, test, procs in leaks:
            log(f'  {test}: {len(procs)} process(es), e.g. {procs[0]}')
    flaky = [entry for r in results for entry in r.flaky]
    if flaky:
        log(f'\n{len(flaky)} tests ended differently when rerun (flaky; the second outcome counts):')
        for test, first, again in flaky:
            log(f'  {test}: {first}, then {again}')
    killed = [test for r in results for test in r.killed]
    if killed:
        log(f'\n{len(killed)} tests hung past pytest-timeout and were killed with their pytest process:')
        for test in killed:
            log(f'  {test}')
    print_causes(outcomes)
    if comparison.listed_neutral:
        log(f'\nnote: {len(comparison.listed_neutral)} listed tests were skipped:')
        for outcome in comparison.listed_neutral:
            log(f'  {outcome.nodeid}')
    if comparison.unexpected_failures:
        log(f'\nUNEXPECTED: {len(comparison.unexpected_failures)} tests do not pass and are not listed:')
        print_unexpected_failures(comparison.unexpected_failures, verbose)
    if comparison.unexpected_passes:
        log(f'\nUNEXPECTED: {len(comparison.unexpected_passes)} listed tests pass (take them off the list):')
        for outcome in comparison.unexpected_passes:
            log(f'  {outcome.nodeid}  # listed: {expected[outcome.nodeid]}')
    if comparison.missing:
        log(f'\nUNEXPECTED: {len(comparison.missing)} listed tests of the modules that ran were not in the run:')
        for nodeid in comparison.missing:
            log(f'  {nodeid}')
    foreign = sorted({f for r in results for f in r.foreign})
    if foreign:
        log(f'\nWRONG RQFAST: {len(foreign)} rqfast modules were imported from outside {ROOT}:')
        for line in foreign:
            log(f'  {line}')
    verdict = 'outcomes match the expectations' if comparison.ok else 'outcomes DO NOT match the expectations'
    log(f'\n{suite_mode}: {verdict}; {len(outcomes)} tests in {len(results)} modules, {seconds:.0f} s')


# ---------------------------------------------------------------------------------------------- main


def _last_run_path(mode: str) -> Path:
    version = '' if RQ_VERSION == DEFAULT_VERSION else f'-{RQ_VERSION}'
    return cache_dir() / f'last-run-{mode}{version}.json'


def save_run(mode: str, results: list[ModuleResult], seconds: float, census: list[str], whole: bool) -> None:
    """The run, for --last; a whole reference run is also kept apart, for rqfast runs to compare with."""
    path = _last_run_path(mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        'mode': mode,
        'rq_version': RQ_VERSION,
        'seconds': round(seconds, 1),
        'modules': [r.module for r in results],
        'results': [{**asdict(r), 'outcomes': [asdict(o) for o in r.outcomes]} for r in results],
        'outcomes': [asdict(o) for r in results for o in r.outcomes],
        'census': census,
    }
    path.write_text(json.dumps(data, indent=1))
    if mode == 'reference' and whole:
        _last_run_path('reference-whole').write_text(json.dumps(data, indent=1))


def load_run(mode: str) -> dict[str, Any] | None:
    path = _last_run_path(mode)
    return json.loads(path.read_text()) if path.exists() else None


def results_from_saved(data: dict[str, Any]) -> list[ModuleResult]:
    results = []
    for raw in data['results']:
        raw = dict(raw)
        raw['outcomes'] = [Outcome(**o) for o in raw['outcomes']]
        raw['leaks'] = [tuple(leak) for leak in raw['leaks']]
        results.append(ModuleResult(**raw))
    return results


def preflight() -> None:
    missing = []
    for module, why in (('pytest_timeout', 'pytest-timeout'), ('psutil', "psutil (RQ's test_worker imports it)")):
        try:
            __import__(module)
        except ImportError:
            missing.append(why)
    if missing:
        raise SystemExit(f'missing: {", ".join(missing)}: python -m pip install pytest-timeout psutil')
    if not Path('/proc/self/environ').exists():
        raise SystemExit('the RQ-suite runner needs Linux (/proc) to find the processes a run leaves behind')


def run_suite(
    args: argparse.Namespace, mode: str, expected: dict[str, str]
) -> tuple[list[ModuleResult], float, list[str]]:
    began = time.monotonic()
    deadline = began + args.max_minutes * 60
    sdist = ensure_sdist(cache_dir())
    work = Path(tempfile.mkdtemp(prefix=f'rq-suite-{mode}-'))
    marker = uuid.uuid4().hex
    log(f'work dir: {work}{" (kept)" if args.keep else ""}')
    try:
        with private_redis(work / 'redis') as port:
            suite = prepare(mode, sdist, work, port, marker, args.timeout, deadline)
            known: dict[str, list[str]] = {}
            if mode == 'rqfast':
                reference = prepare('reference', sdist, work, port, marker, args.timeout, deadline)
                known = collect_reference_ids(reference)
                log(f'collected RQ {RQ_VERSION} itself: {sum(map(len, known.values()))} tests in {len(known)} modules')
            modules = suite.modules()
            unknown = sorted(set(args.modules) - set(modules))
            if unknown:
                raise SystemExit(f'no such module in RQ {RQ_VERSION} tests/: {", ".join(unknown)}')
            results = []
            for module in args.modules or modules:
                flush_private(port)
                if time.monotonic() > deadline:  # no time left: not started
                    nodeids = known.get(module) or [f'tests/{module}.py']
                    outcomes = [Outcome(n, 'not run', 'the run ran out of time') for n in nodeids]
                    results.append(ModuleResult(module, outcomes))
                    continue
                result = ModuleRunner(suite, module, known.get(module)).run()
                counts = Counter(o.outcome for o in result.outcomes)
                summary = ', '.join(f'{n} {k}' for k, n in sorted(counts.items()))
                restarts = f', {result.restarts} restarts' if result.restarts else ''
                log(f'  {module:<32} {summary or "no tests"} ({result.seconds:.1f} s{restarts})')
                results.append(result)
            if not args.no_rerun:
                rerun_unexpected(suite, port, results, expected)
            census = []
            if mode == 'rqfast':
                rq_modules = rq_module_names(work / 'reference' / 'rq')
                probed = take_census(suite.root / 'tests', suite.env, suite.root, rq_modules)
                counts = {m: len(ids) for m, ids in known.items()}
                census = census_lines(probed, args.modules or modules, counts)
    finally:
        kill_marked(marker)
        if args.keep:
            log(f'kept: {work} (logs/, events/, the extracted suites)')
        else:
            shutil.rmtree(work, ignore_errors=True)
    return results, time.monotonic() - began, census


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m tests.rq_suite', description="Runs RQ's own test suite against rqfast."
    )
    parser.add_argument('--rq', default=DEFAULT_VERSION, choices=sorted(VERSIONS), help='which RQ release')
    parser.add_argument('modules', nargs='*', help='test modules to run (e.g. test_job); default: all')
    parser.add_argument('--reference', action='store_true', help='run the suite on RQ itself, not rewritten')
    parser.add_argument('--update', action='store_true', help='rewrite the expectations file from the outcome')
    parser.add_argument('--last', action='store_true', help='do not run: use the last run saved in the cache')
    parser.add_argument('--timeout', type=int, default=DEFAULT_TIMEOUT, help='seconds per test (pytest-timeout)')
    parser.add_argument('--max-minutes', type=float, default=DEFAULT_MAX_MINUTES, help='bound on the whole run')
    parser.add_argument('--keep', action='store_true', help='keep the work dir (logs, events, extracted suite)')
    parser.add_argument('-v', '--verbose', action='store_true', help='list every unexpected outcome')
    parser.add_argument('--no-rerun', action='store_true', help='do not rerun unexpected outcomes once')
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    select_version(args.rq)
    mode = 'reference' if args.reference else 'rqfast'
    expectations_path = REFERENCE_EXPECTATIONS if args.reference else EXPECTATIONS
    expected = parse_expectations(expectations_path.read_text()) if expectations_path.exists() else {}
    if args.last:
        saved = load_run(mode)
        if saved is None:
            raise SystemExit(f'no saved {mode} run at {_last_run_path(mode)}')
        results, seconds, census = results_from_saved(saved), float(saved['seconds']), saved.get('census', [])
    else:
        preflight()
        # `timeout` and CI send SIGTERM: end through the `finally`s, which kill the run's processes.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        log(f'python {sys.version.split()[0]} ({sys.executable}); {mode} run; per-test timeout {args.timeout} s')
        results, seconds, census = run_suite(args, mode, expected)
        save_run(mode, results, seconds, census, whole=not args.modules)
    outcomes = [o for r in results for o in r.outcomes]
    modules = [r.module for r in results]
    comparison = compare(outcomes, expected, modules)
    report(mode, results, expected, comparison, seconds, args.verbose)
    if census:
        log('\nrqfast imports of the rewritten suite (every import statement, not just the first to fail):')
        for line in census:
            log(f'  {line}')
    if mode == 'rqfast':
        compare_with_reference(results, load_run('reference-whole'))
    if args.update:
        entries = updated_expectations(outcomes, expected, modules)
        header = HEADER.format(
            version=RQ_VERSION,
            target='RQ itself' if args.reference else 'rqfast',
            flag=(f' --rq {RQ_VERSION}' if RQ_VERSION != DEFAULT_VERSION else '')
            + (' --reference' if args.reference else ''),
        )
        expectations_path.write_text(format_expectations(entries, header))
        log(f'\nwrote {expectations_path.relative_to(ROOT)}: {len(entries)} tests listed')
        return 0
    foreign = any(r.foreign for r in results)
    return 0 if comparison.ok and not foreign else 1
