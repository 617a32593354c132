"""Redis replies as text: the one decoder every module uses (RQ's `as_text`), and text shortening."""

from __future__ import annotations

from typing import Any

NOT_JSON_SERIALIZABLE = '<not JSON serializable>'


def as_text(value: Any) -> str:
    """bytes decoded as UTF-8, str as it is; ValueError for anything else (as RQ's)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        return value
    raise ValueError(f'Unknown type {type(value)!r}')


def decode_redis_hash(raw: dict[bytes | str, Any], *, decode_values: bool = False) -> dict[str, Any]:
    """A hash with str keys (and str values when decode_values; ValueError for a value that is neither)."""
    if decode_values:
        return {as_text(k): as_text(v) for k, v in raw.items()}
    return {as_text(k): v for k, v in raw.items()}


def truncate_long_string(text: str, max_length: int | None = None) -> str:
    """The first max_length characters plus '...' when longer; all of it when max_length is None."""
    if max_length is None or len(text) <= max_length:
        return text
    return text[:max_length] + '...'


def json_module() -> Any:
    """The json module, imported when first used: a spawned child whose job reads and writes no JSON
    field (the usual no-op: no retries, dependencies, webhooks, progress) never imports it."""
    import json

    return json


def traceback_module() -> Any:
    """The traceback module (linecache, tokenize, textwrap), imported when first used: a spawned child
    whose job succeeds never formats a traceback."""
    import traceback

    return traceback


def safe_json_dumps(value: Any) -> str:
    """JSON text, or NOT_JSON_SERIALIZABLE for a value json cannot write."""
    try:
        return str(json_module().dumps(value))
    except (TypeError, ValueError):
        return NOT_JSON_SERIALIZABLE
