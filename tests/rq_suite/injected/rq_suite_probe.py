"""Checks, in the environment of an RQ-suite run, which imports exist: `python -m rq_suite_probe` reads a JSON
list of [module, name or null] from stdin and writes one status per pair to stdout (JSON):
"ok", "no module <m>", "no name" or "error <exception>"."""

from __future__ import annotations

import importlib
import json
import sys


def status(module: str, name: str | None) -> str:
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        return f'no module {exc.name or module}'
    except Exception as exc:  # a module that exists but fails to import
        return f'error {type(exc).__name__}: {exc}'
    if name is None or hasattr(imported, name):
        return 'ok'
    try:
        importlib.import_module(f'{module}.{name}')
    except ModuleNotFoundError as exc:
        return 'no name' if exc.name == f'{module}.{name}' else f'no module {exc.name}'
    except Exception as exc:
        return f'error {type(exc).__name__}: {exc}'
    return 'ok'


if __name__ == '__main__':
    pairs = json.load(sys.stdin)
    json.dump([status(module, name) for module, name in pairs], sys.stdout)
