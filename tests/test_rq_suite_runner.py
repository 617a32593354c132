"""The RQ-suite runner's own parts (tests/rq_suite): rewriting, expectations, outcomes, the injected site
module. Nothing here downloads RQ or runs its suite (that is `python -m tests.rq_suite`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

try:
    from tests.rq_suite import census, expectations, rewrite, runner
    from tests.rq_suite.injected import rq_suite_procs
except ImportError:  # pytest run as `pytest` from elsewhere: tests/ itself is on sys.path
    from rq_suite import census, expectations, rewrite, runner  # type: ignore[no-redef]
    from rq_suite.injected import rq_suite_procs  # type: ignore[no-redef]

Outcome = expectations.Outcome


# ---------------------------------------------------------------------------------------------- rewriting


def rewritten(source: str) -> tuple[str, rewrite.RewriteStats]:
    stats = rewrite.RewriteStats()
    return rewrite.rewrite_source(textwrap.dedent(source), stats), stats


def test_imports_are_rewritten() -> None:
    new, stats = rewritten("""\
        import rq
        import rq.job
        from rq import Queue, get_current_job
        from rq.worker import Worker as W
        from rq.cli.helpers import (
            CliConfig,
            parse_schedule,
        )
        """)
    assert new == textwrap.dedent("""\
        import rqfast
        import rqfast.job
        from rqfast import Queue, get_current_job
        from rqfast.worker import Worker as W
        from rqfast.cli.helpers import (
            CliConfig,
            parse_schedule,
        )
        """)
    assert (stats.import_names, stats.code_names) == (5, 0)


def test_attribute_uses_follow_the_import() -> None:
    new, stats = rewritten("""\
        import rq.worker
        w = rq.worker.Worker(['q'])
        mock.patch.object(rq.job.Job, 'fetch')
        """)
    assert 'w = rqfast.worker.Worker' in new
    assert 'mock.patch.object(rqfast.job.Job' in new
    assert (stats.import_names, stats.code_names) == (1, 2)


def test_dotted_paths_in_strings_are_rewritten() -> None:
    new, stats = rewritten("""\
        @mock.patch('rq.worker.logger.info')
        @patch("rq.timeouts.signal")
        def test(self):
            CliConfig(death_penalty_class='rq.abcd')
            runner.invoke(main, ['-S', 'rq.serializers.JSONSerializer', '--serializer rq.serializer.X'])
            assert 'rq.timeouts.JobTimeoutException' in job.exc_info
            path = f'rq.job.{name}'
        """)
    for path in ('rqfast.worker.logger.info', 'rqfast.timeouts.signal', 'rqfast.abcd', 'rqfast.serializer.X'):
        assert path in new
    assert "'rqfast.serializers.JSONSerializer'" in new
    assert "'rqfast.timeouts.JobTimeoutException'" in new
    assert "f'rqfast.job.{name}'" in new
    assert 'rq.' not in new
    assert stats.strings[('rq.worker.logger.info', 'rqfast.worker.logger.info')] == 1


def test_import_of_the_package_in_a_string_is_rewritten() -> None:
    new, _ = rewritten("""\
        subprocess.run([sys.executable, '-c', 'import rq'])
        subprocess.run([sys.executable, '-c', 'import rq; print(rq.__version__)'])
        text = 'import rqworker'
        """)
    assert "'import rqfast'" in new
    assert "'import rqfast; print(rqfast.__version__)'" in new
    assert "'import rqworker'" in new


def test_redis_keys_file_names_commands_and_other_names_stay() -> None:
    source = """\
        key = 'rq:queue:default'
        self.assertEqual(registry.key, f'rq:scheduler:{name}')
        pid = self.tmpdir.join('rq.pid')
        SENTINEL_FILE = '/tmp/rq-tests.txt'
        subprocess.check_call(['rqworker', '-u', url, '-b'])
        barq = Queue('bar')
        rq_job = 'x.rq.y'  # rq.worker in a comment stays
        url = 'redis://rq.example.com/0'
        """
    new, stats = rewritten(source)
    assert new == textwrap.dedent(source)
    assert stats.changes == 0
    assert stats.kept_strings == {'rq.pid': 1}
    assert stats.redis_keys == 2


def test_rewritten_suite_helpers_still_compile() -> None:
    new, _ = rewritten("""\
        def find_empty_redis_database(ssl=False):
            '''Tries rq.utils first.'''
            from rq.utils import get_version
            return get_version
        """)
    compile(new, 'helper.py', 'exec')
    assert 'from rqfast.utils import get_version' in new
    assert "'''Tries rqfast.utils first.'''" in new


# ---------------------------------------------------------------------------------------------- expectations


EXPECTED = """\
# a comment

tests/test_job.py::TestJob::test_a  # ImportError: cannot import name 'X' from 'rqfast.utils'
tests/test_job.py::TestJob::test_b  # RQ internal rqfast does not have: Job.dependencies_are_met
tests/test_queue.py::TestQueue::test_c[rq.job.Job]  # AttributeError: 'Queue' object has no attribute 'x'
"""


def test_parse_expectations() -> None:
    entries = expectations.parse_expectations(EXPECTED)
    assert entries == {
        'tests/test_job.py::TestJob::test_a': "ImportError: cannot import name 'X' from 'rqfast.utils'",
        'tests/test_job.py::TestJob::test_b': 'RQ internal rqfast does not have: Job.dependencies_are_met',
        'tests/test_queue.py::TestQueue::test_c[rq.job.Job]': "AttributeError: 'Queue' object has no attribute 'x'",
    }
    assert expectations.parse_expectations(expectations.format_expectations(entries, 'header\nlines')) == entries


@pytest.mark.parametrize(
    'text',
    ['tests/test_job.py::T::test_a', 'tests/test_job.py::T::test_a  #   ', 'tests/test_job.py::T::a  # x\n' * 2],
)
def test_entries_need_a_reason_and_appear_once(text: str) -> None:
    with pytest.raises(ValueError, match='line'):
        expectations.parse_expectations(text)


def test_a_listed_test_that_passes_and_an_unlisted_failure_are_mismatches() -> None:
    expected = expectations.parse_expectations(EXPECTED)
    outcomes = [
        Outcome('tests/test_job.py::TestJob::test_a', 'passed'),  # listed, passes
        Outcome('tests/test_job.py::TestJob::test_b', 'failed', 'AssertionError'),  # listed, fails: fine
        Outcome('tests/test_job.py::TestJob::test_d', 'error', 'ImportError: x'),  # unlisted, fails
        Outcome('tests/test_job.py::TestJob::test_e', 'timeout', 'Timeout'),  # unlisted, hung
        Outcome('tests/test_job.py::TestJob::test_f', 'skipped', 'slow'),  # skipped: never a mismatch
    ]
    result = expectations.compare(outcomes, expected, ['test_job'])
    assert [o.nodeid for o in result.unexpected_passes] == ['tests/test_job.py::TestJob::test_a']
    assert [o.nodeid.rsplit('::')[-1] for o in result.unexpected_failures] == ['test_d', 'test_e']
    assert [o.nodeid.rsplit('::')[-1] for o in result.expected_failures] == ['test_b']
    assert result.missing == []  # test_queue did not run: its entry is not checked
    assert not result.ok


def test_listed_tests_must_have_run_and_matching_outcomes_are_ok() -> None:
    expected = expectations.parse_expectations(EXPECTED)
    outcomes = [Outcome('tests/test_job.py::TestJob::test_a', 'error', 'ImportError: x')]
    result = expectations.compare(outcomes, expected, ['test_job'])
    assert result.missing == ['tests/test_job.py::TestJob::test_b']
    assert not result.ok
    outcomes.append(Outcome('tests/test_job.py::TestJob::test_b', 'crashed', 'exit code -9'))
    assert expectations.compare(outcomes, expected, ['test_job']).ok


def test_update_keeps_reasons_and_other_modules() -> None:
    expected = expectations.parse_expectations(EXPECTED)
    outcomes = [
        Outcome('tests/test_job.py::TestJob::test_a', 'failed', "ImportError: cannot import name 'Y'"),
        Outcome('tests/test_job.py::TestJob::test_b', 'failed', 'AssertionError: 1 != 2'),
        Outcome('tests/test_job.py::TestJob::test_new', 'error', "AttributeError: 'Job' object has no attribute 'z'"),
        Outcome('tests/test_job.py::TestJob::test_ok', 'passed'),
        Outcome('tests/test_job.py::TestJob::test_skip', 'skipped', 'Slow tests disabled'),
    ]
    entries = expectations.updated_expectations(outcomes, expected, ['test_job'])
    assert entries == {
        # the same kind of error: the listed reason stays
        'tests/test_job.py::TestJob::test_a': "ImportError: cannot import name 'X' from 'rqfast.utils'",
        # written by a person: stays
        'tests/test_job.py::TestJob::test_b': 'RQ internal rqfast does not have: Job.dependencies_are_met',
        'tests/test_job.py::TestJob::test_new': "AttributeError: 'Job' object has no attribute 'z'",
        'tests/test_queue.py::TestQueue::test_c[rq.job.Job]': "AttributeError: 'Queue' object has no attribute 'x'",
    }
    changed = [Outcome('tests/test_job.py::TestJob::test_a', 'failed', 'AssertionError: 3 != 4')]
    entries = expectations.updated_expectations(changed, expected, ['test_job'])
    assert entries['tests/test_job.py::TestJob::test_a'] == 'AssertionError: 3 != 4'
    assert 'tests/test_job.py::TestJob::test_b' not in entries  # did not run in a module that ran: gone


def test_reasons_are_one_stable_line() -> None:
    error = "ImportError: cannot import name 'get_version' from 'rqfast.utils'"
    assert expectations.one_line(f'{error} (/tmp/x/rqfast/utils.py)\nmore lines\n') == error
    line = expectations.one_line('KeyError: <Job 0x7f12ab34cd56 7c1e4b2a-0d3f-4c8e-9a1b-2f3e4d5c6b7a>  x')
    assert line == 'KeyError: <Job 0x… <uuid>> x'
    assert len(expectations.one_line('E' * 500)) == expectations.MAX_REASON
    assert expectations.one_line('/tmp/w/tests/x.py:3: boom', {'/tmp/w/': ''}) == 'tests/x.py:3: boom'


def test_the_committed_expectations_files_parse() -> None:
    for path in (runner.EXPECTATIONS, runner.REFERENCE_EXPECTATIONS):
        entries = expectations.parse_expectations(path.read_text())
        assert all(n.startswith('tests/test_') and '.py::' in n for n in entries), path


# ---------------------------------------------------------------------------------------------- outcomes


def report(when: str, outcome: str, message: str = '', xfail: bool = False) -> dict[str, object]:
    return {'when': when, 'outcome': outcome, 'message': message, 'xfail': xfail, 'duration': 0.5}


@pytest.mark.parametrize(
    ('reports', 'kind', 'reason'),
    [
        ([report('setup', 'passed'), report('call', 'passed'), report('teardown', 'passed')], 'passed', ''),
        ([report('setup', 'passed'), report('call', 'failed', 'AssertionError: no'), report('teardown', 'passed')],
         'failed', 'AssertionError: no'),
        ([report('setup', 'failed', 'ImportError: x'), report('teardown', 'passed')], 'error', 'ImportError: x'),
        ([report('setup', 'passed'), report('call', 'passed'), report('teardown', 'failed', 'OSError: y')],
         'error', 'OSError: y'),
        ([report('setup', 'skipped', 'Slow tests disabled'), report('teardown', 'passed')], 'skipped',
         'Slow tests disabled'),
        ([report('setup', 'passed'), report('call', 'skipped', 'reason', xfail=True)], 'xfailed', 'reason'),
        ([report('setup', 'passed')], 'crashed', 'ended before its call phase reported'),
    ],
)  # fmt: skip
def test_outcome_from_phase_reports(reports: list[dict[str, object]], kind: str, reason: str) -> None:
    outcome = runner.outcome_from_reports('tests/test_x.py::test', reports, {})
    assert (outcome.outcome, outcome.reason) == (kind, reason)


def test_feature_modules() -> None:
    modules = ['test_cron', 'test_cron_job', 'test_cli', 'test_job', 'test_worker_pool', 'test_worker']
    features = ['test_cron', 'test_cron_job', 'test_cli', 'test_worker_pool']
    assert [m for m in modules if runner.is_feature_module(m)] == features


def test_census_reads_every_import_and_where_it_runs() -> None:
    refs = census.imports_of(
        textwrap.dedent("""\
            from rqfast.utils import get_version, now
            import rqfast.job
            def f():
                from rqfast import Retry
            class T:
                from rqfast.queue import Queue
            """),
        'tests/x.py',
    )
    assert sorted((r.module, r.name or '', r.at_import) for r in refs) == [
        ('rqfast', 'Retry', False),  # inside a function: fails that test only
        ('rqfast.job', '', True),
        ('rqfast.queue', 'Queue', True),  # a class body runs at import
        ('rqfast.utils', 'get_version', True),
        ('rqfast.utils', 'now', True),
    ]


# ---------------------------------------------------------------------------------------------- injected site


def test_site_module_redirects_redis_and_blocks_rq(tmp_path: Path) -> None:
    """What every process of a run gets: no connection can reach port 6379 here, and rq cannot be imported."""
    code = textwrap.dedent("""\
        import json, redis, redis.connection as rc
        out = {'default': rc.Connection().port, 'url': redis.Redis.from_url('redis://127.0.0.1:6379/4')
               .connection_pool.make_connection().port, 'other': rc.Connection(port=6380).port}
        conn = rc.Connection()
        conn.port = 6379
        try:
            conn.connect()
        except redis.ConnectionError as exc:
            out['refused'] = str(exc)
        try:
            import rq
        except ModuleNotFoundError as exc:
            out['rq'] = str(exc)
        print(json.dumps(out))
        """)
    env = {
        **os.environ,
        'PYTHONPATH': str(runner.INJECTED),
        'RQ_SUITE_REDIS_PORT': '1234',
        'RQ_SUITE_BLOCK_RQ': '1',
    }
    done = subprocess.run([sys.executable, '-c', code], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out['default'], out['url'], out['other']) == (1234, 1234, 6380)
    assert 'refusing to connect to localhost:6379' in out['refused']
    assert 'RQ is blocked' in out['rq']


# ---------------------------------------------------------------------------------------------- a module run

SYNTHETIC = """\
import multiprocessing
from pathlib import Path
import os
import signal
import time


def test_a_passes():
    pass


def test_b_hangs_where_pytest_timeout_cannot_stop_it():
    signal.signal(signal.SIGALRM, signal.SIG_IGN)  # as a job's death penalty takes SIGALRM over
    time.sleep(60)


def test_c_passes():
    pass


def test_d_leaves_a_process_running():
    multiprocessing.Process(target=time.sleep, args=(60,)).start()


def test_e_ends_the_pytest_process():
    os._exit(3)


def test_f_hangs_until_pytest_timeout():
    time.sleep(60)


def test_g_fails():
    assert 1 == 2


def test_h_fails_the_first_time():
    flag = Path(__file__).with_name('ran-once')
    if not flag.exists():
        flag.write_text('')
        assert False, 'first time'
"""


@pytest.mark.skipif(not Path('/proc/self/environ').exists(), reason='the runner finds processes through /proc')
def test_one_hang_or_crash_costs_one_test_and_leftover_processes_are_killed(tmp_path: Path) -> None:
    tests = tmp_path / 'tests'
    tests.mkdir()
    (tests / '__init__.py').write_text('')
    (tests / 'test_synthetic.py').write_text(SYNTHETIC)
    (tests / 'helper.py').write_text('from rqfast.no_such_module import x\n')
    (tests / 'test_broken.py').write_text('from tests.helper import x\n\n\ndef test_x():\n    pass\n')
    (tmp_path / 'pytest.ini').write_text(runner.PYTEST_INI)
    marker = f'unit-{os.getpid()}'
    env = {k: v for k, v in os.environ.items() if not k.startswith(('PYTEST_', 'RQ_SUITE'))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(runner.INJECTED), str(tmp_path), str(runner.ROOT)]),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD='1',
        RQ_SUITE_MARKER=marker,
    )
    suite = runner.Suite('rqfast', tmp_path, tmp_path, env, marker, 1, time.monotonic() + 120, hard_grace=1)

    result = runner.ModuleRunner(suite, 'test_synthetic', None).run()

    outcomes = {o.nodeid.rsplit('::', 1)[-1]: (o.outcome, o.reason) for o in result.outcomes}
    assert outcomes == {
        'test_a_passes': ('passed', ''),
        'test_b_hangs_where_pytest_timeout_cannot_stop_it': (
            'timeout',
            'Timeout: still running 2 s after it started (pytest-timeout did not stop it); killed',
        ),
        'test_c_passes': ('passed', ''),
        'test_d_leaves_a_process_running': ('passed', ''),
        'test_e_ends_the_pytest_process': ('crashed', 'the pytest process ended (exit code 3) during this test'),
        'test_f_hangs_until_pytest_timeout': ('failed', 'Failed: Timeout (>1.0s) from pytest-timeout.'),
        'test_g_fails': ('failed', 'assert 1 == 2'),
        'test_h_fails_the_first_time': ('failed', 'AssertionError: first time'),
    }
    assert result.restarts == 2
    assert [test.rsplit('::', 1)[-1] for test, _ in result.leaks] == ['test_d_leaves_a_process_running']
    assert rq_suite_procs.marked_processes(marker) == []

    # Listed: b, e, f, g. Not listed: h, which fails, is rerun once, passes: flaky, and counted as passed.
    expected = {o.nodeid: 'listed' for o in result.outcomes if o.failed and 'test_h' not in o.nodeid}
    runner.rerun_unexpected(suite, None, [result], expected)
    assert [(test.rsplit('::', 1)[-1], first, again) for test, first, again in result.flaky] == [
        ('test_h_fails_the_first_time', 'failed', 'passed')
    ]
    assert expectations.compare(result.outcomes, expected, ['test_synthetic']).ok

    broken = runner.ModuleRunner(suite, 'test_broken', None).run()
    assert [(o.nodeid, o.outcome, o.reason) for o in broken.outcomes] == [
        (
            'tests/test_broken.py',
            'error',
            "ModuleNotFoundError: No module named 'rqfast.no_such_module' "
            '(tests/helper.py:1: from rqfast.no_such_module import x)',
        )
    ]
