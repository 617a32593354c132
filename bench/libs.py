"""The libraries under test: RQ and rqfast behind one `Lib` handle, BullMQ when it is installed."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from bench.child import NotAvailable

WORKER_CLASSES = ('SimpleWorker', 'Worker', 'SpawnWorker')


@dataclass
class Lib:
    """One RQ-compatible library; every RQ-side scenario is written once against this handle."""

    label: str  # the column: "rq" or "rqfast"
    module_name: str  # what is imported: "rq", "rqfast" (or "rq" again in the self-test)
    module: ModuleType | None
    import_error: str | None

    def cls(self, name: str) -> Any:
        if self.module is None:
            raise NotAvailable(f'import {self.module_name} failed: {self.import_error}')
        found = getattr(self.module, name, None)
        if found is None:
            raise NotAvailable(f'{self.module_name} has no {name}')
        return found

    @property
    def version(self) -> str:
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
