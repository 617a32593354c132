"""SpawnWorker: every job runs in a fresh interpreter, for platforms where forking is unsafe (macOS).

Same protocol as the forking Worker, but the horse is a new Python process started with posix_spawn
(no fork anywhere). Its start-up is hidden: each child is started ahead, imports what running a job
takes and receives the worker's settings, then waits; when a job comes, a waiting child gets it and
the next child starts while the job runs. A child runs one job and exits, so isolation is per job.

As in RQ 3.0, a worker that overrides a hook (perform_job...) is made again in the child (when its class
can be imported by name), which runs the job through it; and a configuration the child could not import
(a class or handler from __main__, one that does not pickle) is refused when the worker starts, before
any job (RQFAST_COMPAT=2.12: such a handler is left out with a warning). fork_work_horse() and
monitor_work_horse() are RQ 3.0's step-by-step way: a child spawned for the job in hand, then watched.
"""

from __future__ import annotations

import os
import pickle
import re
import sys
import time
import traceback
from typing import Any

from .. import keys, pipes
from ..connections import client_recipe
from ..defaults import rq2_compat
from ..horse import flush_stdio, serve_one_job
from ..job import Job
from .calling import replaced
from .forking import Worker
from .pool import Horse

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# python [-S] -c _BOOTSTRAP <job fd> <report fd> <rqfast dir> <module to preload> <site replay> <sys.path...>
# A child takes the worker's sys.path. When the worker's `site` left nothing behind but that (no
# import hook from a .pth file), the child skips it (-S): it imports the sitecustomize modules the
# worker imported, and gets the worker's prefixes and exit()/quit(). Then it imports rqfast.horse
# without the package's __init__ (which imports the worker, queues and registries); the first
# `from rqfast import X` in a job runs the real __init__.
_BOOTSTRAP = """
import sys
def _replay_site(replay):
    # (lines, not JSON: json would cost every child its import) prefix, exec prefix, the sitecustomize
    # modules, then `<finder module> <top-level names...>` per editable install
    import site
    prefix, exec_prefix, modules, *editable = replay.split('\\n')
    sys.prefix, sys.exec_prefix = prefix, exec_prefix
    site.setquit()
    for name in modules.split():
        try:
            __import__(name)
        except ImportError:
            pass
    finders = {line.split()[0]: line.split()[1:] for line in editable if line.strip()}
    if finders:
        sys.meta_path.append(_EditableFinders(finders))
class _EditableFinders:
    # The worker's editable installs' finders (setuptools' .pth hooks), after every other finder as
    # there: imported and installed when a module they map is first imported and not found on
    # sys.path, so a child that needs none of them never pays for them (they import pathlib).
    def __init__(self, finders):
        self.finders = finders  # {finder module: the top-level names it maps}
    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition('.')[0]
        if not any(top in names for names in self.finders.values()):
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        before = list(sys.meta_path)
        for name in self.finders:
            try:
                __import__(name).install()
            except Exception:
                pass
        sys.path_importer_cache.clear()
        for finder in [finder for finder in sys.meta_path if finder not in before]:
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None
def _rqfast_package(directory):
    import importlib.util, os
    spec = importlib.util.spec_from_file_location('rqfast', os.path.join(directory, '__init__.py'),
                                                  submodule_search_locations=[directory])
    package = importlib.util.module_from_spec(spec)
    def __getattr__(name):
        # Dunders and submodules (`from . import keys`) are no reason to run __init__.
        if name.startswith('__') or os.path.exists(os.path.join(directory, name + '.py')) or \\
                os.path.isdir(os.path.join(directory, name)):
            raise AttributeError(name)
        del package.__getattr__
        spec.loader.exec_module(package)
        return getattr(package, name)
    package.__getattr__ = __getattr__
    sys.modules['rqfast'] = package
sys.path[:] = sys.argv[6:] if '' in sys.argv[6:] else [*sys.argv[6:], '']  # RQ's child has its cwd on the path
if sys.argv[5]:
    _replay_site(sys.argv[5])
_rqfast_package(sys.argv[3])
from rqfast.horse import spawn_main
spawn_main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[4])
"""

# RQ 3.0's fork_work_horse(): `python -c <this>`, the worker's details written in. The child rebuilds the
# worker's connection and the worker (gone from Redis: exit 1, as RQ's child), then serves the job it is
# sent, as a child started ahead does.
_RQ_CHILD = """
import sys
sys.path[:] = {path!r}
import pickle
from rqfast.connections import build_client
from rqfast.worker.spawn import serve_spawned_job
worker_class, attributes = pickle.loads({config!r})
connection = build_client({client!r})
worker = worker_class.find_by_key({key!r}, connection=connection, job_class=attributes['job_class'],
                                  queue_class=attributes['queue_class'], serializer={serializer!r})
if not worker:
    sys.exit(1)
serve_spawned_job(worker, attributes, {job_fd}, {report_fd})
"""

# Import hooks that come with Python, or that only matter to `import distutils` (setuptools' shim).
# rqfast's own finders are no reason to run `site` in a child: it installs its own (RQFAST_AS_RQ from the
# environment, rq_interop's watcher when rq is installed) when it imports rqfast's modules.
_STANDARD_HOOK_MODULES = {
    '_frozen_importlib',
    '_frozen_importlib_external',
    'zipimport',
    '_distutils_hack',
    '_rqfast_as_rq',
    'rqfast.rq_interop',
}
_EDITABLE_FINDER = re.compile(r'__editable___\w+_finder')  # setuptools' editable installs (PEP 660)


def site_replay() -> str:
    """What a child needs to skip `site` and still see what the worker saw; '' when it must run it.

    The finders of editable installs (setuptools' `__editable___<name>_finder` modules, which a .pth
    file installs) are replayed too: the child installs them when an import first reaches them."""
    if sys.flags.no_site or '\n' in sys.prefix + sys.exec_prefix:
        return ''
    editable: dict[str, list[str]] = {}
    for hook in [*sys.meta_path, *sys.path_hooks]:
        module = getattr(hook, '__module__', None)
        if module in _STANDARD_HOOK_MODULES or module in editable:
            continue
        names = _editable_names(module)
        if names is None:
            return ''
        editable[str(module)] = names
    modules = [name for name in ('sitecustomize', 'usercustomize') if name in sys.modules]
    finders = [' '.join((module, *names)) for module, names in editable.items()]
    return '\n'.join((sys.prefix, sys.exec_prefix, ' '.join(modules), *finders))


def _editable_names(module: Any) -> list[str] | None:
    """The top-level names an editable install's finder maps (its MAPPING and NAMESPACES); None if not one."""
    found = sys.modules.get(module) if isinstance(module, str) and _EDITABLE_FINDER.fullmatch(module) else None
    tables = [getattr(found, table, None) for table in ('MAPPING', 'NAMESPACES')]
    if found is None or not all(isinstance(table, dict) for table in tables):
        return None
    return sorted({str(name).partition('.')[0] for table in tables if isinstance(table, dict) for name in table})


class SpawnWorker(Worker):
    """RQ's SpawnWorker: a new interpreter per job, started ahead of the job."""

    # A child imports only what its own job needs (set True to let it import the last job's module early).
    preload_job_module = False

    def _preload(self) -> str:
        """Also the module of a worker class of the app's own, which RQ 3.0's child imports too (unpickling the
        worker): where an app sets up what every child needs, Sentry's client for one (rqfast.contrib.sentry)."""
        module = type(self).__module__
        own = '' if module.startswith(('rqfast.', 'rq.')) or module == '__main__' else module
        return ','.join(name for name in (super()._preload(), own) if name)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pickled: bytes | None = None
        self._made_child_hooks: tuple[ChildHooks | None] | None = None
        self._forked: Horse | None = None  # fork_work_horse()'s horse, until monitor_work_horse()

    def bootstrap(self, *args: Any, **kwargs: Any) -> None:
        self._made_child_hooks = None
        self._pickled = None
        if not rq2_compat():  # RQ 3.0: what the horse cannot import or unpickle fails here, before any job
            self.check_horse_config()
        super().bootstrap(*args, **kwargs)
        if self._hooks.performs and self._child_hooks() is None and replaced(self, 'perform_job'):
            self.log.warning(
                'Worker %s: %s.perform_job() does not run: its class cannot be imported by a spawned child '
                "(defined in __main__ or in a function), which runs the job with RQ's default; the handle_job_* "
                'hooks run in the worker once the child reports',
                self.name,
                type(self).__name__,
            )

    def _child_hooks(self) -> ChildHooks | None:
        """The worker's hooks for its children, as RQ 3.0's child runs them: on a worker of the same
        class made there, when the class can be imported by name (else None). Made once per work()."""
        if self._made_child_hooks is None:
            self._made_child_hooks = (self._make_child_hooks(),)
        return self._made_child_hooks[0]

    def _make_child_hooks(self) -> ChildHooks | None:
        if not self._hooks.performs:
            return None
        klass = type(self)
        try:
            importable = klass.__module__ != '__main__' and pickle.loads(pickle.dumps(klass)) is klass
        except Exception:
            importable = False
        if not importable:
            return None
        options = {
            'default_result_ttl': self.default_result_ttl,
            'job_class': self.job_class,
            'queue_class': self.queue_class,
            'exception_handlers': self._picklable_handlers(),
            'log_job_description': self.log_job_description,
            'job_monitoring_interval': self.job_monitoring_interval,
            'disable_default_exception_handler': self.disable_default_exception_handler,
            'serializer': self._serializer_arg,
        }
        attributes = {'death_penalty_class': self.death_penalty_class, 'log_result_lifespan': self.log_result_lifespan}
        hooks = ChildHooks(klass, self.queue_names(), self.name, options, attributes)
        try:
            pickle.dumps(hooks, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a job class, queue class or death penalty a child cannot import
            return None
        return hooks

    def _hooks_after_report(self) -> bool:
        """A child that cannot make the worker's class has not its hooks: the handlers run in the worker
        with the child's report."""
        return self._hooks.performs and self._child_hooks() is None

    def check_horse_config(self) -> None:
        """ValueError for a class or handler defined in __main__, pickle's error for one that does not pickle.

        The worker's own class is not checked: one a child cannot import (defined in __main__ or in a
        function) has its hooks run in the worker once the child reports (a warning says so), not refused."""
        for obj in (self.job_class, self.queue_class, self.death_penalty_class, *self._exc_handlers):
            if getattr(obj, '__module__', None) == '__main__':
                raise ValueError(
                    f'SpawnWorker cannot use {obj!r}: objects defined in __main__ are not importable by the work horse'
                )
        pickle.dumps(self._worker_attributes(), protocol=pickle.HIGHEST_PROTOCOL)

    def _dump_worker_config(self) -> bytes:
        """RQ 3.0's: the worker's class and the settings a horse's rebuilt worker takes, pickled."""
        return pickle.dumps((type(self), self._worker_attributes()), protocol=pickle.HIGHEST_PROTOCOL)

    def _worker_attributes(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _WORKER_ATTRIBUTES}

    def start_horse(self) -> Horse:
        """Spawn a child; it reads the worker's settings and waits for its job."""
        replay = site_replay()

        def argv(job_fd: int, report_fd: int) -> list[str]:
            start = [sys.executable, *(['-S'] if replay else []), '-c', _BOOTSTRAP, str(job_fd), str(report_fd)]
            return [*start, _PACKAGE_DIR, self._preload(), replay, *sys.path]

        return self._spawn(argv)

    def _spawn(self, argv: Any, env: dict[str, str] | None = None) -> Horse:
        """Spawn `argv(job fd, report fd)` in a process group of its own, and send it the worker's settings."""
        job_read, job_write = os.pipe()
        report_read, report_write = os.pipe()
        # The child's ends go to fds that none of the four uses; every other fd is close-on-exec.
        child_job_fd = max(job_read, job_write, report_read, report_write) + 1
        child_report_fd = child_job_fd + 1
        try:
            pid = os.posix_spawn(
                sys.executable,
                argv(child_job_fd, child_report_fd),
                env if env is not None else dict(os.environ),
                setpgroup=0,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, job_read, child_job_fd),
                    (os.POSIX_SPAWN_DUP2, report_write, child_report_fd),
                ],
            )
        except BaseException:
            for fd in (job_read, job_write, report_read, report_write):
                os.close(fd)
            raise
        os.close(job_read)
        os.close(report_write)
        spawned = self._runner.pool.adopt(pid, job_write, report_read)
        try:
            pipes.write_message(job_write, self._pickled_settings())
        except BrokenPipeError:  # it died at once: taking it as a horse notices
            pass
        return spawned

    # --- RQ 3.0's step-by-step horse: fork_work_horse() then monitor_work_horse()

    def fork_work_horse(self, job: Job, queue: Any) -> None:
        """Spawn a horse for `job` (RQ 3.0's `python -c` child, in its own process group from the start)."""
        running = self._hooks.for_job(job, queue)
        claim = running.claim
        # the child's environment only: the worker's own must not name a job (later children inherit it)
        env = {**os.environ, 'RQ_WORKER_ID': self.name, 'RQ_JOB_ID': job.id}
        if claim.execution_id:
            env['RQ_EXECUTION_ID'] = claim.execution_id
        config, client = self._dump_worker_config(), client_recipe(self.connection, picklable=True)

        def argv(job_fd: int, report_fd: int) -> list[str]:
            source = _RQ_CHILD.format(
                path=sys.path,
                config=config,
                client=client,
                key=self.key,
                serializer=self._serializer_arg,
                job_fd=job_fd,
                report_fd=report_fd,
            )
            return [sys.executable, '-c', source]

        work_horse = self._spawn(argv, env)
        self._runner.hand_over(work_horse, running)
        self._forked = work_horse
        self.log.debug('Worker %s: spawned %s at %s', self.name, work_horse.pid, time.time())

    def monitor_work_horse(self, job: Job, queue: Any, execution: Any = None) -> None:
        """Wait for fork_work_horse()'s horse and record how the job ended (a horse that died fails it)."""
        work_horse, self._forked = self._forked, None
        if work_horse is None:
            raise RuntimeError('monitor_work_horse() without fork_work_horse()')
        running = self._hooks.for_job(job, queue)
        timeout = job.timeout or self.queue_class.DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout + self.horse_kill_grace if timeout > 0 else None
        end = self._runner.watch(work_horse, deadline, job.id)
        outcome = self._runner.outcome(job, running, work_horse.pid, end, timeout)
        if running.reported:
            self._hooks.record(job, queue, outcome)
        else:
            self.handle_job_failure(job, queue, exc_string=outcome.exc_string)

    def _pickled_settings(self) -> bytes:
        if self._pickled is None:
            client = client_recipe(self.connection, picklable=True)
            if client is None:
                self.log.warning(
                    'Worker %s: its Redis connection cannot be rebuilt in a child (a pool or an option '
                    'that does not pickle): jobs will fail',
                    self.name,
                )
            # a new interpreter has no copy-on-write: the worker's perform_job & co. only by its class's name
            settings = self.horse_settings().replace(
                exception_handlers=self._picklable_handlers(),
                client=client,
                stand_in=None,
                perform=self._child_hooks(),
            )
            self._pickled = pickle.dumps(settings, protocol=pickle.HIGHEST_PROTOCOL)
        return self._pickled

    def _picklable_handlers(self) -> list[Any]:
        """Exception handlers travel by name; one without a name (a lambda, a closure) cannot run in a child."""
        handlers = []
        for handler in self._exc_handlers:
            try:
                pickle.dumps(handler)
                handlers.append(handler)
            except Exception:
                self.log.warning(
                    'Worker %s: exception handler %r has no importable name, so it does not run in spawned children',
                    self.name,
                    handler,
                )
        return handlers


class ChildHooks:
    """In a spawned child: the worker's perform_job (and so its handle_job_* hooks) on a worker of the
    worker's class made there (with the job's connection, registering nothing), as RQ 3.0's child does."""

    def __init__(
        self, klass: type, queues: list[str], name: str, options: dict[str, Any], attributes: dict[str, Any]
    ) -> None:
        self.klass, self.queues, self.name, self.options, self.attributes = klass, queues, name, options, attributes

    def __call__(self, job: Any, execution_id: str) -> Any:
        with keys.within(job.origin):  # (sharded by queue: the child stays in its job's keyspace: keys.settle)
            worker = self.klass(
                self.queues, name=self.name, connection=job.connection, prepare_for_work=False, **self.options
            )
        for attribute, value in self.attributes.items():
            setattr(worker, attribute, value)
        return worker._hooks.perform_in_horse(job, execution_id)


# RQ 3.0's: the worker's settings a spawned horse's worker takes (besides its name, queues and serializer).
_WORKER_ATTRIBUTES = (
    'job_class',
    'queue_class',
    'death_penalty_class',
    '_exc_handlers',
    'default_result_ttl',
    'job_monitoring_interval',
    'log_job_description',
    'log_result_lifespan',
    'disable_default_exception_handler',
)


def serve_spawned_job(worker: SpawnWorker, attributes: dict[str, Any], job_fd: int, report_fd: int) -> None:
    """fork_work_horse()'s child, once it found its worker: take its settings, serve the job, exit."""
    code = 1
    try:
        for name, value in attributes.items():
            setattr(worker, name, value)
        payload = pipes.read_message(job_fd)
        if payload is not None:
            settings = pickle.loads(payload)
            if settings.perform is not None:
                settings = settings.replace(perform=worker._hooks.perform_in_horse)
            serve_one_job(job_fd, report_fd, settings, fallback=worker.connection)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        flush_stdio()
        os._exit(code)
