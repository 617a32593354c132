"""Waiting in tests for something another process does, with a deadline that fails the test."""

from __future__ import annotations

import time
from typing import Any

import pytest


def wait_for(predicate: Any, timeout: float = 30.0, step: float = 0.05) -> float:
    """Seconds until predicate() held; fails the test after `timeout`."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            pytest.fail(f'condition not met within {timeout} s')
        time.sleep(step)
    return time.monotonic() - start
