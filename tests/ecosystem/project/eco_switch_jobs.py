"""A job run by a child of a worker that turned the switch on with install_as_rq() (test_switch.py)."""

from __future__ import annotations


def who_is_rq() -> str:
    import rq

    return 'rqfast' if getattr(rq, '__rqfast_as_rq__', False) else 'rq'
