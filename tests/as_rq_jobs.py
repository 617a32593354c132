"""Jobs written for RQ: they import rq (rq 2.12 in the normal run), run by rqfast's workers (tests/test_as_rq.py)."""

from __future__ import annotations

from rq import get_current_job


def rq_current_job_id() -> str | None:
    job = get_current_job()
    return None if job is None else job.id


def who_is_rq() -> str:
    import rq

    return 'rqfast' if getattr(rq, '__rqfast_as_rq__', False) else 'rq'
