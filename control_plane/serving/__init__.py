"""Serving processes: every process that answers searches from replicas of its own, and how a task
knows they all reflect it (see :mod:`.follower`)."""
