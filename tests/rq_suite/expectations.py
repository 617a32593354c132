"""The expectations file (every test of RQ's suite that does not pass on rqfast, with a reason) and the
comparison of a run's outcomes with it.

Format, one test per line; blank lines and lines starting with `#` are ignored:

    tests/test_job.py::TestJob::test_fetch_dependencies  # AttributeError: 'Job' object has no attribute 'x'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

PASSED = frozenset({'passed', 'xpassed'})
NEUTRAL = frozenset({'skipped', 'xfailed'})  # reported, never a mismatch
# Everything else does not pass: failed, error, timeout (killed by the runner), crashed, not run.

MAX_REASON = 200

_ENTRY = re.compile(r'^(?P<nodeid>\S(?:.*?\S)?)\s+#\s?(?P<reason>.*)$')
# A reason the runner derived from an error ("ValueError: ..."), as opposed to one a person wrote.
_DERIVED = re.compile(r'^(?P<kind>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)|Failed|Timeout)\b')


@dataclass(frozen=True)
class Outcome:
    """How one test ended in a run."""

    nodeid: str
    outcome: str  # passed, failed, error, skipped, xfailed, xpassed, timeout, crashed, not run
    reason: str = ''  # one line: the error, or why it was skipped
    duration: float = 0.0

    @property
    def passed(self) -> bool:
        return self.outcome in PASSED

    @property
    def neutral(self) -> bool:
        return self.outcome in NEUTRAL

    @property
    def failed(self) -> bool:
        return not (self.passed or self.neutral)


def module_of(nodeid: str) -> str:
    """`tests/test_job.py::TestJob::test_x` -> `test_job`."""
    path = nodeid.split('::', 1)[0]
    return path.rsplit('/', 1)[-1].removesuffix('.py')


def parse_expectations(text: str) -> dict[str, str]:
    """Node id -> reason. A line without a reason, or a test listed twice, is an error."""
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith('#'):
            continue
        match = _ENTRY.match(stripped)
        if match is None or not match.group('reason').strip():
            raise ValueError(f'line {number}: expected "<test node id>  # <reason>", got {stripped!r}')
        nodeid = match.group('nodeid')
        if nodeid in entries:
            raise ValueError(f'line {number}: {nodeid} is listed twice')
        entries[nodeid] = match.group('reason').strip()
    return entries


def format_expectations(entries: Mapping[str, str], header: str = '') -> str:
    """The file's text: the header as comments, then one line per test, grouped by module."""
    lines = [f'# {line}'.rstrip() for line in header.splitlines()]
    module = None
    for nodeid in sorted(entries, key=lambda n: (module_of(n), n)):
        if module_of(nodeid) != module:
            module = module_of(nodeid)
            if lines:
                lines.append('')
        lines.append(f'{nodeid}  # {one_line(entries[nodeid])}')
    return '\n'.join(lines) + '\n'


def one_line(message: str, replacements: Mapping[str, str] | None = None) -> str:
    """A message as one stable line: its first non-empty line, paths and addresses made run-independent."""
    text = next((line.strip() for line in message.splitlines() if line.strip()), '')
    for old, new in (replacements or {}).items():
        if old:
            text = text.replace(old, new)
    text = re.sub(r' \((?:/|<)[^()]*\.py\)', '', text)  # "cannot import name 'x' from 'm' (/path/m.py)"
    text = re.sub(r'\b0x[0-9a-fA-F]{6,}\b', '0x…', text)
    text = re.sub(r'\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b', '<uuid>', text)
    text = re.sub(r'\s+', ' ', text)
    if len(text) > MAX_REASON:
        text = text[: MAX_REASON - 1] + '…'
    return text or 'no message'


def reason_for(outcome: Outcome) -> str:
    """The reason to list for a test that does not pass, derived from how it ended."""
    if outcome.outcome in ('failed', 'error'):
        return one_line(outcome.reason) if outcome.reason else f'{outcome.outcome}, no message'
    return one_line(f'{outcome.outcome}: {outcome.reason}' if outcome.reason else outcome.outcome)


@dataclass
class Comparison:
    """A run against the expectations, restricted to the modules that ran."""

    unexpected_failures: list[Outcome] = field(default_factory=list)  # does not pass, not listed
    unexpected_passes: list[Outcome] = field(default_factory=list)  # passes, listed
    missing: list[str] = field(default_factory=list)  # listed, in a module that ran, but not in the run
    listed_neutral: list[Outcome] = field(default_factory=list)  # listed and skipped: a note only
    expected_failures: list[Outcome] = field(default_factory=list)  # listed and does not pass: as it should

    @property
    def ok(self) -> bool:
        return not (self.unexpected_failures or self.unexpected_passes or self.missing)


def compare(outcomes: Iterable[Outcome], expected: Mapping[str, str], modules: Iterable[str]) -> Comparison:
    """Checks each test's outcome against the list; listed tests of `modules` must all have run."""
    result = Comparison()
    seen: set[str] = set()
    for outcome in outcomes:
        seen.add(outcome.nodeid)
        listed = outcome.nodeid in expected
        if outcome.failed:
            (result.expected_failures if listed else result.unexpected_failures).append(outcome)
        elif outcome.passed and listed:
            result.unexpected_passes.append(outcome)
        elif outcome.neutral and listed:
            result.listed_neutral.append(outcome)
    scope = set(modules)
    result.missing = sorted(n for n in expected if module_of(n) in scope and n not in seen)
    return result


def updated_expectations(
    outcomes: Iterable[Outcome], expected: Mapping[str, str], modules: Iterable[str]
) -> dict[str, str]:
    """The list after a run: entries of modules that did not run are kept; for the modules that ran, every
    test that does not pass, with its listed reason if it has one. A listed reason that was derived from an
    error is replaced when the error's kind changed (`ImportError: ...` that is now `AssertionError: ...`)."""
    scope = set(modules)
    entries = {n: r for n, r in expected.items() if module_of(n) not in scope}
    for outcome in outcomes:
        if not outcome.failed:
            continue
        new = reason_for(outcome)
        old = expected.get(outcome.nodeid)
        entries[outcome.nodeid] = old if old is not None and not _kind_changed(old, new) else new
    return entries


def _kind_changed(old: str, new: str) -> bool:
    old_match = _DERIVED.match(old)
    if old_match is None:
        return False  # written by a person: kept
    new_match = _DERIVED.match(new)
    return new_match is None or new_match.group('kind') != old_match.group('kind')
