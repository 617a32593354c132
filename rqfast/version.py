"""rqfast's version (the package's: setup.cfg reads it) and the RQ releases whose API and Redis layout it serves."""

VERSION = '0.1.0'

# RQ's releases rqfast follows (their own test suites run against it: tests/rq_suite): the first is the
# default, the other is chosen with RQFAST_COMPAT (rqfast.defaults.COMPAT_VERSIONS).
RQ_API_VERSIONS = ('3.0', '2.12')
