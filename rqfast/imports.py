"""Resolving dotted paths and callables to and from the names RQ stores."""

from __future__ import annotations

import builtins
import importlib
import os
import sys
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any, TypeVar, cast

_C = TypeVar('_C', bound=type)


def import_attribute(name: str) -> Any:
    """Import `package.module.attr` or `package.module.Class.method`; ValueError (as RQ's) when missing."""
    parts = name.split('.')
    module = None
    for split in range(len(parts) - 1, 0, -1):
        module_name = '.'.join(parts[:split])
        module = sys.modules.get(module_name)
        # a module imported already is import_module's answer (it would be a worker's every job),
        # unless it is still being imported: import_module then waits for it
        if module is None or getattr(getattr(module, '__spec__', None), '_initializing', False):
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
        attrs = parts[split:]
        break
    else:
        # A single name: a builtin, as RQ allows ('len').
        if len(parts) == 1 and hasattr(builtins, name):
            return getattr(builtins, name)
        raise ValueError(f'Invalid attribute name: {name}')
    obj: Any = module
    for attr in attrs:
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            raise ValueError(f'Invalid attribute name: {name} ({obj!r} has no attribute {attr!r})') from None
    return obj


def class_at(path: str) -> Any:
    """The class at `path`, exactly `module.Name`, its module imported if it is not yet: how a lower layer
    reaches a class a higher layer defines (rqfast.defaults.REGISTRY_CLASSES), whatever was imported first."""
    module, _, name = path.rpartition('.')
    return getattr(importlib.import_module(module), name)


def import_subclass(name: str, base: _C, kind: str) -> _C:
    """The class at dotted path `name`; ValueError unless it is `base` or a subclass (`kind` names it)."""
    found = import_attribute(name)
    if not (isinstance(found, type) and issubclass(found, base)):
        raise ValueError(f'Invalid {kind} class: {name}')
    return cast(_C, found)


def backend_class(holder: Any, default_name: str, override: Any = None) -> Any:
    """`holder.default_name`, unless an override is given: a class, or a dotted path to one."""
    if override is None:
        return getattr(holder, default_name)
    return import_attribute(override) if isinstance(override, str) else override


def normalize_config_path(config_path: str) -> str:
    """A dotted module path from a file path ('app/config.py' -> 'app.config'); a dotted path stays."""
    if os.path.sep not in config_path and not config_path.endswith('.py'):
        return config_path
    path = config_path.removesuffix('.py').removeprefix(os.path.sep)
    return path.replace(os.path.sep, '.')


def validate_absolute_path(file_path: str) -> str:
    """The path itself, once it is known to name a file (FileNotFoundError, IsADirectoryError otherwise)."""
    if not os.path.exists(file_path):
        raise FileNotFoundError(f"Configuration file not found at '{file_path}'")
    if not os.path.isfile(file_path):
        raise IsADirectoryError(f"Configuration path points to a directory, not a file: '{file_path}'")
    return file_path


def function_reference(func: Any) -> tuple[Any, str]:
    """(instance, func_name) for a function, bound method, builtin, dotted path or callable instance."""
    # inspect's ismethod/isfunction/isbuiltin/isclass are these isinstance checks; importing inspect
    # would cost every spawned child's import
    if isinstance(func, MethodType):
        return func.__self__, func.__name__
    if isinstance(func, FunctionType | BuiltinFunctionType):
        return None, f'{func.__module__}.{func.__qualname__}'
    if isinstance(func, str):
        return None, func
    if not isinstance(func, type) and callable(func):
        return func, '__call__'
    raise TypeError(f'Expected a callable or a string, but got: {func}')
