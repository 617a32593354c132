"""pytest plugin of an RQ-suite run (`-p rq_suite_plugin`): writes each test's outcome to the events file
(RQ_SUITE_EVENTS) the moment it is known, so the runner keeps everything already run when it has to kill a
hung pytest process, and after each test kills the processes the test left behind (a worker that did not
exit on its shutdown command or at the end of its burst would otherwise take the jobs of later tests)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Generator
from typing import Any, TextIO

import pytest
from rq_suite_procs import MARKER_VAR, kill_marked

LEAK_GRACE = 1.0  # seconds a process may take to exit after its test ended before it is killed

_events: TextIO | None = None


def _write(event: str, **fields: Any) -> None:
    if _events is not None:
        _events.write(json.dumps({'event': event, 't': time.time(), **fields}) + '\n')
        _events.flush()


def _origin(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def _message(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    if longrepr is None:
        return ''
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        return str(longrepr[2])
    crash = getattr(longrepr, 'reprcrash', None)
    if crash is not None:
        return str(crash.message)
    # A module that fails to import: the last "E   ..." line is the error, and the last frame says which
    # import in which file ("tests/__init__.py:8: in <module>" then "    from rqfast.utils import get_version").
    lines = str(longrepr).splitlines()
    errors = [line[1:].strip() for line in lines if line.startswith('E ')]
    if not errors:
        return next((line.strip() for line in reversed(lines) if line.strip()), '')
    frames = [i for i, line in enumerate(lines) if re.match(r'^\S+\.py:\d+: in ', line)]
    if frames and frames[-1] + 1 < len(lines) and not lines[frames[-1] + 1].startswith('E '):
        where = lines[frames[-1]].split(': in ', 1)[0]
        return f'{errors[-1]} ({where}: {lines[frames[-1] + 1].strip()})'
    return errors[-1]


def pytest_configure(config: pytest.Config) -> None:
    global _events
    path = os.environ.get('RQ_SUITE_EVENTS')
    if path and _events is None:
        _events = open(path, 'a', encoding='utf-8')  # noqa: SIM115 - open for the whole session
        _write('session', pid=os.getpid(), rqfast=_origin('rqfast'), rq=_origin('rq'))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _write('collecterror', nodeid=report.nodeid, message=_message(report))


def pytest_collection_finish(session: pytest.Session) -> None:
    _write('collected', nodeids=[item.nodeid for item in session.items])


def pytest_runtest_logstart(nodeid: str) -> None:
    _write('start', nodeid=nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _write(
        'report',
        nodeid=report.nodeid,
        when=report.when,
        outcome=report.outcome,
        xfail=hasattr(report, 'wasxfail'),
        message=_message(report) if report.outcome != 'passed' else '',
        duration=report.duration,
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Around the whole test, outside pytest-timeout's wrapper: its alarm is off when the cleanup runs."""
    try:
        return (yield)
    finally:
        marker = os.environ.get(MARKER_VAR)
        if marker:
            leftovers = kill_marked(marker, exclude=frozenset({os.getpid()}), grace=LEAK_GRACE)
            if leftovers:
                _write('leak', nodeid=item.nodeid, procs=[p.describe() for p in leftovers])
        _write('finish', nodeid=item.nodeid)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _events
    if _events is not None:
        files = {
            name: getattr(module, '__file__', None)
            for name, module in list(sys.modules.items())
            if name == 'rqfast' or name.startswith('rqfast.')
        }
        _write('modules', rqfast={name: file for name, file in files.items() if file})
        _write('end')
        _events.close()
        _events = None
