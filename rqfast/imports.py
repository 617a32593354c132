"""Resolving dotted paths and callables to and from the names RQ stores."""

from __future__ import annotations

import importlib
import inspect
from typing import Any


def import_attribute(name: str) -> Any:
    """Import `package.module.attr` or `package.module.Class.method`; raise a clear error when missing."""
    parts = name.split('.')
    module = None
    for split in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module('.'.join(parts[:split]))
        except ImportError:
            continue
        attrs = parts[split:]
        break
    else:
        # A single name: a builtin, as RQ allows ('len').
        import builtins

        if len(parts) == 1 and hasattr(builtins, name):
            return getattr(builtins, name)
        raise ValueError(f'Invalid attribute name: {name}')
    obj: Any = module
    for attr in attrs:
        try:
            obj = getattr(obj, attr)
        except AttributeError as exc:
            raise AttributeError(f'{obj!r} has no attribute {attr!r} (looking up {name})') from exc
    return obj


def function_reference(func: Any) -> tuple[Any, str]:
    """(instance, func_name) for a function, bound method, builtin, dotted path or callable instance."""
    if inspect.ismethod(func):
        return func.__self__, func.__name__
    if inspect.isfunction(func) or inspect.isbuiltin(func):
        return None, f'{func.__module__}.{func.__qualname__}'
    if isinstance(func, str):
        return None, func
    if not inspect.isclass(func) and callable(func):
        return func, '__call__'
    raise TypeError(f'Expected a callable or a string, but got: {func}')
