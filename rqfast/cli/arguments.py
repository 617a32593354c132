"""`rq enqueue`'s argument syntax: text, `:json`, `%python-literal`, `key=...` and `@file` values."""

from __future__ import annotations

from ast import literal_eval
from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import Enum
from json import JSONDecodeError, loads
from typing import Any

import click

from ..dates import now
from ..timeouts import parse_timeout


class ParsingMode(Enum):
    PLAIN_TEXT = 0
    JSON = 1
    LITERAL_EVAL = 2


def _split(argument: str) -> tuple[str | None, ParsingMode, str]:
    """(keyword or None, how to read the value, the value's text)."""
    if argument[:1] == ':':
        return None, ParsingMode.JSON, argument[1:]
    if argument[:1] == '%':
        return None, ParsingMode.LITERAL_EVAL, argument[1:]
    index = argument.find('=')
    if index <= 0:
        return None, ParsingMode.PLAIN_TEXT, argument
    marker = argument[index - 1]
    if marker == ':' and argument.index(':') == index - 1:
        return argument[: index - 1], ParsingMode.JSON, argument[index + 1 :]
    if marker == '%' and argument.index('%') == index - 1:
        return argument[: index - 1], ParsingMode.LITERAL_EVAL, argument[index + 1 :]
    return argument[:index], ParsingMode.PLAIN_TEXT, argument[index + 1 :]


def parse_function_arg(argument: str, arg_pos: int) -> tuple[str | None, Any]:
    """(keyword or None, value) of one command-line argument; click errors for a value that does not parse."""
    keyword, mode, value = _split(argument)
    if value.startswith('@'):
        try:
            with open(value[1:]) as file:
                value = file.read()
        except FileNotFoundError:
            raise click.FileError(value[1:], 'Not found') from None
    what = keyword or f'{arg_pos}. non keyword argument'
    if mode == ParsingMode.JSON:
        try:
            return keyword, loads(value)
        except JSONDecodeError:
            raise click.BadParameter(f'Unable to parse {what} as JSON.') from None
    if mode == ParsingMode.LITERAL_EVAL:
        try:
            return keyword, literal_eval(value)
        except Exception:
            raise click.BadParameter(
                f'Unable to eval {what} as Python object. See https://docs.python.org/3/library/ast.html#ast.literal_eval'
            ) from None
    return keyword, value


def parse_function_args(arguments: Iterable[str]) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for argument in arguments:
        keyword, value = parse_function_arg(argument, len(args) + 1)
        if keyword is None:
            args.append(value)
        elif keyword in kwargs:
            raise click.BadParameter("You can't specify multiple values for the same keyword.")
        else:
            kwargs[keyword] = value
    return args, kwargs


def parse_schedule(schedule_in: str | None, schedule_at: str | None) -> datetime | None:
    """When --schedule-in (from now, '5m') or --schedule-at ('2000-01-23T23:45:01', naive) says to run."""
    if schedule_in is not None:
        if schedule_at is not None:
            raise click.BadArgumentUsage("You can't specify both --schedule-in and --schedule-at")
        return now() + timedelta(seconds=parse_timeout(schedule_in) or 0)
    if schedule_at is not None:
        return datetime.strptime(schedule_at, '%Y-%m-%dT%H:%M:%S')
    return None
