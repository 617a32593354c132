"""Job functions and payloads for the dashboard's tests (tests/test_dashboard*.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rqfast import get_current_job


def trip(path: str) -> str:
    """What unpickling a Tripwire calls: it leaves a file behind (the test checks it never appears)."""
    Path(path).write_text('unpickled')
    return path


class Tripwire:
    """An argument whose unpickling runs trip(path): a payload a worker's allow-list would refuse."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (trip, (self.path,))


def report(total: int, text: str = 'working') -> dict[str, int]:
    """Prints a line, stores meta and reports progress: what a job page shows."""
    job = get_current_job()
    assert job is not None
    print(f'{text} on {total} items')
    job.meta['stage'] = 'counted'
    job.save_meta()
    job.set_progress({'done': total, 'of': total})
    return {'items': total}


def fail(message: str = 'dashboard test failure') -> None:
    raise ValueError(message)


def sleep(seconds: float) -> float:
    """Sleeps in short steps (a stop command ends it at once)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
    return seconds
