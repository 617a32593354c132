"""rqfast beside rq's own package in one process (rq installed and the switch off: django-rq with only
WORKER_CLASS set, a tool written for rq reading rqfast's jobs).

- rqfast's exceptions are subclasses of rq's of the same name, so `except rq.exceptions.X` (and
  `rq.timeouts.X`) catches what rqfast raises. Nothing here imports rq: rqfast's classes derive from
  a stand-in until rq's module is loaded, then take rq's class as their base (`__bases__`), at once if
  it is already loaded, else when it is (a finder on sys.meta_path watches for those two names only,
  and leaves once both are adopted).
- job code's `rq.get_current_job()` returns the job an rqfast worker runs: rq's own current-job
  variable is set beside rqfast's while the job's function runs, when rq is loaded by then (a job module
  that imports rq at its top is: rqfast imports the function before the call).
- rq's `Job` objects stand for their ids where rqfast takes a job (queues, registries, equality).

While rqfast serves `import rq` (rqfast.as_rq) there is nothing to do: rq's names are rqfast's.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from importlib.machinery import PathFinder
from types import ModuleType
from typing import Any

# rq's module -> rqfast's twin, whose exception classes take rq's namesakes as base.
TWINS = {'rq.exceptions': 'rqfast.exceptions', 'rq.timeouts': 'rqfast.timeouts'}


class StandIn(Exception):
    """The base of rqfast's exceptions until rq's class of the same name is adopted (see the module)."""


class BaseStandIn(BaseException):
    """StandIn for the exceptions that derive from BaseException (ShutDownImminentException)."""


_STAND_INS = (StandIn, BaseStandIn)
_lock = threading.Lock()


def _real_rq_module(name: str) -> ModuleType | None:
    """rq's own module `name` if this process has loaded it (not rqfast serving as rq)."""
    module = sys.modules.get(name)
    return module if module is not None and getattr(module, '__name__', None) == name else None


def adopt_rq_bases(ours: ModuleType) -> None:
    """Rebase `ours`' (rqfast.exceptions or rqfast.timeouts) exception classes on rq's namesakes: now if
    rq's module is loaded, else when it loads. Called by each of the two modules at its end."""
    theirs_name = next(name for name, twin in TWINS.items() if twin == ours.__name__)
    theirs = _real_rq_module(theirs_name)
    if theirs is not None:
        _rebase(ours, theirs)
    elif not _serving_as_rq() and _rq_installed():
        _WATCHER.watch(theirs_name, ours)


def _rq_installed() -> bool:
    """Whether `import rq` would find rq's own package on sys.path (no import: a directory lookup)."""
    try:
        return PathFinder.find_spec('rq') is not None
    except (ImportError, ValueError):
        return False


def _serving_as_rq() -> bool:
    switch = sys.modules.get('_rqfast_as_rq')
    return bool(switch is not None and switch.installed())


def _rebase(ours: ModuleType, theirs: ModuleType) -> None:
    for name, cls in list(vars(ours).items()):
        rq_class = getattr(theirs, name, None)
        if not (isinstance(cls, type) and issubclass(cls, BaseException) and cls.__module__ == ours.__name__):
            continue
        if not isinstance(rq_class, type) or not issubclass(rq_class, BaseException) or issubclass(cls, rq_class):
            continue
        kept = tuple(base for base in cls.__bases__ if base not in _STAND_INS)
        try:
            cls.__bases__ = (*kept, rq_class)
        except TypeError:  # a layout rq's class does not share: that one stays rqfast's alone
            continue


class _Watcher:
    """Finds rq.exceptions / rq.timeouts as the import system would, and adopts their classes once loaded."""

    def __init__(self) -> None:
        self.waiting: dict[str, ModuleType] = {}

    def watch(self, theirs_name: str, ours: ModuleType) -> None:
        with _lock:
            self.waiting[theirs_name] = ours
            if self not in sys.meta_path:
                sys.meta_path.insert(0, self)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> Any:
        ours = self.waiting.get(fullname)
        if ours is None:
            return None
        finders = sys.meta_path[sys.meta_path.index(self) + 1 :] if self in sys.meta_path else sys.meta_path
        for finder in finders:
            find = getattr(finder, 'find_spec', None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = _AdoptAfterExec(spec.loader, self, fullname, ours)
                return spec
        return None

    def done(self, theirs_name: str) -> None:
        with _lock:
            self.waiting.pop(theirs_name, None)
            if not self.waiting and self in sys.meta_path:
                sys.meta_path.remove(self)


class _AdoptAfterExec:
    """The loader the import system found for rq's module, adopting its classes once it has run."""

    def __init__(self, loader: Any, watcher: _Watcher, theirs_name: str, ours: ModuleType) -> None:
        self.loader = loader
        self.watcher = watcher
        self.theirs_name = theirs_name
        self.ours = ours

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        if getattr(module, '__name__', None) == self.theirs_name:  # rq's own, not rqfast serving as rq
            _rebase(self.ours, module)
            self.watcher.done(self.theirs_name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


_WATCHER = _Watcher()


# --- rq.get_current_job() inside a job rqfast runs


def enter_rq_job(job: object) -> Callable[[], object] | None:
    """Make `job` rq's current job too (rq's `get_current_job()`), if rq is loaded; returns what undoes it.

    rq 3.0 keeps it in a context variable (`rq.job._current_job`), rq 2.x on a stack (`_job_stack`).
    """
    module = _real_rq_module('rq.job')
    if module is None:
        return None
    variable = getattr(module, '_current_job', None)
    if isinstance(variable, ContextVar):
        token = variable.set(job)
        return lambda: variable.reset(token)
    stack = getattr(module, '_job_stack', None)
    if stack is not None and hasattr(stack, 'push'):
        stack.push(job)
        return stack.pop  # type: ignore[no-any-return]
    return None


# --- rq's Job objects


def is_rq_job(obj: object) -> bool:
    """Whether `obj` is a Job of rq's own package (or of a subclass of it): not rqfast's."""
    return any(cls.__name__ == 'Job' and cls.__module__ == 'rq.job' for cls in type(obj).__mro__)


def job_id_of(job: Any) -> Any:
    """A job's id, for rqfast's Job and rq's alike; anything else (an id) as it is."""
    return job.id if is_rq_job(job) or _is_rqfast_job(job) else job


def _is_rqfast_job(obj: object) -> bool:
    return any(cls.__name__ == 'JobSpec' and cls.__module__ == 'rqfast.jobspec' for cls in type(obj).__mro__)
