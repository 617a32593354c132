"""RQ's rq.contrib, under rqfast's name: empty in RQ 2.12 and 3.0 alike (nothing to mirror yet)."""
