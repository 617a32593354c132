"""`python -m rqfast.cli worker ...`: the `rqfast` command without its console script."""

from __future__ import annotations

from . import main

if __name__ == '__main__':
    main(prog_name='rqfast')
