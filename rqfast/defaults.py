"""Every default rqfast uses, in one place: RQ 2.12's `rq.defaults` names first, then rqfast's own.

`from rq.defaults import X` swaps to `from rqfast.defaults import X`. Python code imports the
constants from here; the Lua scripts get them as arguments from their Python wrappers, so no
number below is written twice.
"""

from __future__ import annotations

import os
import sys

# --- RQ 2.12's rq.defaults, same names and values (the class paths name rqfast's classes)

DEFAULT_JOB_CLASS = 'rqfast.job.Job'
DEFAULT_QUEUE_CLASS = 'rqfast.Queue'
DEFAULT_WORKER_CLASS = 'rqfast.Worker'
DEFAULT_SERIALIZER_CLASS = 'rqfast.serializers.DefaultSerializer'
DEFAULT_CONNECTION_CLASS = 'redis.Redis'
DEFAULT_DEATH_PENALTY_CLASS = 'rqfast.timeouts.UnixSignalDeathPenalty'
DEFAULT_WORKER_TTL = 420  # seconds an idle worker's hash lives past its last heartbeat, minus 60
DEFAULT_JOB_MONITORING_INTERVAL = 30  # seconds between heartbeats while a job runs
DEFAULT_RESULT_TTL = 500
DEFAULT_FAILURE_TTL = 31536000  # one year
DEFAULT_CRON_JOB_HISTORY_LIMIT = 1000
DEFAULT_CRON_JOB_HISTORY_TTL = 31536000
DEFAULT_CRON_SCHEDULER_TTL = 120
CRON_RUN_TOLERANCE = 1.0  # seconds (at most a quarter interval): a run this close after the previous is not the next
CRON_FOLLOW_GRACE = 0.25  # seconds (at most a quarter slot) a cron scheduler waits past a run another one enqueued
CRON_OWN_RUNS_KEPT = 64  # job ids a CronJob remembers enqueuing (its own runs never block it)
DEFAULT_SCHEDULER_FALLBACK_PERIOD = 120
DEFAULT_MAINTENANCE_TASK_INTERVAL = 10 * 60  # RQ's; rqfast's workers use MAINTENANCE_INTERVAL below
DEFAULT_LOGGING_DATE_FORMAT = '%H:%M:%S'
DEFAULT_LOGGING_FORMAT = '%(asctime)s %(message)s'
CALLBACK_TIMEOUT = 60
UNSERIALIZABLE_RETURN_VALUE_PAYLOAD = 'Unserializable return value'


class SettingError(ValueError):
    """A setting read from the environment at import (RQ_KEY_PREFIX, RQFAST_SHARDING, RQFAST_COMPAT) is invalid."""


def _running_the_cli() -> bool:
    """This process is the `rqfast` command (its console script, `python -m rqfast` or `python -m rqfast.cli`)."""
    if os.path.basename(sys.argv[0]) == 'rqfast':
        return True
    argv = getattr(sys, 'orig_argv', [])
    return any(a == '-m' and b in ('rqfast', 'rqfast.cli') for a, b in zip(argv, argv[1:], strict=False))


def _refuse(message: str) -> None:
    """A bad setting: SettingError in a program that imports rqfast; in the `rqfast` command, whose import
    of rqfast it stops before click runs (--help included), the one line `Error: <message>` and status 1."""
    if _running_the_cli():
        raise SystemExit(f'Error: {message}')
    raise SettingError(message)


def _unbraced(prefix: str) -> str:
    return prefix.replace('{', '').replace('}', '') or 'rq'


# RQ 3.0's key prefix: read from the environment once, at import, as RQ 3.0 does; every key and pub/sub
# channel name (rqfast.keys, the Lua scripts' K table) starts with it and a colon.
RQ_KEY_PREFIX = os.environ.get('RQ_KEY_PREFIX', 'rq')
_KEY_PREFIX_CHARS = frozenset('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:{}-')
if not RQ_KEY_PREFIX or not _KEY_PREFIX_CHARS.issuperset(RQ_KEY_PREFIX):  # RQ 3.0's rule: it is spliced into templates
    _refuse(
        f'Invalid RQ_KEY_PREFIX {RQ_KEY_PREFIX!r} in the environment: only letters, digits, and _ . : - {{ }} '
        'are allowed (unset it for the default, rq)'
    )

# Redis Cluster (docs/connections.md): RQFAST_SHARDING=queue makes each queue a keyspace of its own,
# `{<RQ_KEY_PREFIX>:<queue>}` (rqfast.keys), so the queues spread over the cluster's masters.
RQFAST_SHARDING = os.environ.get('RQFAST_SHARDING', '').strip().lower()
if RQFAST_SHARDING not in ('', 'none', 'queue'):
    _refuse(
        f'RQFAST_SHARDING={RQFAST_SHARDING!r} in the environment: set it to "queue" (a keyspace per queue) '
        'or unset it (or "none"): docs/connections.md, Redis Cluster'
    )
if RQFAST_SHARDING == 'queue' and ('{' in RQ_KEY_PREFIX or '}' in RQ_KEY_PREFIX):
    _refuse(
        f'RQFAST_SHARDING=queue puts each queue under a hash tag of its own, {{<prefix>:<queue>}}: '
        f'RQ_KEY_PREFIX must have no braces (it is {RQ_KEY_PREFIX!r}): set RQ_KEY_PREFIX={_unbraced(RQ_KEY_PREFIX)} '
        'or unset RQFAST_SHARDING (single-slot mode)'
    )

# --- which RQ release's behaviour to follow where RQ 2.12 and RQ 3.0 differ

# RQ 3.0 by default (it is what `pip install rq` gives); RQ 2.12's with RQFAST_COMPAT=2.12 in the
# environment, read once at import, or `RQFAST_COMPAT = '2.12'` in a worker's settings module (the CLI
# calls set_compat before it builds the worker). The Redis layout is the same either way: both rq
# versions' tools read it. docs/switching.md's RQFAST_COMPAT table lists every difference the switch decides.
COMPAT_VERSIONS = ('3.0', '2.12')
RQFAST_COMPAT = os.environ.get('RQFAST_COMPAT', '3.0').strip() or '3.0'
if RQFAST_COMPAT not in COMPAT_VERSIONS:
    _refuse(
        f"Invalid RQFAST_COMPAT {RQFAST_COMPAT!r} in the environment: set it to 2.12 (RQ 2.12's behaviour) "
        "or 3.0, or unset it (RQ 3.0's, the default)"
    )


def set_compat(version: str) -> None:
    """Follow RQ `version`'s behaviour ('3.0' or '2.12') from now on, in this process."""
    global RQFAST_COMPAT
    if version not in COMPAT_VERSIONS:
        raise ValueError(f'Invalid RQFAST_COMPAT {version!r}: one of {", ".join(COMPAT_VERSIONS)}')
    RQFAST_COMPAT = version


def rq2_compat() -> bool:
    """True when rqfast follows RQ 2.12's behaviour rather than RQ 3.0's (RQFAST_COMPAT=2.12)."""
    return RQFAST_COMPAT == '2.12'


# --- rqfast's own

# Classes a lower layer hands out and a higher one defines, by dotted path (rqfast.imports.import_attribute
# looks each up when first used, so no import order matters): a job's registries by kind
# (job.failed_job_registry...), the queue a registry made without one gives (registry.get_queue()).
REGISTRY_CLASSES = {
    'started': 'rqfast.registry.StartedJobRegistry',
    'failed': 'rqfast.registry.FailedJobRegistry',
    'finished': 'rqfast.registry.FinishedJobRegistry',
    'executions': 'rqfast.executions.ExecutionRegistry',
}
REGISTRY_QUEUE_CLASS = 'rqfast.queue.Queue'

DEFAULT_QUEUE_TIMEOUT = 180  # a job's timeout when neither it nor its queue sets one (RQ's Queue.DEFAULT_TIMEOUT)
MAINTENANCE_INTERVAL = 60  # seconds between maintenance passes (RQ: 600): abandoned jobs are found sooner
MAINTENANCE_LOCK_TTL = 899  # RQ's rq:clean_registries:<q> lock TTL
STUCK_AFTER = 60  # seconds an id may sit in an intermediate list before maintenance puts it back
FIRST_SEEN_TTL = 86400  # TTL of the marker that records when an intermediate id was first seen
HEARTBEAT_GRACE = 60  # seconds RQ adds to a running job's heartbeat TTL (and its executions entry to that)
# rqfast's workers heartbeat every third of the monitoring interval (10 s by default), so their jobs'
# heartbeat TTL is the interval plus this much (40 s); with a recovery pass every RECOVERY_INTERVAL
# seconds, a job whose worker was SIGKILLed leaves `started` within 40 + 10 = 50 s of its last beat.
JOB_HEARTBEAT_GRACE = 10
RECOVERY_INTERVAL = 10  # seconds between a worker's recovery passes (abandoned jobs only: one script call)
MAX_JOB_ID_LENGTH = 512  # longest job id a worker claims; longer ones are dead-lettered (as ids outside RQ's pattern)
IDLE_WAKEUP = 5  # seconds an idle worker blocks before it looks at suspension and shutdown again
MAX_BACKOFF = 2  # cap, in seconds, of every retry-with-backoff loop while Redis is unreachable
# A silent network (a path that drops everything without closing: docs/reliability.md): the longest any
# of rqfast's script calls waits for its reply (per attempt, connecting included; a shorter socket_timeout
# of the connection stands), and how long past its own timeout a worker's blocking wait may go unanswered.
REPLY_TIMEOUT = 30
WAIT_REPLY_MARGIN = 5
HORSE_KILL_GRACE = 60  # seconds a horse may outlive its timeout before the worker SIGKILLs it
HORSE_STANDBY = 10  # seconds a horse that reported waits for its worker to record the outcome (or die)
RESULTS_MAXLEN = 10  # XADD MAXLEN ~ of rq:results:<id>
RETRY_EXPONENTIAL_CAP = 3600  # Retry.exponential's default longest delay, in seconds
EVENTS_MAXLEN = 10_000  # XADD MAXLEN ~ of rq:events:<queue> for Queue(events=True) (rqfast.events)
OUTPUT_CAP = 64 * 1024  # characters of a capture_output job's output kept per run; the rest is counted and marked
# A worker with concurrency > 1 and jobs in flight looks at its empty queues again this often (s) for
# its free slots (a finishing job claims for them at no cost; an idle worker blocks instead).
CONCURRENT_POLL_INTERVAL = 0.1
CONCURRENT_SWITCH_INTERVAL = 0.001  # sys.setswitchinterval while it works (Python's default: 0.005)
# A worker with N > 1 slots holds up to N // CONCURRENT_PREFETCH_SHARE (at least 1) jobs claimed ahead of a
# free slot, while its jobs run CONCURRENT_PREFETCH_MAX_RUN seconds or less (a moving average): see worker/loop.py.
# Half: the job threads take them without the loop (threads.py); with 50 threads of 10 ms jobs that each make a
# Redis call of its own, a tenth (5) ran dry between the loop's calls: 0.9 ms idle per job
CONCURRENT_PREFETCH_SHARE = 2
CONCURRENT_PREFETCH_MAX_RUN = 0.05
# ...and, while its jobs run CONCURRENT_COALESCE_MIN_RUN seconds or more and the job threads have half of those
# jobs queued ahead to go on with, it waits a fifth of a job's run time (CONCURRENT_COALESCE_PAUSE at most)
# after an outcome comes in, so one call records those that follow it: 50 threads of 10 ms jobs made 1,000-1,100
# calls per 5,000 jobs, 300 with the pause, and Redis spent 49 µs of CPU per job where it spent 74-82
CONCURRENT_COALESCE_MIN_RUN = 0.005
CONCURRENT_COALESCE_PAUSE = 0.002
MAX_DROPPED_PER_CLAIM = 100  # ids without a job hash one claim script call drops before it returns
ENQUEUE_CHUNK = 1000  # jobs per enqueue script call in enqueue_many
DEBOUNCE_KEY_GRACE = 86400  # seconds rq:debounce:<key> outlives its job's due time (then: a new burst)
MAX_RATE_WINDOW = 86400  # longest RateLimit(per=...) window, in seconds (a day)
# a window rate limit plans each window of waiting jobs this fraction of `per` past the previous one: slack
# for the latency of a start (the scheduler's wake-up, the claim), so a late start rarely misses its turn
RATE_WINDOW_GUARD = 0.04
SCHEDULER_CHUNK = 1000  # scheduled jobs moved per queue per tick (RQ's get_jobs_to_schedule)
SCHEDULER_MAX_BACKOFF = 30  # cap of the scheduler's retry delay, in seconds
SCHEDULER_INTERVAL = 1  # seconds between scheduler ticks
SCHEDULER_DUE_MARGIN = 0.001  # the scheduler wakes this long after a scheduled job's time (s)
SCHEDULER_SLEEP_STEP = 0.05  # the scheduler sleeps in steps this long (s): a stop or a job planned sooner ends it
SCHEDULER_LOCK_MARGIN = 60  # rq:scheduler-lock:<q> and rq:scheduler:<name> live this much past the interval
SCHEDULER_LOCK_TTL = SCHEDULER_INTERVAL + SCHEDULER_LOCK_MARGIN  # 61, as RQ's
WEBHOOK_QUEUE_SIZE = 1000  # webhooks a worker holds to send; past that new ones are dropped (logged), never waited on
WEBHOOK_SHUTDOWN_WAIT = 5  # seconds a stopping worker waits for its webhooks still to be sent
SIGNATURE_FIELD = 'rqfast_signature'  # the job hash field holding a signed job's HMAC (RQ ignores it)
SIGNING_KEY_ENV = 'RQFAST_SIGNING_KEY'  # the environment variable producers and workers read their signing key from
