"""Writes $RQFAST_MARKER_FILE (if set) when imported: a security test asserts it is never imported."""

import os

_path = os.environ.get('RQFAST_MARKER_FILE')
if _path:
    with open(_path, 'a') as _file:
        _file.write(f'imported by {os.getpid()}\n')


def run(*args: object) -> str:
    return 'ran'


def callback(*args: object) -> None:
    pass
