"""bench --baseline: REV's rqfast is extracted on its own, imported only in a run's process, checked there.

No Redis and no timing: these check the plumbing (python -m bench --baseline REV runs the real thing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import baseline, counting, report
from bench.child import MeasurementError, run_in_child
from bench.libs import Lib, load_lib
from bench.runner import Cell, Participant
from bench.scenarios import Row, Scenario

REPO_ROOT = counting.REPO_ROOT


def _is_checkout() -> bool:
    if shutil.which('git') is None:
        return False
    done = subprocess.run(['git', '-C', str(REPO_ROOT), 'rev-parse', 'HEAD'], capture_output=True)
    return done.returncode == 0


pytestmark = pytest.mark.skipif(not _is_checkout(), reason='needs a git checkout of rqfast')


def _where(lib: Lib) -> str:
    module = lib.activate().module
    assert module is not None
    return str(module.__file__)


def test_baseline_is_extracted_alone_and_removed() -> None:
    with baseline.materialised(REPO_ROOT, 'HEAD') as old:
        assert (old.root / 'rqfast' / '__init__.py').is_file()
        assert not (old.root / 'bench').exists()  # the job functions stay the working tree's
        assert old.label == f'rqfast@{old.short}' and old.sha.startswith(old.short)
        root = old.root
    assert not root.exists()


def test_bad_revision_stops_the_bench() -> None:
    with pytest.raises(SystemExit, match='--baseline'):
        with baseline.materialised(REPO_ROOT, 'no-such-revision-anywhere'):
            pass


def test_each_column_imports_its_own_rqfast_and_the_bench_process_neither() -> None:
    ours = load_lib('rqfast', 'rqfast')
    ours.root = REPO_ROOT
    with baseline.materialised(REPO_ROOT, 'HEAD') as old:
        assert run_in_child(lambda: _where(old.lib()), timeout=60).startswith(str(old.root / 'rqfast'))
        assert run_in_child(lambda: _where(ours), timeout=60).startswith(str(REPO_ROOT / 'rqfast'))
        baseline.assert_not_imported_here(old.root)
        assert baseline.probe(old.lib()) is None


def test_a_mix_up_is_an_error(tmp_path: Path) -> None:
    # Nothing to import under tmp_path: rqfast comes from elsewhere, which must not become a figure.
    lost = Lib('rqfast@0000000', 'rqfast', None, None, root=tmp_path, deferred=True)
    with pytest.raises(MeasurementError, match='mix-up'):
        run_in_child(lambda: lost.activate(), timeout=60)
    claimed = load_lib('rqfast', 'rqfast')
    claimed.root = tmp_path
    with pytest.raises(MeasurementError, match='mix-up'):
        run_in_child(lambda: claimed.activate(), timeout=60)


def test_worker_subprocesses_see_the_baseline_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(['/tmp/baseline-dir', str(REPO_ROOT)]))
    paths = counting.subprocess_env('/tmp/writes')['PYTHONPATH'].split(os.pathsep)
    assert paths == [str(counting.HOOK_DIR), '/tmp/baseline-dir', str(REPO_ROOT)]
    lib = Lib('rqfast@0000000', 'rqfast', None, None, root=Path('/tmp/baseline-dir'), deferred=True)
    assert counting.module_args(lib) == ['--module', 'rqfast', '--root', '/tmp/baseline-dir']


def test_report_has_a_baseline_column_and_ratio() -> None:
    rq, ours, old = (Lib(label, 'rq', sys, None) for label in ('rq', 'rqfast', 'rqfast@abc1234'))
    people = [Participant('rq', rq), Participant('rqfast', ours)]
    people.append(Participant('rqfast@abc1234', old, baseline_of='rqfast'))
    row = Row('noop-simple', 'no-op jobs', 'jobs/s ↑')
    results = {'noop-simple': {'rq': Cell([100.0]), 'rqfast': Cell([300.0]), 'rqfast@abc1234': Cell([200.0])}}
    header, _, line = report.table([Scenario('noop-simple', [row], None)], results, people).splitlines()
    assert header.split(' | ')[-1] == 'rqfast / baseline |'
    assert line.split(' | ')[-3:] == ['200', '2.00×', '1.50× |']
