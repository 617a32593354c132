"""How a job's run ended, in the words the worker, the horse, the sync path and maintenance share.

A leaf module: `engine.plan` turns an Outcome into the writes that record it; execution.py (which
runs a job) and maintenance (which finds jobs whose worker is gone) produce them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class OutcomeKind(str, Enum):
    """What happened; a str enum, so 'success' (as a horse's report carries it) compares equal."""

    SUCCESS = 'success'  # the job returned (a Repeat job goes back on its queue)
    RETRY = 'retry'  # the job returned a Retry: run again until retry.max, then failed
    FAILURE = 'failure'  # the job raised (or its horse died): retried while it has retries left, else failed
    STOPPED = 'stopped'  # stopped by a command: status stopped, never retried, dependents not released
    POISON = 'poison'  # its hash (or its outcome) could not be read: failed, never retried, bad fields reset
    ABANDONED = 'abandoned'  # its worker stopped heartbeating (maintenance): retried while it can, else failed


class Outcome:
    """How a run ended: `value` is the return value (SUCCESS), the Retry (RETRY) or the field resets (POISON).

    `output`: what the job printed, when it was enqueued with capture_output=True (else None).

    A plain class, not a dataclass: generating its methods would cost every spawned child's import.
    """

    def __init__(
        self,
        kind: OutcomeKind | str,
        value: Any = None,
        exc_string: str = '',
        exc_info: Any = None,
        output: str | None = None,
    ) -> None:
        self.kind = kind if type(kind) is OutcomeKind else OutcomeKind(kind)
        self.value = value
        self.exc_string = exc_string
        self.exc_info = exc_info
        self.output = output

    def __repr__(self) -> str:
        return f'Outcome({", ".join(f"{name}={value!r}" for name, value in vars(self).items())})'
