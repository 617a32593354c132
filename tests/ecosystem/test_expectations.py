"""The judge of the ecosystem suites, held by tests/ecosystem/expectations.txt (`python -m tests.ecosystem`
checks a run against that file; this checks the file against the judge):

- with the switch on (`as-rq`), every test that passes on rq passes: nothing listed under as-rq that is not
  listed under rq, for django-rq, rq-dashboard and rq-scheduler;
- with only django-rq's WORKER_CLASS switched (`worker-class`), nothing is lost but the tests that assert rq's
  own default classes, each named here with its reason.
"""

from __future__ import annotations

from pathlib import Path

try:
    from tests.ecosystem.expectations import parse_expectations
    from tests.ecosystem.suites import SUITES
except ImportError:  # pytest run from elsewhere: tests/ itself is on sys.path
    from ecosystem.expectations import parse_expectations  # type: ignore[no-redef]
    from ecosystem.suites import SUITES  # type: ignore[no-redef]

EXPECTATIONS = Path(__file__).resolve().parent / 'expectations.txt'

# django-rq's tests that assert rq's own default classes: with WORKER_CLASS = rqfast's they cannot pass.
ASSERT_RQS_DEFAULT_CLASSES = {
    'tests/tests.py::WorkerClassTest::test_default_worker_class': (
        "asserts get_worker() is an instance of rq's own Worker; WORKER_CLASS names rqfast's"
    ),
}


def _sections() -> dict[tuple[str, str], dict[str, object]]:
    return parse_expectations(EXPECTATIONS.read_text())  # type: ignore[return-value]


def test_every_suite_and_mode_has_a_section() -> None:
    sections = _sections()
    for suite in SUITES.values():
        if suite.source is not None:
            for mode in suite.modes:
                assert (suite.name, mode) in sections or mode != 'rq', f'[{suite.name} {mode}] missing'


def test_with_the_switch_on_no_test_that_passes_on_rq_is_lost() -> None:
    sections = _sections()
    for suite in SUITES.values():
        if 'as-rq' in suite.modes:
            on_rq = set(sections.get((suite.name, 'rq'), {}))
            lost = set(sections.get((suite.name, 'as-rq'), {})) - on_rq
            assert not lost, f'{suite.name}: pass on rq, not with RQFAST_AS_RQ=1: {sorted(lost)}'


def test_with_only_worker_class_switched_only_tests_of_rqs_default_classes_are_lost() -> None:
    sections = _sections()
    on_rq = set(sections.get(('django-rq', 'rq'), {}))
    lost = set(sections.get(('django-rq', 'worker-class'), {})) - on_rq
    assert lost <= set(ASSERT_RQS_DEFAULT_CLASSES), sorted(lost - set(ASSERT_RQS_DEFAULT_CLASSES))
