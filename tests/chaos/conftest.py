"""Prints the chaos suite's counts at the end of the pytest run (tests/chaos/soak.py collects them)."""

from __future__ import annotations

from typing import Any

import soak


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if soak.REPORTS:
        terminalreporter.section('chaos counts')
        for line in soak.REPORTS:
            terminalreporter.write_line(line)
