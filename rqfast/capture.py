"""A job's captured output (`enqueue(..., capture_output=True)`): what it prints, kept with its result.

sys.stdout and sys.stderr are swapped for a proxy while at least one capture is open; each write goes
to the buffer of the context (thread or asyncio task) that opened the capture, and everything else
to the stream that was there before. So at concurrency > 1 each job gets only its own output.
Python-level writes only: a subprocess or C code writing to file descriptor 1 or 2 is not captured.
"""

from __future__ import annotations

import _thread  # (not threading: a spawned child whose job starts no thread never imports it)
import contextvars
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from .defaults import OUTPUT_CAP

TRUNCATED = '\n[rqfast: output truncated, {} more characters]\n'

_buffer: contextvars.ContextVar[Buffer | None] = contextvars.ContextVar('rqfast_output', default=None)
_lock = _thread.allocate_lock()
_open = 0  # captures open in this process (the proxies are in place while it is above 0)
_passing = _thread.RLock()  # a write or flush passed on to a real stream (see _Proxy)
# Every proxy ever put in place, kept for the process's life: print() holds a borrowed reference to
# sys.stdout while it writes (python/cpython#130163), so a thread printing as another swaps the streams
# back must not see its proxy freed under it (seen here as a segfault at concurrency > 1).
_made: list[_Proxy] = []


def _fresh_locks() -> None:
    """In a forked child: new locks. A thread of the parent that held one while the parent forked does
    not exist in the child, so the child's first print would wait for it forever (a pool's worker
    process forked beside capturing threads)."""
    global _lock, _passing
    _lock, _passing = _thread.allocate_lock(), _thread.RLock()


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_fresh_locks)


class Buffer:
    """A run's output up to `cap` characters, then only a count of the rest."""

    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.cap, self.size, self.dropped = cap, 0, 0
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        room = self.cap - self.size
        if len(text) > room:
            self.dropped += len(text) - max(room, 0)
            text = text[: max(room, 0)]
        if text:
            self.parts.append(text)
            self.size += len(text)

    def text(self) -> str:
        joined = ''.join(self.parts)
        return joined + TRUNCATED.format(self.dropped) if self.dropped else joined


class _Proxy:
    """Stands in for sys.stdout or sys.stderr: the writes of a capturing context go to its buffer.

    The others go on to the real stream, one thread at a time (_passing): CPython's TextIOWrapper is not
    safe to write from several threads at once (python/cpython#118138: a race in its pending bytes,
    seen here as a segfault of a test run with capturing jobs on threads beside other writers).
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream  # None when the process has no such stream (sys.stdout is None)

    def write(self, text: str) -> int:
        buffer = _buffer.get()
        if buffer is None:
            if self._stream is None:
                return len(text)  # (no such stream: print drops it)
            with _passing:
                return self._stream.write(text)
        buffer.write(str(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _buffer.get() is None and self._stream is not None:
            with _passing:
                self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, isatty...: the real stream's
        return getattr(self._stream, name)


def _proxy(stream: TextIO | None) -> _Proxy:
    """The proxy of `stream`: one per stream, made once and never freed (see _made)."""
    for proxy in _made:
        if proxy._stream is stream:
            return proxy
    _made.append(_Proxy(stream))
    return _made[-1]


def _install() -> None:
    global _open
    with _lock:
        if _open == 0:
            sys.stdout, sys.stderr = _proxy(sys.stdout), _proxy(sys.stderr)
        _open += 1


def _uninstall() -> None:
    global _open
    with _lock:
        _open -= 1
        if _open == 0:
            for name in ('stdout', 'stderr'):
                stream = getattr(sys, name)
                if isinstance(stream, _Proxy):  # unless someone replaced it meanwhile
                    setattr(sys, name, stream._stream)


@contextmanager
def captured_output(cap: int = OUTPUT_CAP) -> Iterator[Buffer]:
    """Capture this context's writes to sys.stdout and sys.stderr (interleaved, as on a terminal)."""
    buffer = Buffer(cap)
    _install()
    token = _buffer.set(buffer)
    try:
        yield buffer
    finally:
        _buffer.reset(token)
        _uninstall()
