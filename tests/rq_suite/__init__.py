"""RQ 2.12.0's own test suite as rqfast's acceptance test: `python -m tests.rq_suite` (see runner.py).

Nothing here is collected by the project's own pytest run: the suite is extracted and run elsewhere.
"""
