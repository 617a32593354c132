"""The one capped backoff for every loop that retries while Redis is unreachable."""

from __future__ import annotations

from .defaults import MAX_BACKOFF


class Backoff:
    """Delays of first, 2*first, 4*first ... seconds, never more than cap; reset() after a success."""

    def __init__(self, first: float = 1.0, cap: float = MAX_BACKOFF) -> None:
        self.first, self.cap = first, cap
        self.delay = first

    def next(self) -> float:
        """The delay to wait now; the following one doubles, up to the cap."""
        delay = self.delay
        self.delay = min(self.delay * 2, self.cap)
        return delay

    def reset(self) -> None:
        self.delay = self.first
