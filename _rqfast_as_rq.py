"""rqfast serving `import rq`: the switch behind `rqfast.install_as_rq()` and RQFAST_AS_RQ=1.

While the switch is on, a finder first on `sys.meta_path` answers every `rq` import from rqfast:
`rq.<module>` is the very module object `rqfast.<module>` (so `rq.job.Job is rqfast.job.Job`), except

- `rq` itself: a module of its own that hands out rqfast's names, with RQ's `VERSION`/`__version__`;
- `rq.version`: `VERSION` is the RQ release whose API rqfast serves (3.0.0, or 2.12.0 under
  RQFAST_COMPAT=2.12), which libraries check; `RQFAST_VERSION` is rqfast's own;
- `rq.cli.cli`: rqfast.cli (RQ keeps its click commands there; rqfast in its package).

This file is a top-level module, outside the rqfast package, so that the `rqfast-as-rq.pth` line the
wheel installs can turn the switch on at interpreter start without importing rqfast (which loads
redis-py and every rqfast module): with RQFAST_AS_RQ unset that line costs one dict lookup; with it
set, installing the finder costs this module's import, and rqfast is imported when `rq` first is.
The `rq` console script rqfast ships is `rq_command()` here.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from importlib.machinery import ModuleSpec
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.abc import Loader  # not imported at run time: importlib.abc loads importlib.resources

ENV_VAR = 'RQFAST_AS_RQ'
PTH_NAME = 'rqfast-as-rq.pth'
_ON = frozenset({'1', 'true', 'yes', 'on'})
_OFF = frozenset({'', '0', 'false', 'no', 'off'})
# The RQ release whose API rqfast serves, by RQFAST_COMPAT (rqfast.defaults.COMPAT_VERSIONS).
SERVED_RQ_VERSIONS = {'3.0': '3.0.0', '2.12': '2.12.0'}
# rq's modules whose rqfast twin has another name.
RENAMED = {'rq.cli.cli': 'rqfast.cli'}


class AsRqRefused(RuntimeError):
    """The switch cannot be turned on: rq's own modules are already imported in this process."""


def switch_value(environ: Any = None) -> bool:
    """RQFAST_AS_RQ read from `environ` (os.environ): on, off, or a ValueError naming the bad value."""
    raw = (os.environ if environ is None else environ).get(ENV_VAR, '')
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ValueError(f'Invalid {ENV_VAR}={raw!r}: 1/true/yes/on or 0/false/no/off (unset: off)')


def served_rq_version() -> str:
    """RQ's version as `rq.version.VERSION` reports it while rqfast serves `rq`."""
    defaults = sys.modules.get('rqfast.defaults')
    compat = getattr(defaults, 'RQFAST_COMPAT', None) or os.environ.get('RQFAST_COMPAT', '').strip() or '3.0'
    return SERVED_RQ_VERSIONS.get(compat, SERVED_RQ_VERSIONS['3.0'])


def _is_ours(module: object) -> bool:
    return getattr(module, '__rqfast_as_rq__', False) or str(getattr(module, '__name__', '')).startswith('rqfast')


def rq_modules_loaded() -> list[str]:
    """rq's own modules in sys.modules, in the order they were imported (not those this switch serves)."""
    return [
        name
        for name, module in list(sys.modules.items())
        if (name == 'rq' or name.startswith('rq.')) and module is not None and not _is_ours(module)
    ]


class _State:
    how: str = ''  # what turned the switch on: 'environment', 'install_as_rq()', 'import rqfast'
    booted: bool = False  # boot() ran (an interpreter may process a site folder's .pth files twice)


_state = _State()


def installed() -> bool:
    """Whether `import rq` gives rqfast in this process."""
    return _FINDER in sys.meta_path


def how() -> str:
    """What turned the switch on in this process ('' while it is off)."""
    return _state.how if installed() else ''


def install(how: str = 'install_as_rq()') -> None:
    """Turn the switch on for this process and (through RQFAST_AS_RQ=1 in os.environ) the processes it
    starts. Refuses, changing nothing, when rq's own modules are already imported."""
    if installed():
        return
    loaded = rq_modules_loaded()
    if loaded:
        # the package is imported before any of its modules (sys.modules lists them as their imports ended)
        first = 'rq' if 'rq' in loaded else loaded[0]
        where = getattr(sys.modules[first], '__file__', None) or 'an unknown location'
        others = [name for name in loaded if name != first]
        more = f' and {len(others)} of its modules ({", ".join(others[:3])}{", ..." if len(others) > 3 else ""})'
        raise AsRqRefused(
            f"rqfast cannot serve `import rq` in this process: rq's own {first!r} was imported first, from "
            f'{where}{more if others else ""}. Turn the switch on before anything imports rq: {ENV_VAR}=1 in '
            f'the environment of the process, or rqfast.install_as_rq() before the imports that load rq. '
            f'Nothing was changed.'
        )
    sys.meta_path.insert(0, _FINDER)
    os.environ[ENV_VAR] = '1'
    _state.how = how


def boot() -> None:
    """The `rqfast-as-rq.pth` line: the switch from the environment, at interpreter start."""
    if _state.booted:
        return
    _state.booted = True
    try:
        if switch_value():
            install('environment')
    except (ValueError, AsRqRefused) as exc:  # a .pth line must not stop the interpreter: say it, stay off
        print(f'rqfast: {exc}', file=sys.stderr)


# --- the modules served as rq's


def _target(fullname: str) -> str:
    return RENAMED.get(fullname) or 'rqfast' + fullname[len('rq') :]


def _package_module() -> types.ModuleType:
    """`rq`: rqfast's names, RQ's version."""
    rqfast = importlib.import_module('rqfast')
    module = types.ModuleType('rq', "rqfast serving as rq (RQFAST_AS_RQ): rqfast's API under RQ's names.")

    def __getattr__(name: str) -> Any:
        if name in ('VERSION', '__version__'):
            return served_rq_version()
        try:
            return getattr(rqfast, name)
        except AttributeError:
            raise AttributeError(f"module 'rq' (rqfast) has no attribute {name!r}") from None

    def __dir__() -> list[str]:
        return sorted(set(dir(rqfast)) | set(vars(module)) | {'VERSION', '__version__'})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    module.__all__ = list(getattr(rqfast, '__all__', []))  # type: ignore[attr-defined]
    module.__file__ = rqfast.__file__
    module.__rqfast_as_rq__ = True  # type: ignore[attr-defined]
    return module


def _version_module() -> types.ModuleType:
    """`rq.version`: VERSION is the RQ API rqfast serves; RQFAST_VERSION is rqfast's own."""
    own = importlib.import_module('rqfast.version')
    module = types.ModuleType('rq.version', "RQ's version as rqfast serves it (RQFAST_AS_RQ)")

    def __getattr__(name: str) -> Any:
        if name == 'VERSION':
            return served_rq_version()
        if name == 'RQFAST_VERSION':
            return own.VERSION
        raise AttributeError(f"module 'rq.version' (rqfast) has no attribute {name!r}")

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__file__ = own.__file__
    module.__rqfast_as_rq__ = True  # type: ignore[attr-defined]
    return module


class _Loader:
    """Hands out the module found for an `rq` name; rqfast's modules keep their own __spec__."""

    def __init__(self, module: types.ModuleType | None, target: str) -> None:
        self.module = module
        self.target = target
        self.spec: ModuleSpec | None = getattr(module, '__spec__', None)

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        if self.spec is not None and not getattr(module, '__rqfast_as_rq__', False):
            module.__spec__ = self.spec  # the import system set the alias spec; rqfast's module keeps its own

    def get_code(self, fullname: str) -> Any:
        """For runpy (`python -m rq.cli`): the code of rqfast's module."""
        spec = _find_spec(self.target)
        loader = getattr(spec, 'loader', None)
        if loader is None or not hasattr(loader, 'get_code'):
            raise ImportError(f'rqfast has no code for {fullname!r} ({self.target})', name=fullname)
        return loader.get_code(self.target)

    def is_package(self, fullname: str) -> bool:
        return hasattr(self.module, '__path__')


class _RqFinder:
    """Answers `rq` and `rq.*` from rqfast while the switch is on; never falls through to rq's own."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != 'rq' and not fullname.startswith('rq.'):
            return None
        name = _target(fullname)
        if fullname.endswith('.__main__'):  # run, not imported: runpy asks the loader for its code
            if _find_spec(name) is None:
                raise _missing(fullname, name)
            return ModuleSpec(fullname, cast('Loader', _Loader(None, name)))
        if fullname == 'rq':
            module = _package_module()
        elif fullname == 'rq.version':
            module = _version_module()
        else:
            try:
                module = importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name is None or not (name == exc.name or name.startswith(exc.name + '.')):
                    raise
                raise _missing(fullname, name) from None
        is_package = fullname == 'rq' or hasattr(module, '__path__')
        origin = f'{name} (rqfast serving rq)' if getattr(module, '__rqfast_as_rq__', False) else None
        return ModuleSpec(fullname, cast('Loader', _Loader(module, name)), origin=origin, is_package=is_package)


def _find_spec(name: str) -> ModuleSpec | None:
    import importlib.util  # only for `python -m rq...`: the switch's start-up imports nothing it does not use

    return importlib.util.find_spec(name)


def _missing(fullname: str, name: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        f'No module named {fullname!r}: rqfast serves `rq` in this process ({ENV_VAR}) and has no {name}',
        name=fullname,
    )


_FINDER = _RqFinder()


# --- the `rq` console script rqfast ships


def rq_command() -> None:
    """`rq ...`: rqfast's CLI while the switch is on (the same commands and options as rq's), RQ's own
    `rq` when rq is installed and the switch is off, else an error saying so."""
    if not installed():
        try:
            if switch_value():
                install('environment')
        except (ValueError, AsRqRefused) as exc:
            raise SystemExit(f'rq: {exc}') from None
    if installed():
        from rqfast.cli import main

        main(prog_name='rq')
        return
    try:
        from rq.cli import main as rq_main  # type: ignore[attr-defined]
    except ModuleNotFoundError as exc:
        if exc.name not in ('rq', 'rq.cli'):
            raise
        raise SystemExit(
            f"rq: this is rqfast's `rq` command and {ENV_VAR} is off, and the rq package is not installed: "
            f'run `rqfast ...` (the same commands), or set {ENV_VAR}=1 to have `rq` run rqfast'
        ) from None
    rq_main()
