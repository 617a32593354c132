"""RQ's pub/sub commands (shutdown, kill-horse, stop-job): a listener on a connection and thread of its own.

The listener (CommandListener) is a collaborator the worker holds while it works (BaseWorker._listener,
RQ's pubsub and pubsub_thread): it only receives (rqfast/listener.py does the listening). What a command
does is the worker's (rq_api.py: handle_payload, kill_horse, stop_job), so a subclass that overrides one
of those changes it, as in RQ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from redis import Redis

from ..as_rq import logger_name
from ..listener import ChannelListener

logger = logging.getLogger(logger_name('worker'))


class CommandListener(ChannelListener):
    """The worker's channels, each message handed to `handle`; its log lines name the worker."""

    def __init__(
        self, connection: Redis, channels: list[str], handle: Callable[[dict[str, Any]], None], name: str
    ) -> None:
        super().__init__(connection, channels, handle, name, 'Worker', 'rqfast-commands', logger)
