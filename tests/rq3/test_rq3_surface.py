"""RQ 3.0's modules that 2.12 did not have, or whose public functions grew, under rqfast: every public
function and class of rq 3.0's rq.callbacks, rq.job_lifecycle, rq.rate_limit and rq.utils has its
rqfast namesake (tests/test_surface.py does RQ 2.12's whole surface)."""

from __future__ import annotations

import importlib
import inspect

import pytest
import rq.defaults as defaults

# rq 3.0's names rqfast leaves out on purpose, each with its reason.
ALLOWED_ABSENT = {
    'rate_limit': {
        'ACQUIRE_AND_ENQUEUE_SCRIPT': "RQ's Lua source text: rqfast's is lua/rate_limit_slots.lua",
        'RELEASE_AND_ENQUEUE_SCRIPT': "RQ's Lua source text: rqfast's is lua/rate_limit_slots.lua",
        'RELEASE_STALE_AND_ENQUEUE_SCRIPT': "RQ's Lua source text: rqfast's is lua/rate_limit_slots.lua",
        'CLEANUP_REGISTRY_SCRIPT': "RQ's Lua source text: rqfast's is lua/rate_limit_slots.lua",
    },
}


@pytest.mark.parametrize('module', ['callbacks', 'job_lifecycle', 'rate_limit', 'utils'])
def test_rq3s_public_functions_and_classes_are_under_rqfast(module: str) -> None:
    """With the parameters of rq 3.0's functions, by name and in order (rqfast's may add more after)."""
    theirs = importlib.import_module(f'rq.{module}')
    ours = importlib.import_module(f'rqfast.{module}')
    public = {
        name
        for name, value in vars(theirs).items()
        if not name.startswith('_')
        and (inspect.isfunction(value) or inspect.isclass(value) or name.isupper())
        and getattr(value, '__module__', theirs.__name__) == theirs.__name__
        and getattr(defaults, name, object()) is not value  # rq.defaults' constants, imported
    }
    missing = sorted(public - set(ALLOWED_ABSENT.get(module, {})) - set(dir(ours)))
    assert not missing, f'rqfast.{module} lacks {missing}'
    if module == 'utils':  # helpers of RQ 2.12's too, whose parameter names differ (tests/test_surface.py)
        return
    for name in public - set(ALLOWED_ABSENT.get(module, {})):
        theirs_value, ours_value = getattr(theirs, name), getattr(ours, name)
        pairs = [(name, theirs_value, ours_value)]
        if inspect.isclass(theirs_value):
            methods = [m for m, f in vars(theirs_value).items() if not m.startswith('_') and inspect.isfunction(f)]
            pairs += [(f'{name}.{m}', getattr(theirs_value, m), getattr(ours_value, m, None)) for m in methods]
        for what, their_function, our_function in pairs:
            if not inspect.isfunction(their_function):
                continue
            assert our_function is not None, f'rqfast.{module}.{what} is missing'
            wanted = list(inspect.signature(their_function).parameters)
            assert list(inspect.signature(our_function).parameters)[: len(wanted)] == wanted, (module, what)
