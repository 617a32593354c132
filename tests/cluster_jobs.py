"""A job for tests/test_cluster.py that imports nothing (a SpawnWorker's child stays light): it appends
its index to a file, so that the test counts every run."""

from __future__ import annotations

import os


def mark(index: int, path: str) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f'{index}\n'.encode())  # one write of one line: appends do not interleave
    finally:
        os.close(fd)
    return index
