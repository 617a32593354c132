"""Length-prefixed messages on a pipe: how a worker and its horses (forked or spawned) talk.

A message is an 8-byte big-endian length and that many bytes (a pickle, for horse.py). A horse reads
with blocking reads (read_message); a worker that polls its horses collects with MessageReader.
"""

from __future__ import annotations

import os
import struct

__all__ = ['MessageReader', 'read_message', 'write_message']

_HEADER = struct.Struct('!Q')


def write_message(fd: int, payload: bytes) -> None:
    view = memoryview(_HEADER.pack(len(payload)) + payload)
    while view:
        view = view[os.write(fd, view) :]


def read_message(fd: int) -> bytes | None:
    """One whole message, blocking; None at end of file."""
    header = _read_exactly(fd, _HEADER.size)
    return None if header is None else _read_exactly(fd, _HEADER.unpack(header)[0])


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b''.join(chunks)


class MessageReader:
    """Collects one message from whatever reads return, for a reader that polls."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.message: bytes | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= _HEADER.size:
            size = _HEADER.unpack_from(self._buffer)[0]
            if len(self._buffer) >= _HEADER.size + size:
                self.message = bytes(self._buffer[_HEADER.size : _HEADER.size + size])
