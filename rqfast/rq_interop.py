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

import _thread  # (not threading: a spawned child whose job starts no thread never imports it)
import functools
import sys
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
_lock = _thread.allocate_lock()


def _real_rq_module(name: str) -> ModuleType | None:
    """rq's own module `name` if this process has loaded it (not rqfast serving as rq)."""
    module = sys.modules.get(name)
    return module if module is not None and getattr(module, '__name__', None) == name else None


def when_rq_loads(name: str, then: Callable[[ModuleType], object]) -> None:
    """`then(rq's module)`: now if rq's own module `name` is loaded, else when it loads (nothing while rqfast
    serves `import rq`, or where rq is not installed)."""
    theirs = _real_rq_module(name)
    if theirs is not None:
        then(theirs)
    elif not _serving_as_rq() and _rq_installed():
        _WATCHER.watch(name, then)


def adopt_rq_bases(ours: ModuleType) -> None:
    """Rebase `ours`' (rqfast.exceptions or rqfast.timeouts) exception classes on rq's namesakes: now if
    rq's module is loaded, else when it loads. Called by each of the two modules at its end."""
    theirs_name = next(name for name, twin in TWINS.items() if twin == ours.__name__)
    when_rq_loads(theirs_name, functools.partial(_rebase, ours))


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
    """Finds an rq module it waits for as the import system would, and calls what waits once it is loaded."""

    def __init__(self) -> None:
        self.waiting: dict[str, list[Callable[[ModuleType], object]]] = {}

    def watch(self, name: str, then: Callable[[ModuleType], object]) -> None:
        with _lock:
            self.waiting.setdefault(name, []).append(then)
            if self not in sys.meta_path:
                sys.meta_path.insert(0, self)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> Any:
        if fullname not in self.waiting:
            return None
        finders = sys.meta_path[sys.meta_path.index(self) + 1 :] if self in sys.meta_path else sys.meta_path
        for finder in finders:
            find = getattr(finder, 'find_spec', None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = _ThenAfterExec(spec.loader, self, fullname)
                return spec
        return None

    def loaded(self, name: str, module: ModuleType) -> None:
        if getattr(module, '__name__', None) != name:  # rqfast serving as rq: nothing of rq's to adopt
            return
        with _lock:
            waiting = self.waiting.pop(name, [])
            if not self.waiting and self in sys.meta_path:
                sys.meta_path.remove(self)
        for then in waiting:
            then(module)


class _ThenAfterExec:
    """The loader the import system found for rq's module, telling the watcher once the module has run."""

    def __init__(self, loader: Any, watcher: _Watcher, name: str) -> None:
        self.loader = loader
        self.watcher = watcher
        self.name = name

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.watcher.loaded(self.name, module)

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
    jobspec = sys.modules.get('rqfast.jobspec')
    return jobspec is not None and isinstance(obj, jobspec.JobSpec)


# --- rq's Job and Worker compare equal with rqfast's of the same id and name (rq's own __eq__ only knows its
# class: a Job says False, a Worker raises TypeError). Taught to rq's classes when rq loads; comparisons
# between rq's own objects are untouched.


def _teach_equality(class_name: str, is_ours: Callable[[object], bool], key: str) -> Callable[[ModuleType], None]:
    def teach(module: ModuleType) -> None:
        cls = getattr(module, class_name, None)
        original = getattr(cls, '__dict__', {}).get('__eq__')
        if cls is None or original is None or getattr(original, '__rqfast__', False):
            return

        @functools.wraps(original)
        def __eq__(self: Any, other: object) -> Any:
            if is_ours(other):
                return getattr(self, key) == getattr(other, key)
            return original(self, other)

        __eq__.__rqfast__ = True  # type: ignore[attr-defined]
        cls.__eq__ = __eq__

    return teach


def _is_rqfast_worker(obj: object) -> bool:
    base = sys.modules.get('rqfast.worker.base')
    return base is not None and isinstance(obj, base.BaseWorker)


def is_rq_worker(obj: object) -> bool:
    """Whether `obj` is a worker of rq's own package (or of a subclass of it): not rqfast's."""
    return any(cls.__name__ == 'BaseWorker' and cls.__module__ == 'rq.worker.base' for cls in type(obj).__mro__)


when_rq_loads('rq.job', _teach_equality('Job', _is_rqfast_job, 'id'))
when_rq_loads('rq.worker.base', _teach_equality('BaseWorker', _is_rqfast_worker, 'name'))
