"""Redis replies as text: the one decoder every module uses (RQ's `as_text`)."""

from __future__ import annotations

from typing import Any


def as_text(value: Any) -> str:
    """bytes decoded as UTF-8; anything else as str()."""
    return value.decode() if isinstance(value, bytes) else str(value)
