"""tests/ecosystem/expectations.txt: every test of an ecosystem suite that does not pass, per suite and mode.

    [django-rq rq]
    tests/test_views.py::ViewTest::test_x  # failed: why, in one line

A section is one suite in one mode (`[<suite> <mode>]`); a line is a test's pytest node id, its outcome
(failed, skipped, error) and why. A run fails when a listed test passes or has another outcome, or an
unlisted test does not pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

HEADER = """# The ecosystem suites run against rqfast by `python -m tests.ecosystem` (tests/ecosystem/runner.py): every
# test that does not pass, per suite and mode, one line each: <pytest node id>  # <outcome>: <why, in one line>
# Modes: rq = rq 3.0 alone (the baseline); as-rq = RQFAST_AS_RQ=1; worker-class = django-rq's
# RQ['WORKER_CLASS'] = 'rqfast.worker.Worker' with rq in charge of the rest. The run fails when a listed test
# passes or an unlisted one does not; tests/ecosystem/test_expectations.py fails when a test that passes on
# rq is listed under as-rq (worker-class: unless it asserts rq's own default classes).
# `python -m tests.ecosystem --update` rewrites this file from a run, keeping the reasons of tests still listed.
"""

_SECTION = re.compile(r'^\[(\S+) (\S+)\]$')
_LINE = re.compile(r'^(\S.*?)\s+#\s*(failed|skipped|error)(?::\s*(.*))?$')


@dataclass(frozen=True)
class Outcome:
    kind: str  # passed, failed, skipped, error
    reason: str = ''


Key = tuple[str, str]  # (suite, mode)


def parse_expectations(text: str) -> dict[Key, dict[str, Outcome]]:
    sections: dict[Key, dict[str, Outcome]] = {}
    current: dict[str, Outcome] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        section = _SECTION.match(line)
        if section:
            current = sections.setdefault((section.group(1), section.group(2)), {})
            continue
        entry = _LINE.match(line)
        if entry is None or current is None:
            raise ValueError(f'expectations.txt line {number}: not `[suite mode]` nor `<node id>  # <outcome>: why`')
        current[entry.group(1)] = Outcome(entry.group(2), entry.group(3) or '')
    return sections


def format_expectations(sections: dict[Key, dict[str, Outcome]], reasons: dict[tuple[Key, str], str]) -> str:
    """The file's text; a test still listed with the same outcome keeps its written reason."""
    lines = [HEADER]
    for key in sorted(sections):
        lines.append(f'[{key[0]} {key[1]}]')
        for nodeid, outcome in sorted(sections[key].items()):
            reason = reasons.get((key, nodeid)) or outcome.reason
            lines.append(f'{nodeid}  # {outcome.kind}: {" ".join(reason.split())}'.rstrip())
        lines.append('')
    return '\n'.join(lines)


@dataclass
class Comparison:
    unexpected: dict[str, Outcome] = field(default_factory=dict)  # did not pass, not listed so
    fixed: dict[str, Outcome] = field(default_factory=dict)  # listed, but passed (or another outcome, or not run)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.fixed

    def summary(self, suite: str, mode: str) -> str:
        counts = ', '.join(f'{n} {kind}' for kind, n in self.counts.items() if n)
        lines = [f'{suite} [{mode}]: {counts}: ' + ('as expected' if self.ok else 'DIFFERS from expectations.txt')]
        lines += [f'  unexpected {o.kind}: {nodeid}  ({o.reason})' for nodeid, o in sorted(self.unexpected.items())]
        lines += [f'  listed but now {o.kind}: {nodeid}' for nodeid, o in sorted(self.fixed.items())]
        return '\n'.join(lines)


def compare(expected: dict[str, Outcome], seen: dict[str, Outcome], partial: bool = False) -> Comparison:
    """`partial`: a run of some tests only (pytest arguments given): listed tests it did not run are fine."""
    kinds = ('passed', 'failed', 'skipped', 'error')
    result = Comparison(counts={kind: sum(o.kind == kind for o in seen.values()) for kind in kinds})
    for nodeid, outcome in seen.items():
        listed = expected.get(nodeid)
        if outcome.kind != 'passed' and (listed is None or listed.kind != outcome.kind):
            result.unexpected[nodeid] = outcome
        elif outcome.kind == 'passed' and listed is not None:
            result.fixed[nodeid] = outcome
    if not partial:
        for nodeid in expected:
            if nodeid not in seen and not _inside_error(nodeid, seen):
                result.fixed[nodeid] = Outcome('not run')
    return result


def _inside_error(nodeid: str, seen: dict[str, Outcome]) -> bool:
    return any(o.kind == 'error' and nodeid.startswith(module + '::') for module, o in seen.items())
