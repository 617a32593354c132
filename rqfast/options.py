"""The job options an enqueue takes, one row each: the one table the enqueue paths read.

`OPTIONS` names every option once: its keyword, default, validator, the job-hash field it is stored as,
the first RQ that has it, and which of RQ's signatures take it. RQ's signatures (Queue.enqueue_call,
Queue.create_job, Queue.prepare_data, @job, and the EnqueueArgs/EnqueueData tuples) stay explicit, as
RQ writes them; tests/test_options.py holds each of them equal to this table. What was threaded by hand
is derived from it: the keywords parse_args takes out of an enqueue() call, the options each path hands
create_job, the decorator's options, and the validators (run once per enqueue, by `check_job`, on the job
about to be stored). docs/layout.md, "Adding a job option", walks through one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .joboptions import check_priority
from .rate_limit import rate_limit_of

if TYPE_CHECKING:
    from .jobspec import JobSpec

__all__ = [
    'BY_NAME',
    'CREATE_JOB',
    'DECORATOR',
    'DEFAULTS',
    'ENQUEUE_CALL',
    'EVERYWHERE',
    'OPTIONS',
    'PARSE_ARGS',
    'PREPARE_DATA',
    'JobOption',
    'apply_options',
    'check_capture_output',
    'check_job',
    'check_values',
    'create_job_options',
    'options_of',
    'pop_enqueue_options',
]

# The signatures an option can be a parameter of (JobOption.takes).
ENQUEUE_CALL = 'enqueue_call'  # Queue.enqueue_call
CREATE_JOB = 'create_job'  # Queue.create_job
PREPARE_DATA = 'prepare_data'  # Queue.prepare_data and its EnqueueData
DECORATOR = 'job'  # @job(...)
PARSE_ARGS = 'parse_args'  # Queue.enqueue()'s keywords, what Queue.parse_args takes out (EnqueueArgs)
EVERYWHERE = frozenset({ENQUEUE_CALL, CREATE_JOB, PREPARE_DATA, DECORATOR, PARSE_ARGS})


def check_capture_output(value: Any) -> bool:
    """capture_output= as given when it is True or False; TypeError otherwise."""
    if not isinstance(value, bool):
        raise TypeError(f'capture_output must be True or False, not {value!r}')
    return value


def _set_retry(job: JobSpec, retry: Any) -> None:
    if retry:
        job.retries_left, job.retry_intervals = retry.max, retry.intervals
        job.enqueue_at_front_on_retry = retry.enqueue_at_front


def _set_repeat(job: JobSpec, repeat: Any) -> None:
    if repeat:
        job.repeats_left, job.repeat_intervals = repeat.times, repeat.intervals


def _set_rate_limit(job: JobSpec, rate_limit: Any) -> None:
    if rate_limit is not None:
        rate_limit.apply_to(job)


class JobOption(NamedTuple):
    """One job option. `takes`: the signatures that have it as a parameter. `given_as`: its keyword in
    enqueue() when not `name` (job_timeout). `field`: the job-hash field (JobRecord attribute) that stores
    it ('': none, it decides how the job is enqueued). `rq`: the first RQ version with it (None:
    rqfast's own). `check`: the validator, run once per enqueue on the job's `field` (check_job).
    `claims`: whether an enqueue() keyword of this name is the option (else it is the function's own
    keyword argument). `apply`: how create_job sets it on the job when Job.create does not take it."""

    name: str
    default: Any = None
    field: str = ''
    rq: str | None = '2.12'
    takes: frozenset[str] = EVERYWHERE
    given_as: str = ''
    check: Callable[[Any], Any] | None = None
    claims: Callable[[Any], Any] | None = None
    apply: Callable[[Any, Any], None] | None = None

    @property
    def keyword(self) -> str:
        """Its keyword in Queue.enqueue() (Queue.parse_args)."""
        return self.given_as or self.name


_NOT_CREATE = EVERYWHERE - {CREATE_JOB}
_PER_CALL = frozenset({ENQUEUE_CALL, PARSE_ARGS})  # how this one call is enqueued: no job field, no decorator

# In Queue.enqueue_call's order (RQ's first, then RQ 3.0's, then rqfast's own).
OPTIONS: tuple[JobOption, ...] = (
    JobOption('timeout', field='timeout', given_as='job_timeout'),
    JobOption('result_ttl', field='result_ttl'),
    JobOption('ttl', field='ttl'),
    JobOption('failure_ttl', field='failure_ttl'),
    JobOption('description', field='description'),
    JobOption('depends_on', field='_dependency_ids'),
    JobOption('job_id', takes=EVERYWHERE - {DECORATOR}),  # the job's key (@job: delay(job_id=...))
    JobOption('at_front', False, takes=_NOT_CREATE),
    JobOption('meta', field='meta'),
    JobOption('retry', field='retries_left', apply=_set_retry),
    JobOption('repeat', field='repeats_left', takes=EVERYWHERE - {DECORATOR}, apply=_set_repeat),
    JobOption('on_success', field='_success_callback_name'),
    JobOption('on_failure', field='_failure_callback_name'),
    JobOption('on_stopped', field='_stopped_callback_name'),
    JobOption('pipeline', takes=_PER_CALL),
    JobOption('unique', False, takes=_PER_CALL),
    JobOption('webhooks', field='webhooks'),
    JobOption(
        'rate_limit',
        field='rate_limit_key',
        rq='3.0',
        takes=frozenset({ENQUEUE_CALL, CREATE_JOB, PARSE_ARGS}),
        claims=rate_limit_of,  # RQ 2.12: any other value is the function's kwarg
        apply=_set_rate_limit,
    ),
    JobOption(
        'capture_output',
        False,
        field='capture_output',
        rq=None,
        takes=EVERYWHERE - {PREPARE_DATA},
        check=check_capture_output,
    ),
    JobOption('priority', field='priority', rq=None, check=check_priority),
    JobOption('debounce', rq=None, takes=_NOT_CREATE),  # rqfast.debounce: a guard key, not a job field
    JobOption('throttle', rq=None, takes=_NOT_CREATE),
)

BY_NAME = {option.name: option for option in OPTIONS}


def options_of(signature: str) -> tuple[JobOption, ...]:
    """The options `signature` (ENQUEUE_CALL, CREATE_JOB...) takes, in the table's order."""
    return tuple(option for option in OPTIONS if signature in option.takes)


_PARSED = options_of(PARSE_ARGS)
_CREATED_NAMES = tuple(option.name for option in options_of(CREATE_JOB))
# create_job's rows that Job.create does not take: (name, default, apply, field)
_APPLIED = tuple(
    (option.name, option.default, option.apply, option.field)
    for option in options_of(CREATE_JOB)
    if option.apply is not None or option.check is not None
)
_CHECKED = tuple((option.field, option.check) for option in OPTIONS if option.check is not None)
_CHECK_BY_NAME = {option.name: option.check for option in OPTIONS if option.check is not None}
# enqueue()'s keyword -> (the option's name, what says the keyword is the option: None, always)
_BY_KEYWORD = {option.keyword: (option.name, option.claims) for option in _PARSED}

# parse_args' answer when an enqueue() call has no keyword at all: every option at its default.
DEFAULTS: Mapping[str, Any] = {option.name: option.default for option in _PARSED}


def pop_enqueue_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The options of an enqueue() call, by name, taken out of its keywords (what stays is the function's);
    an option not given has its default."""
    options = dict(DEFAULTS)
    for keyword in [keyword for keyword in kwargs if keyword in _BY_KEYWORD]:
        name, claims = _BY_KEYWORD[keyword]
        if claims is None or claims(kwargs[keyword]):
            options[name] = kwargs.pop(keyword)
    return options


def create_job_options(values: Mapping[str, Any]) -> dict[str, Any]:
    """Of `values` (an enqueue's options, by name), those Queue.create_job takes."""
    return {name: values[name] for name in _CREATED_NAMES if name in values}  # (RQ's EnqueueData has fewer)


def apply_options(job: JobSpec, values: Mapping[str, Any]) -> None:
    """Set on a job Job.create made the options create_job takes that Job.create does not (retry, repeat,
    rate_limit and rqfast's own), as given: check_job validates them when the job is stored."""
    for name, default, apply, field in _APPLIED:
        value = values.get(name, default)
        if value is default:  # (the job has it already: JobRecord's defaults are the table's)
            continue
        if apply is None:
            setattr(job, field, value)
        else:
            apply(job, value)


def check_job(job: JobSpec) -> None:
    """Every validator of the table over the job about to be stored: once per enqueue (ValueError, TypeError)."""
    for field, check in _CHECKED:
        setattr(job, field, check(getattr(job, field)))


def check_values(values: Mapping[str, Any]) -> None:
    """The validators of the options in `values` (by name): prepare_data's and @job's, which keep the options
    for later enqueues, so that a bad one raises where it was given."""
    for name, check in _CHECK_BY_NAME.items():
        if name in values:
            check(values[name])
