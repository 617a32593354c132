"""rqfast serving `import rq` (the switch): `install_as_rq()`, whether it is on, and the logger names.

The switch itself is the top-level module `_rqfast_as_rq` (outside this package, so that the wheel's
`rqfast-as-rq.pth` can turn it on at interpreter start without importing rqfast); docs/switching.md
says what it changes. While it is on, rqfast logs under RQ's logger names (`rq.worker`, `rq.queue`...),
which RQ users' logging settings and integrations (Sentry ignores `rq.worker`) already name.
"""

from __future__ import annotations

import os
from typing import Any

import _rqfast_as_rq as switch

from .version import VERSION

AsRqRefused = switch.AsRqRefused
ENV_VAR = switch.ENV_VAR


def install_as_rq() -> None:
    """Make `import rq` (every `rq.<module>`) give rqfast in this process and the processes it starts
    (it sets RQFAST_AS_RQ=1 in os.environ), as `pymysql.install_as_MySQLdb()` does for MySQLdb.

    Call it before anything imports rq (first thing in manage.py, a WSGI file, a launcher); with rq's own
    modules already imported it raises AsRqRefused, naming the first, and changes nothing. Setting
    RQFAST_AS_RQ=1 in the environment does the same at interpreter start, without code changes.
    """
    switch.install('install_as_rq()')


def serving_as_rq() -> bool:
    """Whether `import rq` gives rqfast in this process."""
    return switch.installed()


def logger_name(suffix: str = '') -> str:
    """`rqfast.<suffix>`, or RQ's `rq.<suffix>` while rqfast serves `import rq` (decided when asked:
    a module's logger when it is imported, a worker's `log` when the worker is made)."""
    root = 'rq' if switch.installed() else 'rqfast'
    return f'{root}.{suffix}' if suffix else root


class LazyLogger:
    """`logging.getLogger(name)` once first used (its name decided when made, as a module's logger is):
    a spawned child whose job logs nothing never imports logging (with re, traceback, threading...)."""

    __slots__ = ('name', '_logger')

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return getattr(self._logger, attribute)


def lazy_logger(suffix: str = '') -> Any:
    """The logger `logger_name(suffix)`, imported and made when first used (LazyLogger)."""
    return LazyLogger(logger_name(suffix))


def honour_environment() -> None:
    """RQFAST_AS_RQ set where no `.pth` turned it on (rqfast run from a checkout): on at `import rqfast`.

    A bad value is a ValueError, and rq's own modules already imported an AsRqRefused, as at interpreter
    start: the process asked for the switch and does not get it silently.
    """
    if not switch.installed() and switch.switch_value():
        switch.install('import rqfast')


class SwitchStatus:
    """What `rqfast doctor` reports about the switch in a process. A plain class: a NamedTuple's class
    creation would cost every spawned child's import of this module (it decides the logger names)."""

    __slots__ = ('on', 'how', 'environment', 'served_rq_version', 'rqfast_version', 'pth_files', 'rq_modules_loaded')

    def __init__(
        self,
        on: bool,
        how: str,  # 'environment' (the .pth, at interpreter start), 'install_as_rq()', 'import rqfast', ''
        environment: str,  # RQFAST_AS_RQ as the environment has it ('' unset)
        served_rq_version: str,  # `rq.version.VERSION` while on
        rqfast_version: str,
        pth_files: tuple[str, ...],  # the rqfast-as-rq.pth files on this interpreter's site paths
        rq_modules_loaded: tuple[str, ...],  # rq's own modules imported in this process (none while on)
    ) -> None:
        self.on, self.how, self.environment = on, how, environment
        self.served_rq_version, self.rqfast_version = served_rq_version, rqfast_version
        self.pth_files, self.rq_modules_loaded = pth_files, rq_modules_loaded

    def __repr__(self) -> str:
        fields = ', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)
        return f'SwitchStatus({fields})'


def status() -> SwitchStatus:
    return SwitchStatus(
        on=switch.installed(),
        how=switch.how(),
        environment=os.environ.get(ENV_VAR, ''),
        served_rq_version=switch.served_rq_version(),
        rqfast_version=VERSION,
        pth_files=tuple(_pth_files()),
        rq_modules_loaded=tuple(switch.rq_modules_loaded()),
    )


def _pth_files() -> list[str]:
    """rqfast-as-rq.pth in the folders whose .pth files `site` reads (site-packages, the user's)."""
    import site  # (loaded at start-up already, but for `python -S`)

    folders = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    return [os.path.join(f, switch.PTH_NAME) for f in folders if os.path.isfile(os.path.join(f, switch.PTH_NAME))]


# RQFAST_AS_RQ without the .pth (a checkout on PYTHONPATH): on before any rqfast module names its logger.
honour_environment()
