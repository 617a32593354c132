"""Finds and kills the processes an RQ-suite run started, wherever they went (Linux /proc).

Every process of a run carries RQ_SUITE_MARKER=<id> in its environment, inherited through fork and exec.
That finds what a parent-child walk would miss: worker horses that called setsid(), processes orphaned to
init after their parent was killed, subprocesses of jobs. The run's redis-server does not carry it.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MARKER_VAR = 'RQ_SUITE_MARKER'
# multiprocessing's helper processes live as long as the process that started them; killing one between
# tests would break the next test that needs it.
_HELPERS = ('multiprocessing.resource_tracker', 'multiprocessing.forkserver')


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    cmdline: str

    def describe(self) -> str:
        return f'pid {self.pid} (parent {self.ppid}): {self.cmdline[:120]}'


def _read_proc(pid: int) -> Proc | None:
    base = Path('/proc', str(pid))
    try:
        stat = (base / 'stat').read_text()
        cmdline = (base / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace').strip()
    except OSError:
        return None
    fields = stat[stat.rfind(')') + 2 :].split()  # after "pid (comm) "
    return Proc(pid=pid, ppid=int(fields[1]), state=fields[0], cmdline=cmdline)


def marked_processes(marker: str, exclude: frozenset[int] = frozenset()) -> list[Proc]:
    """Live processes (zombies left out) whose environment carries RQ_SUITE_MARKER=<marker>."""
    needle = f'{MARKER_VAR}={marker}'.encode()
    found = []
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            environ = (entry / 'environ').read_bytes()
        except OSError:
            continue
        if needle not in environ.split(b'\0'):
            continue
        proc = _read_proc(int(entry.name))
        if proc is None or proc.state in ('Z', 'X') or any(h in proc.cmdline for h in _HELPERS):
            continue
        found.append(proc)
    return found


def kill_marked(marker: str, exclude: frozenset[int] = frozenset(), grace: float = 0.0) -> list[Proc]:
    """SIGKILLs the run's live processes (after `grace` seconds for them to end by themselves);
    returns the ones that were still alive when the grace ran out."""
    deadline = time.monotonic() + grace
    procs = marked_processes(marker, exclude)
    while procs and time.monotonic() < deadline:
        time.sleep(0.05)
        procs = marked_processes(marker, exclude)
    for proc in procs:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    return procs
