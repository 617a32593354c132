"""`python -m rqfast ...`: the `rqfast` command without its console script (as `python -m rqfast.cli`)."""

from __future__ import annotations

from .cli import main

if __name__ == '__main__':
    main(prog_name='rqfast')
