"""Job timeouts: RQ's formats ('2m', '1h', -1) and the in-process SIGALRM death penalty."""

from __future__ import annotations

import numbers
import signal
import sys
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, Literal

from .exceptions import TimeoutFormatError
from .rq_interop import StandIn, adopt_rq_bases


class BaseTimeoutException(StandIn):  # rq's own BaseTimeoutException once rq is loaded too (rq_interop)
    pass


class JobTimeoutException(BaseTimeoutException):
    """Raised inside a job that ran past its timeout."""


class HorseMonitorTimeoutException(BaseTimeoutException):
    pass


_UNITS = {'d': 86400, 'h': 3600, 'm': 60, 's': 1}


def _integral(value: Any) -> bool:
    """isinstance(value, numbers.Integral)."""
    return isinstance(value, numbers.Integral)


def parse_timeout(timeout: Any) -> int | None:
    """Seconds from an int, a numeric string or digits plus a unit ('90s', '2m', '1h', '1d')."""
    if timeout is None or isinstance(timeout, int) or (not isinstance(timeout, str) and _integral(timeout)):
        return None if timeout is None else int(timeout)
    try:
        return int(timeout)
    except (TypeError, ValueError):
        pass
    text = str(timeout)
    try:
        return int(text[:-1]) * _UNITS[text[-1:].lower()]
    except (ValueError, KeyError):
        raise TimeoutFormatError(
            'Timeout must be an integer or a string representing an integer, or '
            'a string with format: digits + unit, unit can be "d", "h", "m", "s", '
            'such as "1h", "23m".'
        ) from None


class BaseDeathPenalty:
    def __init__(self, timeout: float | None, exception: type[BaseException] = JobTimeoutException, **kwargs: Any):
        self._timeout = timeout
        self._exception = exception

    def __enter__(self) -> BaseDeathPenalty:
        self.setup_death_penalty()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: TracebackType | None) -> Literal[False]:
        try:
            self.cancel_death_penalty()
        except BaseTimeoutException:
            pass
        return False

    def setup_death_penalty(self) -> None:
        raise NotImplementedError

    def cancel_death_penalty(self) -> None:
        raise NotImplementedError


_SIGALRM, _SIG_DFL = int(signal.SIGALRM), int(signal.SIG_DFL)
# signal.signal without its enum conversions (3 µs of a job's run): the C function it wraps
_set_handler: Callable[[int, Any], Any] = sys.modules['_signal'].signal


class UnixSignalDeathPenalty(BaseDeathPenalty):
    """SIGALRM after `timeout` seconds raises the exception inside the running job (main thread only)."""

    def handle_death_penalty(self, signum: int, frame: FrameType | None) -> None:
        raise self._exception(f'Task exceeded maximum timeout value ({self._timeout} seconds)')

    def setup_death_penalty(self) -> None:
        if self._timeout is None or self._timeout <= 0:
            return
        _set_handler(_SIGALRM, self.handle_death_penalty)
        signal.setitimer(signal.ITIMER_REAL, self._timeout)

    def cancel_death_penalty(self) -> None:
        if self._timeout is None or self._timeout <= 0:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        _set_handler(_SIGALRM, _SIG_DFL)


class NoDeathPenalty(BaseDeathPenalty):
    """No time limit from within: a job on a worker's thread or event loop, whose worker enforces it."""

    def setup_death_penalty(self) -> None:
        pass

    def cancel_death_penalty(self) -> None:
        pass


class TimerDeathPenalty(UnixSignalDeathPenalty):
    """RQ's name for the thread-based penalty; here the same SIGALRM mechanism."""


def get_default_death_penalty_class() -> type[BaseDeathPenalty]:
    """The penalty for this platform: SIGALRM where it exists (RQ picks a timer thread elsewhere)."""
    return UnixSignalDeathPenalty if hasattr(signal, 'SIGALRM') else TimerDeathPenalty


adopt_rq_bases(sys.modules[__name__])
