"""The rewritten suite's imports of rqfast that rqfast cannot satisfy, and the test modules each one blocks.

A module that fails to import reports only its first missing name; this reads every `import` statement of
every file (ast), asks a process with the run's environment which ones resolve, and follows the suite's own
helper modules (`tests`, `tests.fixtures`), so the list of what is missing is complete in one run.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

PACKAGE = 'rqfast'
LOCAL = 'tests'


@dataclass(frozen=True)
class ImportRef:
    file: str  # tests/fixtures.py
    module: str  # rqfast.job
    name: str | None  # Job, or None for `import rqfast.job`
    line: int
    at_import: bool  # runs when the file is imported (not inside a function)


def _local_file(module: str, tests_dir: Path) -> str | None:
    """tests.fixtures -> tests/fixtures.py (or the package's __init__.py)."""
    parts = module.split('.')
    if parts[0] != LOCAL:
        return None
    base = tests_dir.parent.joinpath(*parts)
    for candidate in (base.with_suffix('.py'), base / '__init__.py'):
        if candidate.exists():
            return str(candidate.relative_to(tests_dir.parent))
    return None


def imports_of(source: str, file: str) -> list[ImportRef]:
    """Every import in a file, `from x import a, b` as one ref per name."""
    refs: list[ImportRef] = []
    tree = ast.parse(source)
    in_function: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            in_function.update(id(child) for child in ast.walk(node) if child is not node)
    for node in ast.walk(tree):
        at_import = id(node) not in in_function
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            refs.extend(ImportRef(file, node.module, alias.name, node.lineno, at_import) for alias in node.names)
        elif isinstance(node, ast.Import):
            refs.extend(ImportRef(file, alias.name, None, node.lineno, at_import) for alias in node.names)
    return refs


@dataclass
class Census:
    statuses: dict[tuple[str, str | None], str]  # (module, name) -> ok / no module m / no name / error ...
    refs: list[ImportRef]
    needs: dict[str, set[str]]  # test module -> files it imports when it is imported (itself included)

    def missing(self, ref: ImportRef) -> str | None:
        status = self.statuses.get((ref.module, ref.name), 'ok')
        return None if status == 'ok' else status

    def blockers(self, test_module: str) -> list[ImportRef]:
        """The missing imports that stop a test module from being imported."""
        files = self.needs.get(test_module, set())
        return [r for r in self.refs if r.at_import and r.file in files and self.missing(r)]


def rq_module_names(rq_dir: Path) -> set[str]:
    """RQ's modules, relative to the package: {'utils', 'cli', 'cli.helpers', ...}."""
    names = set()
    for path in rq_dir.rglob('*.py'):
        parts = path.relative_to(rq_dir).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        if parts:
            names.add('.'.join(parts))
    return names


def take_census(tests_dir: Path, env: dict[str, str], cwd: Path, rq_modules: Collection[str] = ()) -> Census:
    """Probes every rqfast import of the suite; `from rqfast import utils` counts as a missing module when
    `rq.utils` is one of RQ's modules (rq_modules)."""
    refs: list[ImportRef] = []
    local: dict[str, set[str]] = defaultdict(set)  # file -> local files it imports at import time
    for path in sorted(tests_dir.rglob('*.py')):
        file = str(path.relative_to(tests_dir.parent))
        for ref in imports_of(path.read_text(encoding='utf-8'), file):
            if ref.module.split('.')[0] == PACKAGE:
                refs.append(ref)
            elif ref.module.split('.')[0] == LOCAL and ref.at_import:
                for module in (ref.module, f'{ref.module}.{ref.name}' if ref.name else ref.module):
                    target = _local_file(module, tests_dir)
                    if target:
                        local[file].add(target)
    pairs = sorted({(r.module, r.name) for r in refs}, key=lambda p: (p[0], p[1] or ''))
    probe = subprocess.run(
        [sys.executable, '-m', 'rq_suite_probe'], input=json.dumps(pairs), capture_output=True, text=True,
        env=env, cwd=cwd, timeout=120, check=True,
    )  # fmt: skip
    statuses = dict(zip(pairs, json.loads(probe.stdout), strict=True))
    for (module, name), status in statuses.items():
        submodule = f'{module}.{name}'
        if status == 'no name' and submodule.removeprefix(f'{PACKAGE}.') in rq_modules:
            statuses[(module, name)] = f'no module {submodule}'
    needs: dict[str, set[str]] = {}
    package_init = f'{LOCAL}/__init__.py'
    for path in sorted(tests_dir.glob('test_*.py')):
        file = str(path.relative_to(tests_dir.parent))
        seen, todo = set(), [file, package_init]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(local.get(current, ()))
        needs[path.stem] = seen
    return Census(statuses, refs, needs)


def census_lines(census: Census, test_modules: list[str], tests: dict[str, int] | None = None) -> list[str]:
    """The report: missing modules, then missing names, each with the test modules it stops importing (and
    their number of tests, from `tests`), then what each test module lacks."""
    tests = tests or {}

    def count(modules: set[str]) -> str:
        return (
            f'{len(modules)} test modules, {sum(tests.get(m, 0) for m in modules)} tests'
            if tests
            else (f'{len(modules)} test modules')
        )

    blocked_by: dict[tuple[str, str | None], set[str]] = defaultdict(set)
    for test_module in test_modules:
        for ref in census.blockers(test_module):
            blocked_by[(ref.module, ref.name)].add(test_module)
    later: dict[tuple[str, str | None], set[str]] = defaultdict(set)  # imports inside test functions
    for ref in census.refs:
        if not ref.at_import and census.missing(ref):
            later[(ref.module, ref.name)].add(ref.file)

    by_module: dict[str, dict[str, set[str]]] = defaultdict(dict)
    names: dict[tuple[str, str | None], set[str]] = {}
    for key, modules in blocked_by.items():
        status = census.statuses[key]
        if status.startswith('no module '):
            missing = status.removeprefix('no module ')
            module, name = key
            shown = '(the module itself)' if name is None or f'{module}.{name}' == missing else name
            by_module[missing].setdefault(shown, set()).update(modules)
        else:
            names[key] = modules
    lines = []
    if by_module:
        lines.append('missing rqfast modules (test modules whose import they stop, the names the suite wants):')
        for missing, wanted in sorted(by_module.items(), key=lambda kv: -len(set().union(*kv[1].values()))):
            modules = set().union(*wanted.values())
            every = ' (via tests/__init__.py: every module)' if _via_init(census, missing) else ''
            lines.append(f'  {missing}: {count(modules)}{every}')
            lines.append(f'      wants: {", ".join(sorted(wanted))}')
    if names:
        lines.append('missing names in rqfast modules that exist (test modules whose import they stop):')
        for (module, name), modules in sorted(names.items(), key=lambda kv: (-len(kv[1]), kv[0][0], kv[0][1] or '')):
            status = census.statuses[(module, name)]
            detail = '' if status == 'no name' else f' [{status}]'
            lines.append(f'  from {module} import {name}{detail}: {count(modules)}: {", ".join(sorted(modules))}')
    if later:
        lines.append('missing, imported inside tests (fail those tests, not the module):')
        for (module, name), files in sorted(later.items()):
            lines.append(f'       from {module} import {name}: {", ".join(sorted(files))}')
    lines.append('what each test module lacks to be imported:')
    for test_module in test_modules:
        wanted: dict[str, list[str]] = defaultdict(list)
        for ref in census.blockers(test_module):
            status = census.statuses[(ref.module, ref.name)]
            target = status.removeprefix('no module ') if status.startswith('no module ') else ref.module
            if ref.name and f'{ref.module}.{ref.name}' != target and ref.name not in wanted[target]:
                wanted[target].append(ref.name)
            else:
                wanted.setdefault(target, [])
        text = '; '.join(f'{t} ({", ".join(sorted(n))})' if n else t for t, n in sorted(wanted.items()))
        lines.append(f'  {test_module}: {text or "nothing"}')
    unblocked = [m for m in test_modules if not census.blockers(m)]
    lines.append(f'test modules whose rqfast imports all resolve: {len(unblocked)} of {len(test_modules)}')
    ready = [m for m in test_modules if census.blockers(m) and _only_init(census, m)]
    if ready:
        lines.append(f'  blocked only by tests/__init__.py and helpers: {", ".join(ready)}')
    return lines


def _via_init(census: Census, missing_module: str) -> bool:
    return any(
        r.file == f'{LOCAL}/__init__.py' and census.missing(r) == f'no module {missing_module}' for r in census.refs
    )


def _only_init(census: Census, test_module: str) -> bool:
    return all(not r.file.endswith(f'/{test_module}.py') for r in census.blockers(test_module))
