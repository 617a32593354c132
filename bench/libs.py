"""The libraries under test: RQ and rqfast behind one `Lib` handle, BullMQ when it is installed."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.child import MeasurementError, NotAvailable

WORKER_CLASSES = ('SimpleWorker', 'Worker', 'SpawnWorker')


@dataclass
class Lib:
    """One RQ-compatible library; every RQ-side scenario is written once against this handle."""

    label: str  # the column: "rq" or "rqfast"
    module_name: str  # what is imported: "rq", "rqfast" (or "rq" again in the self-test)
    module: ModuleType | None
    import_error: str | None
    root: Path | None = None  # the directory whose <module_name>/ every run must import (None: not checked)
    deferred: bool = False  # imported only in each run's own process (a --baseline), never in the bench's
    described: str | None = None  # the version fact, when the distribution's version would mislead

    def activate(self) -> Lib:
        """First thing in each run's process: import a deferred module there, and check where the module
        comes from, so that a column running the wrong code is an error, not a figure."""
        if self.deferred:
            assert self.root is not None
            try:
                self.module = import_from(self.module_name, self.root)
            except MeasurementError:
                raise
            except Exception as exc:  # a revision that does not import: its cells say n/a, as for rqfast's
                why = f'{type(exc).__name__}: {exc}'
                raise NotAvailable(f'import {self.module_name} from {self.root} failed: {why}') from None
        elif self.module is not None and self.root is not None:
            check_origin(self.module_name, self.root)
        return self

    def cls(self, name: str) -> Any:
        if self.module is None:
            raise NotAvailable(f'import {self.module_name} failed: {self.import_error}')
        found = getattr(self.module, name, None)
        if found is None:
            raise NotAvailable(f'{self.module_name} has no {name}')
        return found

    @property
    def version(self) -> str:
        if self.described:
            return self.described
        if self.module is None:
            return f'not importable ({self.import_error})'
        return _distribution_version(self.module_name) or str(getattr(self.module, '__version__', '?'))

    def queue_name(self) -> str:
        return f'bench_{self.label}'


def load_lib(label: str, module_name: str) -> Lib:
    """Import a library without letting its failure stop the bench."""
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # rqfast is being written: any import error just empties its column
        return Lib(label, module_name, None, f'{type(exc).__name__}: {exc}')
    logging.getLogger(module_name).setLevel(logging.WARNING)
    return Lib(label, module_name, module, None)


def import_from(module_name: str, root: Path) -> ModuleType:
    """Import `module_name` from `root`, in place of any copy already imported (a run's fresh process).

    Drops the module and its submodules from sys.modules, puts `root` first on sys.path and on the
    PYTHONPATH that subprocesses inherit (worker processes, spawned work horses), and checks the result.
    """
    for name in [name for name in sys.modules if name == module_name or name.startswith(module_name + '.')]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    os.environ['PYTHONPATH'] = os.pathsep.join(p for p in (str(root), os.environ.get('PYTHONPATH')) if p)
    importlib.invalidate_caches()
    module = importlib.import_module(module_name)
    check_origin(module_name, root)
    logging.getLogger(module_name).setLevel(logging.WARNING)
    return module


def check_origin(module_name: str, root: Path) -> None:
    """Every loaded module of the package must come from root/<package>/: anything else is a mix-up."""
    expected = (root / module_name).resolve()
    for name, module in list(sys.modules.items()):
        if name != module_name and not name.startswith(module_name + '.'):
            continue
        origin = getattr(module, '__file__', None)
        if origin is None or not Path(origin).resolve().is_relative_to(expected):
            raise MeasurementError(f'{name} was imported from {origin}, not from {expected}: a mix-up, no figure')


def origin_of(module: ModuleType | None) -> str:
    origin = getattr(module, '__file__', None)
    return str(Path(origin).parent) if origin else '?'


def bullmq_version() -> str | None:
    """The installed bullmq version, or None when it is not installed (it is optional)."""
    try:
        importlib.import_module('bullmq')
    except Exception:
        return None
    return _distribution_version('bullmq') or '?'


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
