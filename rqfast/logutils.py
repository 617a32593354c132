"""The worker's console logging (RQ's rq.logutils): info to stdout, errors to stderr, colour on a tty."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .as_rq import logger_name
from .defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT

_ESC = '\x1b['
_DARK = ['black', 'darkred', 'darkgreen', 'brown', 'darkblue', 'purple', 'teal', 'lightgray']
_LIGHT = ['darkgray', 'red', 'green', 'yellow', 'blue', 'fuchsia', 'turquoise', 'white']


class _Colorizer:
    """ANSI colour codes by name; text passes through unchanged when stdout is not a terminal."""

    def __init__(self) -> None:
        self.codes = {'': '', 'reset': _ESC + '39;49;00m', 'bold': _ESC + '01m', 'faint': _ESC + '02m'}
        self.codes.update({'standout': _ESC + '03m', 'underline': _ESC + '04m', 'blink': _ESC + '05m'})
        self.codes['overline'] = _ESC + '06m'
        for number, (dark, light) in enumerate(zip(_DARK, _LIGHT, strict=True), start=30):
            self.codes[dark] = f'{_ESC}{number}m'
            self.codes[light] = f'{_ESC}{number};01m'
        self.codes.update(darkteal=self.codes['turquoise'], darkyellow=self.codes['brown'])
        self.codes.update(fuscia=self.codes['fuchsia'], white=self.codes['bold'])
        isatty = getattr(sys.stdout, 'isatty', None)
        self.notty = not (isatty and isatty())

    def colorize(self, color_key: str, text: str) -> str:
        return text if self.notty else self.codes[color_key] + text + self.codes['reset']


colorizer = _Colorizer()


def make_colorizer(color: str) -> Callable[[str], str]:
    """A function that colours its text `color` (`green = make_colorizer('darkgreen')`)."""

    def inner(text: str) -> str:
        return colorizer.colorize(color, text)

    return inner


green = make_colorizer('darkgreen')
yellow = make_colorizer('darkyellow')
blue = make_colorizer('darkblue')
red = make_colorizer('darkred')


if TYPE_CHECKING:
    _StreamHandler = logging.StreamHandler[Any]
else:
    _StreamHandler = logging.StreamHandler


class ColorizingStreamHandler(_StreamHandler):
    levels = {logging.WARNING: yellow, logging.ERROR: red, logging.CRITICAL: red}

    def __init__(self, exclude: object = None, *args: object, **kwargs: object) -> None:
        self.exclude = exclude
        super().__init__(*args, **kwargs)

    @property
    def is_tty(self) -> bool:
        isatty = getattr(self.stream, 'isatty', None)
        return bool(isatty and isatty())


def setup_loghandlers(
    level: int | str | None = None,
    date_format: str = DEFAULT_LOGGING_DATE_FORMAT,
    log_format: str = DEFAULT_LOGGING_FORMAT,
    name: str | None = None,
) -> None:
    """Handlers for logger `name` (the worker's: rqfast.worker, or rq.worker while rqfast serves `rq`) unless
    one up its hierarchy has some; then its level, if given."""
    logger = logging.getLogger(logger_name('worker') if name is None else name)
    if not _has_effective_handler(logger):
        formatter = logging.Formatter(fmt=log_format, datefmt=date_format)
        for stream, wanted in ((sys.stdout, lambda r: r.levelno < logging.ERROR), (sys.stderr, None)):
            handler = ColorizingStreamHandler(stream=stream)
            handler.setFormatter(formatter)
            handler.addFilter(wanted or (lambda r: r.levelno >= logging.ERROR))
            logger.addHandler(handler)
    if level is not None:
        logger.setLevel(level if isinstance(level, int) else level.upper())


def _has_effective_handler(logger: logging.Logger) -> bool:
    current: logging.Logger | None = logger
    while current is not None:
        if current.handlers:
            return True
        current = current.parent
    return False


def worker_console(level: str | int, date_format: str, log_format: str) -> None:
    """A worker's console log: a stderr handler on logger `rqfast` (`rq` while rqfast serves `import rq`) the
    first time, and `level` at every call (as RQ's work() applies each call's level)."""
    logger = logging.getLogger(logger_name())
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(log_format, date_format))
        logger.addHandler(handler)
    logger.setLevel(level)
