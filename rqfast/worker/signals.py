"""Signal names for the worker's log, and the signal that kills a horse (RQ's rq.worker.base names)."""

from __future__ import annotations

import signal

# SIGKILL where the platform has it: a horse cannot ignore it
SHUTDOWN_SIGNAL: signal.Signals = getattr(signal, 'SIGKILL', signal.SIGTERM)

_signames = {getattr(signal, name): name for name in dir(signal) if name.startswith('SIG') and '_' not in name}


class ColdShutdown(SystemExit):
    """A cold shutdown (a second stop signal): it stops the worker, and its text is the failure
    reason of the job it interrupts ("SystemExit" alone said nothing)."""

    @classmethod
    def of(cls, worker_name: str, signum: int, running: list[str]) -> ColdShutdown:
        return cls(
            f'rqfast: cold shutdown of worker {worker_name} ({signal_name(signum)} after a warm shutdown request); '
            f'job(s) interrupted: {", ".join(running) or "none"}'
        )


def signal_name(signum: int) -> str:
    """'SIGTERM' for 15; 'SIG_UNKNOWN' for a number that names no signal."""
    try:
        return signal.Signals(signum).name
    except (KeyError, ValueError):
        return 'SIG_UNKNOWN'
