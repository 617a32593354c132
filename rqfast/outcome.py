"""How a job's run ended, in the words the worker, the horse, the sync path and maintenance share.

A leaf module: `engine.plan` turns an Outcome into the writes that record it; execution.py (which
runs a job) and maintenance (which finds jobs whose worker is gone) produce them.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass
class Outcome:
    """How a run ended: `value` is the return value (SUCCESS), the Retry (RETRY) or the field resets (POISON)."""

    kind: OutcomeKind
    value: Any = None
    exc_string: str = ''
    exc_info: Any = None

    def __post_init__(self) -> None:
        if type(self.kind) is not OutcomeKind:
            self.kind = OutcomeKind(self.kind)
