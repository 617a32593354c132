"""--baseline REV: rqfast as of a git revision, measured in the same run as the working tree's rqfast.

REV's rqfast/ and lua/ are extracted into a temporary directory with `git archive` (the repository,
its index and its working tree are not touched) and removed at the end. Only those two: the bench,
its job functions and the tests stay the working tree's, so `bench.jobs.noop` is the same function
for every column. The bench's own process never imports the baseline: each baseline run, in its
fresh fork, drops the working tree's rqfast from sys.modules and imports REV's instead
(Lib.activate, libs.import_from), and every run checks where its rqfast came from.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.child import MeasurementError, NotAvailable, run_in_child
from bench.libs import Lib

_EXTRACTED = ('rqfast', 'lua')  # rqfast finds its scripts in rqfast/lua/ or, in a checkout, <root>/lua/


@dataclass(frozen=True)
class Baseline:
    rev: str  # as given on the command line
    sha: str
    short: str
    root: Path  # holds REV's rqfast/ (and lua/)

    @property
    def label(self) -> str:
        return f'rqfast@{self.short}'

    def lib(self) -> Lib:
        described = f'rqfast as of {self.rev} = {self.sha}, extracted to {self.root}, imported only in its own runs'
        return Lib(self.label, 'rqfast', None, None, root=self.root, deferred=True, described=described)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(['git', '-C', str(repo), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f'--baseline: git {" ".join(args)} failed: {done.stderr.strip() or done.returncode}')
    return done.stdout.strip()


@contextmanager
def materialised(repo: Path, rev: str) -> Iterator[Baseline]:
    """REV's rqfast/ and lua/ in a temporary directory, for the duration of the block."""
    sha = _git(repo, 'rev-parse', '--verify', '--end-of-options', f'{rev}^{{commit}}')
    short = _git(repo, 'rev-parse', '--short', sha)
    top = set(_git(repo, 'ls-tree', '--name-only', sha).splitlines())
    if 'rqfast' not in top:
        raise SystemExit(f'--baseline {rev}: {short} has no rqfast/ directory')
    paths = [name for name in _EXTRACTED if name in top]
    with tempfile.TemporaryDirectory(prefix=f'bench-baseline-{short}-') as tmp:
        archive = subprocess.run(['git', '-C', str(repo), 'archive', '--format=tar', sha, *paths], capture_output=True)
        if archive.returncode != 0:
            raise SystemExit(f'--baseline: git archive {short} failed: {archive.stderr.decode().strip()}')
        subprocess.run(['tar', '-x', '-C', tmp], input=archive.stdout, check=True)
        yield Baseline(rev, sha, short, Path(tmp).resolve())


def working_tree_fact(repo: Path) -> str:
    """What the working-tree column runs: HEAD, plus whether rqfast/ or lua/ have uncommitted changes."""
    head = _git(repo, 'rev-parse', '--short', 'HEAD')
    dirty = _git(repo, 'status', '--porcelain', '--', *_EXTRACTED)
    return f'HEAD {head}' + (' + uncommitted changes in rqfast/ or lua/' if dirty else ', rqfast/ and lua/ unchanged')


def probe(lib: Lib, timeout: float = 120) -> str | None:
    """Import the baseline once in a throwaway fork (never here): None if it works, else why its column is empty."""

    def where() -> str:
        module = lib.activate().module
        return str(getattr(module, '__file__', '?'))

    try:
        origin = run_in_child(where, timeout)
    except NotAvailable as exc:
        return f'n/a: {exc}'
    except MeasurementError as exc:
        return f'error: {exc}'
    print(f'baseline {lib.label}: rqfast imports from {origin}', file=sys.stderr, flush=True)
    return None


def assert_not_imported_here(root: Path) -> None:
    """The bench's own process must hold no module from the baseline (it would shadow the working tree's)."""
    files = {name: str(getattr(module, '__file__', None) or '') for name, module in list(sys.modules.items())}
    stray = [name for name, origin in files.items() if origin.startswith(str(root))]
    if stray:
        raise AssertionError(f'the bench process imported the baseline: {", ".join(sorted(stray))}')
