"""rqfast in RQ's ecosystem: the runner of django-rq's, rq-dashboard's and rq-scheduler's own suites, and rqfast's
tests of Sentry, OpenTelemetry and Django projects, each in a virtualenv of its own (`python -m tests.ecosystem`)."""
