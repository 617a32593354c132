"""The CLI's one kind of error: a one-line message on stderr and exit status 1, never a traceback."""

from __future__ import annotations

import click


class CliError(click.ClickException):
    """A configuration or connection problem the user can fix; shown as `Error: <message>`."""

    def __init__(self, message: str) -> None:
        super().__init__(' '.join(message.split()))
