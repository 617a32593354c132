"""The ecosystem suites `python -m tests.ecosystem` runs: each project's own tests, from its release or its
repository, in a virtualenv of its own with the real packages from the package index.

A suite runs in modes, compared with the same suite on rq (the judge: every test that passes on rq passes):
- `rq`: rq 3.0 alone (rqfast installed beside it, its switch off): the baseline;
- `as-rq`: RQFAST_AS_RQ=1 in the environment: `import rq` is rqfast in every process of the run;
- `worker-class` (django-rq): `RQ['WORKER_CLASS'] = 'rqfast.worker.Worker'`, rq itself in charge of the rest
  (the mixed install most users try first).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GitHubArchive:
    """A repository's tree at one commit (the release's tests are not in its sdist)."""

    repo: str
    commit: str

    @property
    def url(self) -> str:
        return f'https://codeload.github.com/{self.repo}/tar.gz/{self.commit}'

    @property
    def filename(self) -> str:
        return f'{self.repo.replace("/", "+")}-{self.commit}.tar.gz'


@dataclass(frozen=True)
class Sdist:
    """A release's sdist from the package index (pip download), checked against its sha256."""

    name: str
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        return f'{self.name.replace("-", "_")}-{self.version}.tar.gz'


@dataclass(frozen=True)
class Suite:
    name: str
    requirements: list[str]
    source: GitHubArchive | Sdist | None  # None: rqfast's own tests/ecosystem/
    copy: list[str]  # what to take from the source tree into the run's folder
    pytest_args: list[str]
    modes: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)  # written into the run's folder
    mode_env: dict[str, dict[str, str]] = field(default_factory=dict)  # extra environment per mode
    note: str = ''


# redis-py 6.4, as in the issue's trials: django-rq's test helper compares connection kwargs, and redis-py 7+'s
# retry objects do not compare equal (30 of its tests fail on rq itself).
_TEST_TOOLS = ['redis[hiredis]==6.4.0', 'pytest>=8', 'pytest-timeout']

# django-rq 4.2.0's sdist has no tests: its repository's master at the newest commit available when this
# runner was written (2026-05-15; 4.2.0's own commit was not yet public), which tests 4.1 and 4.2's API.
DJANGO_RQ = Suite(
    name='django-rq',
    requirements=[
        'rq==3.0.0',
        'django-rq==4.2.0',
        'django==5.2.19',
        'django-redis',
        'pyyaml',
        'prometheus_client',
        'pytest-django',
        *_TEST_TOOLS,
    ],
    source=GitHubArchive('rq/django-rq', '9915b336ae2ec6b825c84670b24bbc9f38fb5ff8'),
    copy=['tests'],
    pytest_args=['tests'],
    modes=('rq', 'as-rq', 'worker-class'),
    files={
        # django-rq's pyproject [tool.pytest.ini_options], with the settings module of the mode
        'pytest.ini': (
            '[pytest]\nDJANGO_SETTINGS_MODULE = ecosystem_settings\npythonpath = .\ntestpaths = tests\n'
            'python_files = test_*.py tests.py\n'
        ),
        'ecosystem_settings.py': (
            "# django-rq's test settings; the worker-class mode names rqfast's worker (tests/ecosystem)\n"
            'import os\n'
            'from tests.settings import *  # noqa: F403\n'
            "# the views' tests log a user in: a fast hasher (Django's PBKDF2 is most of their time otherwise)\n"
            'PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]\n'
            'if os.environ.get("RQFAST_ECOSYSTEM_WORKER_CLASS"):\n'
            '    RQ = {**RQ, "WORKER_CLASS": os.environ["RQFAST_ECOSYSTEM_WORKER_CLASS"]}  # noqa: F405\n'
        ),
    },
    mode_env={'worker-class': {'RQFAST_ECOSYSTEM_WORKER_CLASS': 'rqfast.worker.Worker'}},
)

RQ_DASHBOARD = Suite(
    name='rq-dashboard',
    requirements=['rq==3.0.0', 'rq-dashboard==0.9.0', 'six', *_TEST_TOOLS],  # its web.py imports six
    source=Sdist('rq-dashboard', '0.9.0', '33472117abe47b793d608e60fff5d29ed84e8e5a2c13c793ea3dbfdbde52dfb6'),
    copy=['tests'],
    pytest_args=['tests'],
    modes=('rq', 'as-rq'),
)

# rq-scheduler 0.14.0's sdist has no tests: its repository at 0.14.0's release (its last commit since only
# adds SECURITY.md).
RQ_SCHEDULER = Suite(
    name='rq-scheduler',
    requirements=['rq==3.0.0', 'rq-scheduler==0.14.0', *_TEST_TOOLS],
    source=GitHubArchive('rq/rq-scheduler', '134c2eb1b8c65510bc1b8fdfdbe787decef890f2'),
    copy=['tests'],
    pytest_args=['tests'],
    modes=('rq', 'as-rq'),
)

# rqfast's own tests of the ecosystem (tests/ecosystem/test_*.py): Sentry, OpenTelemetry, a Django project
# with commit modes, job code and tools written for rq. Each test sets the switch itself where it needs it.
PROJECT = Suite(
    name='project',
    requirements=[
        'rq==3.0.0',
        'django-rq==4.2.0',
        'django==5.2.19',
        'sentry-sdk==2.75.0',
        'opentelemetry-instrumentation-rq==0.1.4',
        'opentelemetry-sdk',
        'fakeredis[lua]>=2.26',  # tests/conftest.py's fixtures
        'psutil',
        *_TEST_TOOLS,
    ],
    source=None,
    copy=[],
    pytest_args=['tests/ecosystem/project'],
    modes=('project',),
)

SUITES = {suite.name: suite for suite in (DJANGO_RQ, RQ_DASHBOARD, RQ_SCHEDULER, PROJECT)}
