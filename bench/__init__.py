"""Throughput benchmark of rqfast against RQ (and BullMQ when installed); run ``python -m bench``."""
