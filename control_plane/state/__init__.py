"""What the API processes of a deployment share: one abstraction, three backends.

* :mod:`.base` - :class:`SharedState` (values, counters, first-writer-wins, locks, rate-limit
  storage, shared answers) and :class:`SharedStateUnavailable`;
* :mod:`.redisstate` - Redis (``REDIS_URL``), :mod:`.statefile` - the machine's state file
  (``serve --workers N`` without Redis), :mod:`.memory` - one process alone;
* on top: :mod:`.epochs` (per-index change epochs), :mod:`.revocations` (revoked keys and
  sessions), :mod:`.limits` (rate limits and quotas).

:func:`open_state` picks the backend from the settings; the app builds it once
(:class:`control_plane.runtime.Runtime`).
"""

from __future__ import annotations

from shared.settings import Settings

from .base import SharedAnswers, SharedState, SharedStateUnavailable
from .epochs import Epochs, uncached_epoch
from .limits import RateLimiter, Reservation
from .memory import MemoryState
from .redisstate import RedisState
from .revocations import Revocations
from .statefile import FileState, StateFile, state_file


def open_state(settings: Settings, *, join_file: bool = False) -> SharedState:
    """Redis when configured; else the machine's state file when several serving processes share it
    (with ``join_file``: whenever a server left one, for tools run beside it); else memory."""
    if settings.redis_url:
        return RedisState(settings.redis_url, settings.redis_prefix)
    if settings.serving_processes > 1 or (join_file and (settings.data_dir / "state.db").exists()):
        return FileState(state_file(settings.data_dir))
    return MemoryState()


__all__ = [
    "Epochs", "FileState", "MemoryState", "RateLimiter", "RedisState", "Reservation", "Revocations", "SharedAnswers",
    "SharedState", "SharedStateUnavailable", "StateFile", "open_state", "state_file", "uncached_epoch",
]
