"""What the status answer keeps in each serving process."""

from __future__ import annotations

import threading

from control_plane.state import MemoryState
from shared.contract import ShardSpec


class ProcessStatus:
    """This process's part: the fallback state while Redis is unreachable, the computing flag, and
    the index the search probe queries (with when it was chosen)."""

    def __init__(self) -> None:
        self.state = MemoryState()
        self.computing = threading.Lock()
        self.probe_target: tuple[float, ShardSpec | None] | None = None
