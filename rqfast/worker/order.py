"""Which queue a worker claims from first: RQ's dequeue strategies (default, round robin, random)."""

from __future__ import annotations

import random
from enum import Enum


class DequeueStrategy(str, Enum):
    DEFAULT = 'default'
    ROUND_ROBIN = 'round_robin'
    RANDOM = 'random'


class QueueOrder:
    """The order of the worker's queues for its next claim."""

    def __init__(self, names: list[str], strategy: DequeueStrategy = DequeueStrategy.DEFAULT) -> None:
        self.names = names  # as they stand now: round robin rotates them
        self.strategy = strategy

    def next(self) -> list[str]:
        """The order to claim in: random shuffles a copy, the others take the list as it stands."""
        order = list(self.names)
        if self.strategy == DequeueStrategy.RANDOM:
            random.shuffle(order)
        return order

    def claimed_from(self, queue: str) -> None:
        """Round robin: the queue after the one a job came from goes first next time."""
        if self.strategy == DequeueStrategy.ROUND_ROBIN and queue in self.names:
            index = self.names.index(queue)
            self.names = self.names[index + 1 :] + self.names[: index + 1]
