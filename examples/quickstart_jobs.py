"""Job functions for examples/quickstart.py.

They live in an importable module because RQ (and so rqfast) refuses functions defined in
`__main__`: a worker in another process could not import them.
"""

from __future__ import annotations


def count_words(text: str) -> int:
    """Number of whitespace-separated words in text."""
    return len(text.split())


def add(a: int, b: int) -> int:
    return a + b
