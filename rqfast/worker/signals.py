"""Signal names for the worker's log, and the signal that kills a horse (RQ's rq.worker.base names)."""

from __future__ import annotations

import signal

# SIGKILL where the platform has it: a horse cannot ignore it
SHUTDOWN_SIGNAL: signal.Signals = getattr(signal, 'SIGKILL', signal.SIGTERM)

_signames = {getattr(signal, name): name for name in dir(signal) if name.startswith('SIG') and '_' not in name}


def signal_name(signum: int) -> str:
    """'SIGTERM' for 15; 'SIG_UNKNOWN' for a number that names no signal."""
    try:
        return signal.Signals(signum).name
    except (KeyError, ValueError):
        return 'SIG_UNKNOWN'
