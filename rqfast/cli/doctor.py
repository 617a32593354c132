"""`rqfast doctor`: how this installation serves RQ code (rqfast's own command; `rq` has none).

Says whether `import rq` gives rqfast in this process (RQFAST_AS_RQ, docs/switching.md) and what turned
it on, which RQ API rqfast serves (RQFAST_COMPAT), whether rq's own distribution is installed beside it,
which `rq` command is first on PATH, and the key prefix. Reads no Redis.
"""

from __future__ import annotations

import shutil
from importlib.metadata import PackageNotFoundError, version

import click

from ..as_rq import ENV_VAR, status
from ..defaults import RQ_KEY_PREFIX, RQFAST_COMPAT

_HOW = {
    'environment': f'{ENV_VAR}=1 at interpreter start (the rqfast-as-rq.pth line)',
    'install_as_rq()': 'rqfast.install_as_rq()',
    'import rqfast': f"{ENV_VAR}=1, at `import rqfast` (no rqfast-as-rq.pth on this interpreter's paths)",
}


def report() -> list[str]:
    """The lines `rqfast doctor` prints."""
    switch = status()
    try:
        rq_installed = f'rq {version("rq")} is installed beside rqfast'
    except PackageNotFoundError:
        rq_installed = 'rq is not installed'
    if switch.on:
        serving = f'import rq: rqfast ({ENV_VAR} on: {_HOW.get(switch.how, switch.how)}); {rq_installed}'
    else:
        off = f"rq's own package ({ENV_VAR} off)" if 'not' not in rq_installed else f'fails ({ENV_VAR} off)'
        serving = f'import rq: {off}; {rq_installed}'
    pth = ', '.join(switch.pth_files) or f"none on this interpreter's paths (set {ENV_VAR}=1: on at `import rqfast`)"
    return [
        f"rqfast {switch.rqfast_version}, serving RQ {switch.served_rq_version}'s API (RQFAST_COMPAT={RQFAST_COMPAT})",
        serving,
        f'rqfast-as-rq.pth: {pth}',
        f'rq command: {_rq_command()}',
        f'RQ_KEY_PREFIX: {RQ_KEY_PREFIX}',
    ]


def _rq_command() -> str:
    path = shutil.which('rq')
    if path is None:
        return 'none on PATH'
    try:
        with open(path, errors='replace') as script:
            text = script.read(4096)
    except OSError:
        return path
    if '_rqfast_as_rq' in text:
        return f"{path} (rqfast's: rqfast's commands while {ENV_VAR} is on, else rq's own)"
    if 'rq.cli' in text:
        return f"{path} (rq's: rqfast's commands while {ENV_VAR} is on, else rq's own)"
    return path


@click.command()
def doctor() -> None:
    """Show how this installation serves RQ code: RQFAST_AS_RQ, the RQ API served, rq beside rqfast."""
    for line in report():
        click.echo(line)
