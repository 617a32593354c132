"""The `rqfast` command: `rqfast worker` takes `rq worker`'s arguments, so a Procfile changes one word."""

from __future__ import annotations

import click

from ..version import VERSION
from .admin import info, resume, suspend
from .workers import worker


@click.group()
@click.version_option(VERSION, prog_name='rqfast')
def main() -> None:
    """rqfast command line tool (RQ's `rq`, for rqfast)."""


main.add_command(worker)
main.add_command(info)
main.add_command(suspend)
main.add_command(resume)

__all__ = ['main']
