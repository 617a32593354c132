"""A pytest plugin (`-p ecosystem_report`) that appends each test's outcome to RQFAST_ECOSYSTEM_REPORT as it
ends, one JSON line `{"nodeid", "outcome", "message"}`: a run killed half-way keeps what it had.

outcome: passed, failed (any phase), skipped, or error (a collection error: nodeid is the module). The first
line says who serves `import rq` in the run: {"serving": "rqfast"} or {"serving": "rq"} (the runner checks it
against the mode).
"""

from __future__ import annotations

import json
import os
from typing import Any

_seen: dict[str, str] = {}


def _write(nodeid: str, outcome: str, message: str) -> None:
    path = os.environ.get('RQFAST_ECOSYSTEM_REPORT')
    if not path:
        return
    with open(path, 'a') as out:
        out.write(json.dumps({'nodeid': nodeid, 'outcome': outcome, 'message': message[:300]}) + '\n')


def _message(report: Any) -> str:
    crash = getattr(getattr(report, 'longrepr', None), 'reprcrash', None)
    if crash is not None:
        return str(crash.message).splitlines()[0] if crash.message else ''
    if isinstance(report.longrepr, tuple):  # a skip: (file, line, reason)
        return str(report.longrepr[2])
    return str(report.longrepr or '').strip().splitlines()[-1:][0] if report.longrepr else ''


def pytest_sessionstart(session: Any) -> None:
    path = os.environ.get('RQFAST_ECOSYSTEM_REPORT')
    if path:
        import rq

        with open(path, 'a') as out:
            out.write(json.dumps({'serving': 'rqfast' if getattr(rq, '__rqfast_as_rq__', False) else 'rq'}) + '\n')


def pytest_runtest_logreport(report: Any) -> None:
    nodeid = report.nodeid
    if report.failed:
        if _seen.get(nodeid) != 'failed':
            _seen[nodeid] = 'failed'
            _write(nodeid, 'failed', f'{report.when}: {_message(report)}')
    elif report.skipped and report.when in ('setup', 'call'):
        _seen[nodeid] = 'skipped'
        _write(nodeid, 'skipped', _message(report))
    elif report.when == 'call' and report.passed:
        _seen[nodeid] = 'passed'
    elif report.when == 'teardown' and _seen.get(nodeid) == 'passed':
        _write(nodeid, 'passed', '')


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _write(report.nodeid, 'error', f'collection: {_message(report)}')
